"""A seeded, noisy stand-in for a database server: tests the harness without any server."""

from __future__ import annotations

import math
import random

from benchmarks.harness.space import Param, SearchSpace
from pmem_advisor.tuner.evaluator import Evaluator, Measurement, TrialConfig

PEAK_X, PEAK_Y = 70, 30


class SyntheticEvaluator(Evaluator):
    """Throughput peaks at x=70, y=30, mode b; ``fsync=False`` (durability off) adds 60%.

    Configs with x above ``fail_above`` "refuse to start" (ok=False, like a server would).
    """

    engine, flavour, version = "postgres", "postgresql", "18"

    def __init__(self, seed: int = 0, noise: float = 0.03, fail_above: int | None = None):
        self.rng = random.Random(seed)
        self.noise, self.fail_above = noise, fail_above
        self.calls: list[TrialConfig] = []
        self.closed = False

    def true_tps(self, config: TrialConfig) -> float:
        p = config.params
        x, y, mode = p.get("x", 10), p.get("y", 10.0), p.get("mode", "a")
        tps = 1000 * (1 + 0.5 * math.exp(-(((x - PEAK_X) / 20) ** 2))
                      + 0.3 * math.exp(-(((y - PEAK_Y) / 15) ** 2)))
        tps *= 1.1 if mode == "b" else 1.0
        return tps * (1.6 if p.get("fsync") is False else 1.0)

    def evaluate(self, config: TrialConfig) -> Measurement:
        self.calls.append(config)
        if self.fail_above is not None and config.params.get("x", 0) > self.fail_above:
            return Measurement(ok=False, failure="FATAL: x is too large for this server")
        tps = self.true_tps(config) * (1 + self.rng.gauss(0, self.noise))
        return Measurement(ok=True, throughput_tps=tps, duration_s=1.0)

    def close(self) -> None:
        self.closed = True


def synthetic_space(with_rules: bool = True) -> SearchSpace:
    return SearchSpace(
        params=(
            Param("x", "int", low=1, high=100),
            Param("y", "float", low=1.0, high=100.0, log=True),
            Param("mode", "categorical", choices=("a", "b")),
        ),
        rules=TrialConfig(params={"x": 60, "y": 25.0}) if with_rules else None,
        rules_note="" if with_rules else "rules: no profile",
        durability_off={"fsync": False},
        source="synthetic",
    )


# ------------------------------------------------------------------ a synthetic dataset
def tuner_space():
    """The synthetic knobs as the tuner's SearchSpace (what the collector samples)."""
    from pmem_advisor.tuner.space import SearchSpace as TunerSpace
    from pmem_advisor.tuner.space import SpaceKnob

    return TunerSpace("postgres", "postgresql", "18", [
        SpaceKnob("x", "int", "restart", 10, low=1, high=100),
        SpaceKnob("y", "real", "restart", 10.0, low=1.0, high=100.0, log=True),
        SpaceKnob("mode", "enum", "restart", "a", choices=["a", "b"]),
    ])


def scenario_dict(name: str = "syn-pg", **over):
    base = {"name": name, "engine": "postgres", "flavour": "postgresql", "version": "18",
            "workload": "pgbench-tpcb", "scale": 1, "clients": 2, "medium": "disk",
            "path": "/var/tmp", "memory_budget": "1G", "duration_s": 1, "warmup_s": 0,
            "why": "a synthetic server for the tests"}
    return {**base, **over}


def collect_context(name: str = "syn-pg", seed: int = 0, noise: float = 0.03,
                    evaluator: Evaluator | None = None, rules_x: int = 60, **over):
    from benchmarks.collect import CollectContext
    from benchmarks.harness.scenario import validate

    scn = validate(scenario_dict(name, **over))
    space = tuner_space()
    from benchmarks.collect import space_record

    prov = {"scenario": scn.to_dict(), "space": space_record(space),
            "rules": {"params": {"x": rules_x, "y": 25.0}, "init_params": {},
                      "important": ["x"], "bounds": {}, "priors": {}}}
    ev = evaluator or SyntheticEvaluator(seed=seed, noise=noise)
    return CollectContext(scn, ev, space, TrialConfig(params={"x": rules_x, "y": 25.0}),
                          {"fsync": False}, provenance=prov)


def make_dataset(directory, name: str = "syn-pg", rows: int = 60, seed: int = 0,
                 force: bool = False, **over):
    """A dataset collected from the synthetic server by the real collector."""
    from benchmarks.collect import collect

    ctx = collect_context(name, seed, **over)
    collect(ctx, directory, max_rows=rows, force=force, log=lambda s: None)
    return ctx
