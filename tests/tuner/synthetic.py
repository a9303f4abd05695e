"""A synthetic Evaluator for fast tuner tests: a seeded function of the params with noise.

Throughput peaks near known values, grows with the rules' settings, and configs with a too
large ``shared_buffers`` fail the way PostgreSQL does (the server's reason is returned).
"""

from __future__ import annotations

import math
import random
import time

from pmem_advisor.errors import EnvironmentProblem
from pmem_advisor.tuner.evaluator import Evaluator, Measurement, TrialConfig
from pmem_advisor.tuner.space import KnobSpec

SPECS = {
    "shared_buffers": KnobSpec("shared_buffers", "size", "restart", 16384, 16, 1073741823),
    "max_wal_size": KnobSpec("max_wal_size", "size", "reload", 1024, 2, 2147483647),
    "checkpoint_completion_target": KnobSpec(
        "checkpoint_completion_target", "real", "reload", 0.9, 0.0, 1.0),
    "wal_compression": KnobSpec("wal_compression", "enum", "reload", "off", values=[
        "off", "pglz", "lz4", "zstd"]),
    "synchronous_commit": KnobSpec("synchronous_commit", "enum", "reload", "on",
                                   values=["on", "off", "local"], safety="durability-risk"),
    "wal_segment_size": KnobSpec("wal_segment_size", "size", "reinit", 16, 1, 1024),
    "data_directory": KnobSpec("data_directory", "path", "restart", None),
}
IMPORTANT = ["shared_buffers", "max_wal_size", "checkpoint_completion_target",
             "wal_compression", "synchronous_commit", "wal_segment_size"]
BOUNDS = {"shared_buffers": (16384, 1_000_000), "max_wal_size": (1024, 65536),
          "wal_segment_size": [16, 64, 256]}
PRIORS = {"shared_buffers": 262144, "max_wal_size": 16384, "wal_segment_size": 64}
RULE_SETTINGS = {"shared_buffers": 262144, "max_wal_size": 16384, "wal_segment_size": 64,
                 "effective_io_concurrency": 200}
FAIL_ABOVE = 700_000  # shared_buffers pages the "machine" cannot map


class SyntheticEvaluator(Evaluator):
    engine, flavour, version = "postgres", "postgresql", "18.6"

    def __init__(self, seed: int = 1, noise: float = 0.02, delay: float = 0.0,
                 interim: int = 0) -> None:
        self._rng = random.Random(seed)
        self.noise, self.delay = noise, delay
        self.interim = interim  # per-second samples each run reports to ``on_interim``
        self.calls: list[TrialConfig] = []
        self.closed = False

    def score(self, config: TrialConfig) -> float:
        p = config.params
        sb = p.get("shared_buffers", 16384)
        wal = p.get("max_wal_size", 1024)
        cct = p.get("checkpoint_completion_target", 0.9)
        tps = 1000.0
        tps *= 1 + 0.8 * math.exp(-((math.log(sb) - math.log(400_000)) ** 2) / 2)
        tps *= 1 + 0.3 * math.exp(-((math.log(wal) - math.log(30_000)) ** 2) / 4)
        tps *= 1 - 0.2 * abs(cct - 0.9)
        tps *= 1.05 if p.get("wal_compression") == "lz4" else 1.0
        tps *= 1.04 if config.init_params.get("wal_segment_size") == 64 else 1.0
        tps *= 1.02 if "effective_io_concurrency" in p else 1.0
        return tps

    def evaluate(self, config: TrialConfig) -> Measurement:
        self.calls.append(config)
        if self.delay:
            time.sleep(self.delay)
        if config.params.get("shared_buffers", 0) > FAIL_ABOVE:
            return Measurement(ok=False, failure="FATAL:  could not map anonymous shared "
                               "memory: Cannot allocate memory")
        tps = self.score(config) * (1 + self._rng.gauss(0, self.noise))
        lat = 1000.0 * 8 / tps
        samples: list[float] = []
        stopped = False
        for _ in range(self.interim):  # a run that reports as it goes, like pgbench --progress
            samples.append(tps * (1 + self._rng.gauss(0, self.noise)))
            if self.on_interim is not None and self.on_interim(list(samples)):
                stopped = True
                break
        if samples:
            tps = sum(samples) / len(samples)
        return Measurement(ok=True, throughput_tps=tps,
                           latency_ms={"p50": lat, "p95": lat * 1.8, "p99": lat * 2.5},
                           duration_s=float(len(samples) or 1), interim_tps=samples,
                           stopped_early=stopped)

    def close(self) -> None:
        self.closed = True


class SwingingHost(SyntheticEvaluator):
    """A shared VM: the host's speed swings by up to 30% from one block of time to the next
    (a run alone, or a side-by-side block, falls in one swing), the configs' own differences
    a few percent. Side by side, every config of a block sees the same speed."""

    def __init__(self, seed: int = 1, swing: float = 0.3, refuse: str | None = None,
                 fail_beside: str | None = None, one_copy: bool = False,
                 fail_setup: str | None = None, **kw) -> None:
        super().__init__(seed=seed, noise=0.002, **kw)
        self.duration, self.warmup = 28, 2
        self.swing, self.refuse, self.fail_beside = swing, refuse, fail_beside
        self.one_copy = one_copy  # side by side only on the same golden copy, as managed.py
        self.fail_setup = fail_setup  # evaluate_in_turns cannot set up the copies
        self._host = random.Random(seed + 100)
        self.blocks: list[tuple[list, int, float]] = []  # configs, turn_s, duration then

    def _speed(self) -> float:
        return 1 + self._host.uniform(-self.swing, self.swing)

    def evaluate(self, config):
        m = super().evaluate(config)
        if m.ok:
            m.throughput_tps *= self._speed()
        return m

    def in_turns_refusal(self, configs, turn_s):
        if self.refuse:
            return self.refuse
        if self.one_copy and len({c.init_key() for c in configs}) > 1:
            return "the configs differ in init-time settings (each needs its own golden copy)"
        return None

    def evaluate_in_turns(self, configs, turn_s):
        if self.fail_setup:
            raise EnvironmentProblem(self.fail_setup)
        self.blocks.append((list(configs), turn_s, self.duration))
        speed, out = self._speed(), []  # one block: one swing for all its configs
        for k, c in enumerate(configs):
            if k == 0 and self.fail_beside:
                out.append(Measurement(ok=False, failure=self.fail_beside))
                continue
            m = SyntheticEvaluator.evaluate(self, c)
            if m.ok:
                m.throughput_tps *= speed
            out.append(m)
        return out
