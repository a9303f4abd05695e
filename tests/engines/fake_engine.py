"""A test-only engine (data in fake_engine_data/): everything a new engine writes, in one small
file, and nothing in the CLI. Its config is ``name = value  # reason`` lines; its "server" is
a PATH lookup of ``fakedb-server`` that ``validate_by_starting`` runs with the config file;
its evaluator measures a deterministic function of the knobs (no process)."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pmem_advisor.engines.base import Engine
from pmem_advisor.errors import UsageError
from pmem_advisor.knobs.emit import (
    EmittedConfig,
    Header,
    checked,
    header_lines,
    one_line,
    resolve_settings,
)
from pmem_advisor.rules.memory import MemoryEstimate, MemoryPart
from pmem_advisor.rules.model import PRIORITY_BASELINE, Bytes, Rule, Set
from pmem_advisor.tuner.evaluator import Evaluator, Measurement, TrialConfig
from pmem_advisor.workloads.base import Workload


class FakeBaseline(Rule):
    id = "FAKE-BASE"
    title = "FakeDB sizing"
    paper = "test"
    priority = PRIORITY_BASELINE
    engines = ("fake",)

    def condition(self, f) -> bool:
        return True

    def effects(self, f):
        return [Set("cache_size", Bytes(f.memory_bytes // 4), "a quarter of the budget"),
                Set("threads", max(1, min(f.cpus, 64)), "one per CPU")]


class FakeKv(Workload):
    name = "fake-kv"
    engines = ("fake",)
    kind = "kv"
    default_scale = 1
    bytes_per_scale = 1 << 20

    def load(self, conn, scale):  # pragma: no cover - the fake evaluator never loads
        pass

    def _run_once(self, conn, *, clients, duration, warmup):  # pragma: no cover
        raise NotImplementedError


class FakeEvaluator(Evaluator):
    engine, flavour, version = "fake", "fakedb", "1.0.0"
    closed = False

    def evaluate(self, config: TrialConfig) -> Measurement:
        threads = int(config.params.get("threads", 2))
        cache = int(config.params.get("cache_size", 64 << 20))
        tps = 1000.0 + 10 * min(threads, 8) + cache / (1 << 24)
        return Measurement(ok=True, throughput_tps=tps,
                           latency_ms={"p50": 1.0, "p95": 2.0, "p99": 3.0}, duration_s=0.01)

    def close(self) -> None:
        FakeEvaluator.closed = True


class FakeEngine(Engine):
    def emit(self, settings, header=None, *, catalog=None, fragment=True) -> EmittedConfig:
        header = header or Header()
        resolved, warnings = resolve_settings(settings, catalog)
        lines = header_lines(header, catalog, "fakedb.ini", comment=";")
        lines += [f"{k.name} = {k.render(v)}  ; {one_line(why) or 'requested'}"
                  for k, v, why in resolved]
        return EmittedConfig(checked("\n".join(lines) + "\n"), warnings, resolved)

    def parse_config(self, text: str, origin: str) -> dict[str, str]:
        out = {}
        for n, line in enumerate(text.splitlines(), 1):
            line = line.split(";", 1)[0].strip()
            if not line:
                continue
            name, eq, value = line.partition("=")
            if not eq:
                raise UsageError(f"{origin}:{n}: expected name = value")
            out[name.strip()] = value.strip()
        return out

    def baseline_rules(self):
        return (FakeBaseline(),)

    def memory(self, settings: Mapping[str, Any], *, flavour, version, catalog,
               host_memory_bytes=None):
        raw = settings.get("cache_size", 64 << 20)
        cache = raw.n if isinstance(raw, Bytes) else int(catalog.get("cache_size").coerce(raw))
        part = MemoryPart("cache_size", cache, False, "the shared block cache")
        return MemoryEstimate("fake", cache, 0, 1, [part], 0, ("the cache is all",))

    def binary_version(self, path: Path | None) -> str:
        return "1.0.0"

    def validate_by_starting(self, config_text: str, workdir, *, binary=None) -> None:
        binary = binary or self.find_binary()
        conf = Path(workdir) / "fakedb.ini"
        conf.write_text(config_text)
        proc = subprocess.run([str(binary.path), str(conf)], capture_output=True, text=True,
                              timeout=30)
        if proc.returncode != 0:
            raise UsageError(f"FakeDB refused the config: {proc.stderr.strip()}")

    def workload(self, name: str, **options: Any) -> Any:
        if name != "fake-kv":
            raise UsageError(f"workload {name} does not run on fake (fake-kv does)")
        return FakeKv(**options)

    def evaluator(self, request) -> Evaluator:
        return FakeEvaluator()
