"""The tuner's evaluator for Tarantool: the shared managed-server evaluator, with a Tarantool
instance, a Lua box.cfg per trial and the YCSB-like Lua client.

Per golden copy: start once, load (``box.space.usertable``, then ``box.snapshot()``), stop
cleanly and keep the .snap + .xlog files; every trial restores them, starts Tarantool with the
trial's box.cfg, runs the workload, stops. A config Tarantool refuses is a failed Measurement
with Tarantool's own reason (``ER_CFG: Incorrect value for option ...``), never an exception.
Trials run with wal_mode = 'fsync' unless the trial sets it (the emitter's safe default):
Tarantool's own default 'write' is a durability risk, and comparing against it would flatter
the defaults.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pmem_advisor.engines.tarantool.instance import TarantoolInstance
from pmem_advisor.engines.tarantool.lua import emit_box_cfg
from pmem_advisor.instances import registry
from pmem_advisor.knobs.emit import Header, Setting
from pmem_advisor.tuner.evaluator import TrialConfig
from pmem_advisor.tuner.managed import ManagedEvaluator


class TarantoolEvaluator(ManagedEvaluator):
    # Trial configs are never deployed: what may be searched is decided by the tuner's space
    # (risky values only with --allow-unsafe); the tuned file passes the deploy gate.
    allow_unsafe = True

    def _new_instance(self, config: TrialConfig, data_dir: Path | None = None,
                      wal_dir: Path | None = None) -> Any:
        registry.reap_stale([])  # what a killed earlier run left (as create_instance does)
        return TarantoolInstance(
            self.binary, self.workdir, data_dir=data_dir or self.data_dir,
            wal_dir=wal_dir or self.wal_dir, init_settings=dict(config.init_params),
            golden_dir=self.golden_dir)

    def _load_config(self) -> str:
        # the load need not be durable; its arena must hold the data with room to spare
        if self.workload.storage_engine == "vinyl":
            # fewer dumps; one checkpoint kept, so the golden copy holds the runs without the
            # load's WAL (as large as the data)
            return ("box.cfg{wal_mode = 'write', vinyl_memory = 268435456, "
                    "checkpoint_count = 1}\n")
        arena = max(256 << 20, int((self.workload.data_bytes(self.scale) or 0) * 1.5))
        arena = -(-arena // (64 << 20)) * (64 << 20)
        return f"box.cfg{{wal_mode = 'write', memtx_memory = {arena}}}\n"

    def bench_params(self, params: dict[str, Any]) -> dict[str, Any]:
        return dict(params)  # Tarantool has no connection limit to raise for the benchmark

    def config_text(self, config: TrialConfig) -> str:
        settings = [Setting(n, v, "trial") for n, v in self.bench_params(config.params).items()]
        header = Header(version=self.version, notes=("pmem-advisor tune: trial config",))
        return emit_box_cfg(settings, header, self.catalog, allow_unsafe=self.allow_unsafe).text
