"""A tune worker on the synthetic evaluator, run as a subprocess by the shared-study test.

python -m tests.tuner.worker STORAGE_URL STUDY TRIALS DELAY
"""

from __future__ import annotations

import sys

from pmem_advisor.tuner.samplers import make_sampler
from pmem_advisor.tuner.storage import open_storage
from pmem_advisor.tuner.study import open_study
from pmem_advisor.tuner.tuner import TuneOptions, Tuner
from tests.tuner.conftest import META, make_space
from tests.tuner.synthetic import SyntheticEvaluator


def main(url: str, name: str, trials: int, delay: float) -> None:
    storage = open_storage(url, heartbeat_s=1)
    study, space = open_study(storage, name, META, make_space(), resume=True,
                              sampler=make_sampler("tpe", seed=None, n_trials=trials))
    with SyntheticEvaluator(delay=delay) as ev:
        Tuner(study, space, ev, TuneOptions(trials=trials, repeats=0)).run()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
