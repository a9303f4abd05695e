"""PM071 Tarantool: wal_mode = 'fsync', the only durable mode (and cheap on a PMEM WAL).

Anti-pattern: relying on Tarantool's default wal_mode 'write' (2.6 manual: fibers wait for the
write(2) to the WAL, no fsync(2)): commits still in the page cache are lost on power loss or a
kernel crash; 'none' keeps no WAL at all. I17's baseline was "WAL-fsync" (I17 §5.2, Table 4):
the paper's DRAM numbers are for the durable mode, and its gap to WAL-nowrite is the log's I/O,
which a WAL on PMEM (PM070) makes small, so fsync costs little there.

Recommendation: wal_mode = 'fsync'; check warns on a file that leaves it out, fails one that
sets write/none or any other value the catalog classes as a durability risk (force_recovery =
true); the emitter never writes them without --allow-unsafe.
"""

from pmem_advisor.rules.model import PRIORITY_SAFETY, Rule, Set

RISKY = {"write": "fail", "none": "fail"}


class TarantoolWalModeFsync(Rule):
    id = "PM071"
    title = "Tarantool: wal_mode = fsync (durable commits)"
    insights = ("I17-2",)
    paper = "I17 §5.2, Table 4; Tarantool 2.6 manual (wal_mode)"
    priority = PRIORITY_SAFETY
    engines = ("tarantool",)

    def condition(self, f):
        return True

    def effects(self, f):
        if f.wal is not None and f.wal.emulated_pmem:
            where = "on tmpfs (standing in for PMEM here) fsync costs nothing"
        elif f.wal_on_pmem:
            where = ("on PMEM the fsync flushes what already sits in persistent memory, so it "
                     "costs little (I17's WAL-fsync vs WAL-nowrite gap is the log's I/O)")
        else:
            where = "the only mode that survives a power loss"
        return [Set("wal_mode", "fsync",
                    f"durable commits: Tarantool's default 'write' has no fsync(2); {where}")]

    def check_config(self, facts, config, effects, same_value):
        return self._wal_mode(config) + self._other_risks(facts, config)

    def _other_risks(self, facts, config):
        """Other values the catalog classes as durability risks (force_recovery = true)."""
        from pmem_advisor.engines.tarantool.catalog import load
        from pmem_advisor.engines.tarantool.lua import lua_value
        from pmem_advisor.knobs.catalog import risky_settings

        catalog = load(facts.version)
        others = {n: v for n, v in config.items() if n != "wal_mode"}
        return [self.finding("fail", name, f"{name} = {config[name]}: {knob.safety_reason}",
                             f"set {name} = {lua_value(knob, knob.default)}")
                for name, knob in risky_settings(catalog.find, others)]

    def _wal_mode(self, config):
        have = config.get("wal_mode")
        if have is None:
            return [self.finding(
                "warn", "wal_mode",
                "wal_mode is not set: Tarantool's default 'write' has no fsync(2) and loses "
                "committed transactions on power loss or a kernel crash",
                "set wal_mode = 'fsync'")]
        mode = str(have).strip().strip("'\"").lower()
        if mode in RISKY:
            return [self.finding(
                RISKY[mode], "wal_mode",
                f"wal_mode = '{mode}' is a durability risk: "
                + ("no WAL at all, everything since the last snapshot is lost on a crash"
                   if mode == "none" else "write(2) without fsync(2) loses committed "
                   "transactions on power loss"),
                "set wal_mode = 'fsync' (or pass --allow-unsafe knowingly)")]
        return []


RULE = TarantoolWalModeFsync()
