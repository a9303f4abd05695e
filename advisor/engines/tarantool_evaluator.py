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

from typing import Any

from pmem_advisor.knobs.emit import Header, Setting
from pmem_advisor.tuner.evaluator import TrialConfig
from pmem_advisor.tuner.managed import GOLDEN, ManagedEvaluator


class TarantoolEvaluator(ManagedEvaluator):
    # Trial configs are never deployed: what may be searched is decided by the tuner's space
    # (risky values only with --allow-unsafe); the tuned file passes the deploy gate.
    allow_unsafe = True

    def _prepare(self, config: TrialConfig) -> Any:
        from pmem_advisor.engines.tarantool_instance import TarantoolInstance
        from pmem_advisor.instances import registry

        key = config.init_key()
        if self._inst is not None and self._inst_key != key:
            self._drop_instance()
        if self._inst is None:
            self._make_scratch()
            self.golden_dir.mkdir(parents=True, exist_ok=True)
            notes: list[str] = []
            registry.reap_stale(notes)  # what a killed earlier run left (as create_instance)
            self._inst = TarantoolInstance(
                self.binary, self.workdir, data_dir=self.data_dir, wal_dir=self.wal_dir,
                init_settings=dict(config.init_params), golden_dir=self.golden_dir)
            self._inst.cgroup = self.cgroup
            self._inst_key = key
        inst = self._inst
        if not inst.has_snapshot(GOLDEN):
            self._phase("initialise and load (once per golden copy)")
            inst.initialize()
            self.initialisations += 1
            # the load need not be durable; its arena must hold the data with room to spare
            arena = max(256 << 20, int((self.workload.data_bytes(self.scale) or 0) * 1.5))
            arena = -(-arena // (64 << 20)) * (64 << 20)
            inst.start(f"box.cfg{{wal_mode = 'write', memtx_memory = {arena}}}\n")
            self.workload.load(inst.conninfo, self.scale)
            inst.snapshot(GOLDEN)  # stops the server cleanly: .snap + .xlog kept
        self._phase("restore")
        inst.restore(GOLDEN)
        return inst

    def bench_params(self, params: dict[str, Any]) -> dict[str, Any]:
        return dict(params)  # Tarantool has no connection limit to raise for the benchmark

    def config_text(self, config: TrialConfig) -> str:
        from pmem_advisor.engines.tarantool_lua import emit_box_cfg

        settings = [Setting(n, v, "trial") for n, v in self.bench_params(config.params).items()]
        header = Header(version=self.version, notes=("pmem-advisor tune: trial config",))
        return emit_box_cfg(settings, header, self.catalog, allow_unsafe=self.allow_unsafe).text
