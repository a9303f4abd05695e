"""Ask the real server one question: is a change to a config faster, slower, or neither?

A surrogate can credit a region that one lucky row made up; before a rule moves on the
surrogate's word, the real server of the scenario measures the config without and with the
change, interleaved and rotated round by round (``validate.measure_interleaved``), and the
tuner's own paired test on the per-round ratios decides (``tuner.stats.compare_paired``).

    python -m benchmarks.ab mariadb1011-oltp-write-only-disk \\
        --set innodb_io_capacity=2000,innodb_io_capacity_max=4000 --rounds 4

The base is today's rules for the scenario (``--base rules``: what ``tune`` would start from)
or the dataset's measured rules config (``--base dataset``); ``--base-set`` changes the base
first (to ask about a config the rules no longer give). Values are read as the server reads
them (its catalog: units such as ``2M`` or ``512MB``, ranges checked). It takes
2 x rounds real runs (about 45 s each on the MariaDB scenarios): run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.harness import dataset, surrogate
from benchmarks.validate import (
    ALPHA,
    Candidate,
    guarded,
    measure_interleaved,
    on_real_server,
    scenario_data,
    scenario_parser,
)
from pmem_advisor.tuner.evaluator import Evaluator, TrialConfig

MIN_ROUNDS = 3  # a paired t-test on two rounds has one degree of freedom: it says nothing


def parse_settings(text: str, catalog: Any) -> dict[str, Any]:
    """``k=v,k=v`` in the server's own terms: each value parsed by the scenario's catalog into
    the unit the evaluator writes (PostgreSQL's ``shared_buffers=512MB`` is 65536 pages), its
    range checked; an unknown knob or a bad value is a usage error before any server starts."""
    from pmem_advisor.errors import UsageError

    out: dict[str, Any] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        name, sep, value = part.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise UsageError(f"not a setting: {part!r} (expected name=value)")
        out[name.strip()] = catalog.get(name.strip()).parse(value.strip())
    return out


def ab(evaluator: Evaluator, base: TrialConfig, change: dict[str, Any], rounds: int, *,
       log: Callable[[str], None] = lambda s: None) -> dict[str, Any]:
    """The base and the base with ``change``, interleaved over ``rounds``; the changed config
    against the base, paired by round."""
    from pmem_advisor.tuner.stats import compare_paired

    changed = TrialConfig(params={**base.params, **change}, init_params=dict(base.init_params))
    cands = [Candidate(base, ["base"]), Candidate(changed, ["changed"])]
    measure_interleaved(evaluator, cands, rounds, log=log)
    verdict = compare_paired(cands[1].runs, cands[0].runs, alpha=ALPHA)
    return {"change": change, "rounds": rounds, "base": base.params,
            "runs": {c.arms[0]: c.runs for c in cands},
            "failures": {c.arms[0]: c.failures for c in cands}, "verdict": verdict}


def summary(result: dict[str, Any]) -> str:
    v = result["verdict"]
    change = ", ".join(f"{k}={val}" for k, val in result["change"].items())
    if v.get("gain_pct") is None or v.get("ci_low_pct") is None:
        return f"{change}: too few paired rounds to compare ({v.get('decision')})"
    said = {"better": "faster", "worse": "slower"}.get(v["decision"], "no significant difference")
    return (f"{change}: {v['gain_pct']:+.1f}% [{v['ci_low_pct']:+.1f}%, {v['ci_high_pct']:+.1f}%]"
            f", p {v['p_value']:.3g} over {result['rounds']} interleaved rounds: {said}")


def scenario_catalog(data: surrogate.ScenarioData) -> Any:
    """The knob catalog of the dataset's server (engine, flavour, version of its scenario)."""
    from pmem_advisor.errors import UsageError
    from pmem_advisor.knobs.catalog import load_catalog

    scn = data.provenance.get("scenario") or {}
    if not scn.get("engine"):
        raise UsageError(f"{data.name}: the dataset's provenance names no server")
    return load_catalog(scn["engine"], scn.get("flavour"), scn.get("version"))


def base_config(data: surrogate.ScenarioData, which: str) -> TrialConfig:
    from pmem_advisor.errors import UsageError

    from .run import current_rules

    if which == "dataset":
        config = data.fixed_config("rules")
        if config is None:
            raise UsageError(f"{data.name}: the dataset has no measured rules config")
        return config
    now = current_rules(data.provenance.get("scenario") or {})
    if now is None:
        raise UsageError(f"{data.name}: today's rules cannot be computed here (its path or "
                         "server catalog is missing); --base dataset uses the measured ones")
    return TrialConfig(params=dict(now["params"]), init_params=dict(now["init_params"]))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = scenario_parser("python -m benchmarks.ab", __doc__)
    p.add_argument("--set", dest="change", required=True, metavar="K=V[,K=V]",
                   help="the change to measure")
    p.add_argument("--base", choices=("rules", "dataset"), default="rules")
    p.add_argument("--base-set", default="", metavar="K=V[,K=V]")
    p.add_argument("--rounds", type=int, default=4)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    return guarded(lambda: _main(args))


def _main(args: argparse.Namespace) -> int:
    from pmem_advisor.errors import UsageError

    if args.rounds < MIN_ROUNDS:
        raise UsageError(f"--rounds must be >= {MIN_ROUNDS} (a paired test on fewer rounds "
                         "says nothing on a noisy machine)")
    data = scenario_data(args)
    catalog = scenario_catalog(data)
    change = parse_settings(args.change, catalog)
    base_change = parse_settings(args.base_set, catalog)
    base = base_config(data, args.base)
    base = TrialConfig(params={**base.params, **base_change},
                       init_params=dict(base.init_params))
    out = on_real_server(args.scenario,
                         lambda ev, log: ab(ev, base, change, args.rounds, log=log))
    for arm, runs in out["runs"].items():
        print(f"{arm}: " + ", ".join("failed" if r is None else f"{r:,.0f}" for r in runs))
    print(summary(out))
    if args.out:
        dataset.write_json(Path(args.out), out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
