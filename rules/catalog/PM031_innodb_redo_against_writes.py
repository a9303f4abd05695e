"""PM031 InnoDB writes: redo capacity against the write rate and the pool, searched first.

Anti-pattern: a redo log too small for the write rate. When the redo log fills, InnoDB must
flush the oldest dirty pages of the buffer pool before any more writes (a synchronous
checkpoint); a small log turns every burst into such flushing. K23 ran MySQL with the default
48 MB x 2 redo and saw a checkpoint about every second (K23 §3.1): the InnoDB analogue of
PostgreSQL's WAL finding, where rarer checkpoints gave up to x2.37 (K23 §5.3.7, Table 7,
PM013). The MySQL 5.7 manual (``innodb_log_file_size``) asks for "enough redo log space to
handle more than an hour of write activity"; the 8.0 manual ("Optimizing InnoDB Redo
Logging") says small redo log files "cause many unnecessary disk writes"; the MariaDB
knowledge base (``innodb_log_file_size``): a larger log means less checkpoint flushing and a
longer crash recovery. Measured here (benchmarks/data/mariadb1011-oltp-write-only-disk.jsonl,
MariaDB 10.11, sysbench write-only, 1 GiB budget, disk): the best row had a 576 MiB pool and
a 1.25 GiB redo log, 2,698 tps against the baseline's 384 MiB / 128 MiB at 2,028; by hand,
a 1 GB log was most of a x1.2 edge (shared/design/measured-scenarios.md). Re-collected
here on 2026-11-28 (Sobol rows, every knob varied), a redo log under 200 MB ran a median
1,309 tps on write-only (11 rows) against 3,555 to 3,916 for larger ones, and 1,043 against
1,185 to 1,316 on read-write (10 rows); from 200 MB up the medians are within noise, and a
4.5 GB log was -2.4% (n.s.) against the rules' 512 MB on the real server
(benchmarks/data/checks-2026-11-28/redo-4g5-vs-rules.json). The pool, in the same Sobol
rows: read-write ran 1,119-1,164 tps at 248 MiB, 1,185-1,226 at 320 MiB, 1,316-1,361 at 544
MiB and 1,357-1,378 at 704 MiB (reads over data ten times the default pool: the pool is the
cache; the smallest and the largest pool both had a redo log under 64 MiB, so the pool made
that difference); write-only was as fast at 272 MiB as at 576 MiB
(3,865-3,972 against 3,683-4,034), never faster smaller. The MySQL manual ("Configuring
InnoDB Buffer Pool Size"): the larger the pool, the less disk I/O.

Recommendation (OLTP and mixed workloads, any medium): redo capacity = the buffer pool (the
dedicated-server baseline gives a quarter of it on MariaDB, 100 MB on MySQL 8.0.30+ at 2 GB
or less), searched from the larger of the baseline and half that redo (a smaller log buys a
shorter crash recovery, never speed; the rows above show its cost) to twice the memory budget
(at most 64 GB): the write rate is what a run measures, not a fact we have before it. The
buffer pool is searched from the baseline (or the lower value MEM-FIT fits it to) up to 75%
of the memory budget (innodb_dedicated_server's share; the manual allows up to 80% on a
dedicated server), and no further than the production connections' worst case leaves room
for: MEM-FIT lowers the top (rules/fit.py, ``fit_bounds``; 562 MB of a 1 GiB budget beside 18
connections), so tune's memory gate never has to refuse a trial the bound offered. Both are
bounded here, at a priority above the other speed rules, so the tuner's first trials move
them first. MySQL before 8.0.30 sizes several files (innodb_log_files_in_group): left to the
baseline.
"""

from pmem_advisor.engines.mysql.baseline import buffer_pool, redo
from pmem_advisor.rules.model import PRIORITY_SPEED, Bound, Bytes, Rule, Set

MB, GB = 1 << 20, 1 << 30
REDO_KNOBS = ("innodb_log_file_size", "innodb_redo_log_capacity")
WRITE_WORKLOADS = ("oltp", "mixed")


class InnodbRedoAgainstWrites(Rule):
    id = "PM031"
    title = "InnoDB redo capacity against the write rate and the pool (searched first)"
    insights = ("K23-6",)
    paper = ("K23 §3.1, §5.3.7, Table 7; MySQL 5.7/8.0 manuals (innodb_log_file_size, "
             "Optimizing InnoDB Redo Logging); MariaDB KB innodb_log_file_size")
    # above the other speed rules: the tuner's importance follows rule priority, and these two
    # knobs are the ones the measurements show matter most for InnoDB writes
    priority = PRIORITY_SPEED + 5
    engines = ("mysql",)

    def condition(self, f):
        return f.workload in WRITE_WORKLOADS and _redo_knob(f) is not None

    def effects(self, f):
        name, base = _redo_knob(f)
        pool = buffer_pool(f)
        size = max(base, pool)
        hi = min(max(2 * f.memory_bytes, 4 * base, size), 64 * GB)
        pool_hi = max(pool, f.memory_bytes * 3 // 4)
        out = [
            Set(name, Bytes(size),
                (f"redo as large as the buffer pool ({pool // MB} MB)" if size == pool else
                 f"redo at the dedicated-server baseline's {base // MB} MB, above the "
                 f"{pool // MB} MB buffer pool (never below the baseline)") +
                ": a small log forces "
                "synchronous checkpoints under writes (K23 §3.1 saw one a second with 48 MB x 2; "
                "MySQL manual: room for an hour of writes); longer crash recovery is the cost"),
            Bound(name, Bytes(max(base, size // 2)), Bytes(hi),
                  reason="the write rate decides: searched from half the pool-sized log (a "
                         "smaller one is never faster; under 200 MB ran 1,309 against 3,555+ "
                         "tps here) to twice the memory budget (K23 §3.1, §5.3.7)")]
        if pool_hi > pool:  # above 4 GB the baseline already takes 75%
            # from the baseline up: a smaller pool is never faster (MEM-FIT lowers this floor
            # with the pool when the budget needs it)
            out.append(Bound("innodb_buffer_pool_size", Bytes(pool), Bytes(pool_hi),
                             reason="dedicated server: up to 75% of memory "
                                    "(innodb_dedicated_server; the manual allows 80%), never "
                                    "below the baseline: the pool is InnoDB's only cache under "
                                    "O_DIRECT; the memory gate checks every trial"))
        return out


def _redo_knob(f) -> tuple[str, int] | None:
    """The one knob that sizes the redo log on this server, and its baseline bytes."""
    sizes = redo(f)
    if "innodb_log_files_in_group" in sizes:
        return None  # MySQL before 8.0.30: file count x size, left to the baseline
    for name in REDO_KNOBS:
        value = sizes.get(name)
        if isinstance(value, Bytes):
            return name, value.n
    return None


RULE = InnodbRedoAgainstWrites()
