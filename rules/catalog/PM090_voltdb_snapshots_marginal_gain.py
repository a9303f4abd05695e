"""PM090 VoltDB on PMEM: snapshot-heavy writes, marginal gains.

Anti-pattern: buying or re-provisioning PMEM for VoltDB expecting the gains other engines got.
K23 §5.1 (TPC-C, single node, VoltDB 11.4): App Direct gave "only marginal improvement over
the Default mode"; VoltDB's TPC-C writes whole snapshots rather than changes, and high
concurrency high volume writing does not scale, particularly for PMEM. K23 ran it with a
1-second flush interval and one snapshot copy continuously overwritten, a deliberate stress
(§3.1), and could not separate VoltDB's log from its checkpointing to place them apart
(§5.2). With few cores the CPU-driven PMEM copies gain even less (§7.1 iv).

Recommendation: if PMEM is there, point voltdbroot, snapshots and the command log at the
fsdax mount (deployment.xml ``<paths>``) and expect little; keep the command log synchronous
(asynchronous logging acknowledges commits before they are on storage); do not schedule
snapshots more often than the recovery point needs: snapshot writes are the load PMEM
handled worst.
"""

from pmem_advisor.rules.catalog.PM080_advice_conditions_differ import has_pmem
from pmem_advisor.rules.model import PRIORITY_SPEED, ConfigLine, Note, OsStep, Rule

SAID = ("K23 §5.1: VoltDB gained only marginally from PMEM (App Direct vs SSD, TPC-C): it "
        "writes whole snapshots, and high-concurrency writing does not scale on PMEM; K23 "
        "used a 1 s flush interval and one continuously overwritten snapshot (§3.1)")


class VoltdbSnapshotsMarginalGain(Rule):
    id = "PM090"
    title = "VoltDB on PMEM: snapshot-heavy writes, marginal gains"
    insights = ("K23-12", "K23-13")
    paper = "K23 §3.1, §5.1, §5.2, §7.1 (iv)"
    priority = PRIORITY_SPEED
    engines = ("voltdb",)

    def condition(self, f):
        return has_pmem(f) and f.pmem_mode != "memory"

    def effects(self, f):
        fsdax = [m.get("mountpoint") for m in f.pmem_mounts
                 if m.get("medium") == "pmem" and m.get("dax") == "always"]
        d = f.data
        on_pmem = d is not None and d.real_pmem
        root = d.path if on_pmem else (f"{fsdax[0].rstrip('/')}/voltdb" if fsdax else None)
        out = [Note("info", "expected gain",
                    SAID + ("; the voltdbroot is on PMEM already" if on_pmem else ""),
                    "expect little from PMEM for VoltDB; measure before moving it")]
        if root is not None:
            log = f.wal.path if f.wal is not None and f.wal.path != (d.path if d else None) \
                else f"{root}/command_log"
            paths = (f"<paths><voltdbroot path=\"{root}\"/><snapshots "
                     f"path=\"{root}/snapshots\"/><commandlog path=\"{log}\"/></paths>")
            out.append(OsStep(
                f"in deployment.xml: {paths}",
                "VoltDB's files on the fsdax mount; K23 could not place its log and "
                "checkpoints apart (§5.2)", key="voltdb-paths",
                config=(ConfigLine("deployment.xml", "", "", paths),)))
        commandlog = "<commandlog enabled=\"true\" synchronous=\"true\"/>"
        out.append(OsStep(
            f"in deployment.xml (where your edition has command logging): {commandlog}",
            "a synchronous command log fsyncs before acknowledging a commit; asynchronous "
            "logging can lose the last frequency window (VoltDB docs: command logging)",
            key="voltdb-commandlog",
            config=(ConfigLine("deployment.xml", "", "", commandlog),)))
        return out

    def check_config(self, f, config, effects, same_value):
        """deployment.xml with an enabled, non-synchronous command log: commits are
        acknowledged before they reach storage; failed without --allow-unsafe."""
        if str(config.get("commandlog.enabled", "")).lower() != "true":
            return []
        sync = str(config.get("commandlog.synchronous", "")).lower()
        if sync == "true":
            return []
        said = (f"the command log is not synchronous (synchronous=\"{sync or 'not set'}\"): "
                "VoltDB acknowledges commits before the log reaches storage and can lose the "
                "last frequency window (VoltDB docs: command logging)")
        if f.allow_unsafe:
            return [self.finding("warn", "commandlog.synchronous",
                                 f"{said}; allowed by --allow-unsafe")]
        return [self.finding("fail", "commandlog.synchronous", f"{said}: a durability risk",
                             "<commandlog enabled=\"true\" synchronous=\"true\"/> (or pass "
                             "--allow-unsafe)")]


RULE = VoltdbSnapshotsMarginalGain()
