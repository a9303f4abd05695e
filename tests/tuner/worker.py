"""A tune worker on the synthetic evaluator, run as a subprocess by the shared-study tests.

python -m tests.tuner.worker STORAGE_URL STUDY TRIALS DELAY [--new] [--go FILE]

``--new`` opens the study as `tune` without ``--resume`` does (the study may be created by a
worker starting at the same moment); ``--go FILE`` waits until FILE exists, so that two
workers start together. Exit codes as the CLI's: 0, 2 (study exists), 130, 143.
"""

from __future__ import annotations

import os
import sys
import time

from pmem_advisor.errors import AdvisorError
from pmem_advisor.tuner.samplers import make_sampler
from pmem_advisor.tuner.session import Terminated, _SigTerm, run_recorded
from pmem_advisor.tuner.storage import open_storage
from pmem_advisor.tuner.study import open_study
from pmem_advisor.tuner.tuner import TuneOptions, Tuner
from tests.tuner.conftest import META, make_space
from tests.tuner.synthetic import SyntheticEvaluator


def main(url: str, name: str, trials: int, delay: float, new: bool = False,
         go: str | None = None) -> int:
    storage = open_storage(url, heartbeat_s=1)
    if go:
        deadline = time.monotonic() + 60
        while not os.path.exists(go) and time.monotonic() < deadline:
            time.sleep(0.01)
    try:
        study, space = open_study(storage, name, META, make_space(), resume=not new,
                                  sampler=make_sampler("tpe", seed=None, n_trials=trials))
    except AdvisorError as e:
        sys.stderr.write(f"error: {e}\n")
        return e.exit_code
    ev = SyntheticEvaluator(delay=delay)
    tuner = Tuner(study, space, ev, TuneOptions(trials=trials, repeats=0))
    failure = run_recorded(tuner, study, cleanup=ev.close)
    if isinstance(failure, _SigTerm):
        return Terminated.exit_code
    if isinstance(failure, KeyboardInterrupt):
        return 130
    if failure is not None:
        raise failure
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    new = "--new" in args
    go = args[args.index("--go") + 1] if "--go" in args else None
    pos = [a for i, a in enumerate(args) if not a.startswith("--") and
           (i == 0 or args[i - 1] != "--go")]
    sys.exit(main(pos[0], pos[1], int(pos[2]), float(pos[3]), new=new, go=go))
