"""PM002 Put the data (or data and log) on PMEM, not only the log.

Anti-pattern: only the WAL/redo log on PMEM. K23 Table 5 (PostgreSQL TPC-C vs both on SSD, 8-128
clients): WAL-only on PMEM +4.5-31%, data on PMEM +36-117%, both x2.05-2.59; MySQL's log on
PMEM <= +5% (K23 §5.2,
§7.1 vii). For OLAP, moving TPC-H from disk to PM gave 16% on average, up to 40% for
read-heavy queries, nothing for compute-heavy ones (P-SE §VI).

Recommendation: data and WAL on PMEM when they fit; else data on PMEM and the log on SSD.
"""

from shlex import quote

from pmem_advisor.rules.model import PRIORITY_PLACEMENT, Note, OsStep, Rule

GAIN = {"oltp": "K23 Table 5: data on PMEM +36-117% tpmC (PostgreSQL, 8-128 clients), "
                "data+WAL x2.05-2.59",
        "olap": "P-SE §VI: disk -> PM gave 16% on average, up to 40% for read-heavy queries, "
                "nothing for compute-heavy ones",
        "mixed": "K23 Table 5: data on PMEM +36-117% tpmC (PostgreSQL)",
        "kv": "K23 §6: AppDirect gave the highest YCSB throughput at every thread count"}


class DataOnPmemNotOnlyLog(Rule):
    id = "PM002"
    title = "Data (or data and log) on PMEM, not only the log"
    insights = ("K23-2", "P-SE-1")
    paper = "K23 §5.2, Table 5, §7.1 (vii); P-SE §VI"
    priority = PRIORITY_PLACEMENT

    def condition(self, f):
        return f.data is not None

    def effects(self, f):
        out = []
        if f.wal_on_pmem and not f.data_on_pmem:
            out.append(Note(
                "warn", f"data:{f.data.path}",
                "only the log is on PMEM, the weakest placement: K23 Table 5 WAL-only +4.5-31% "
                "(PostgreSQL, 8-128 clients), MySQL <= +5%, against +36-117% for data on PMEM",
                "move the data directory to the PMEM mount too"))
        elif not f.data_on_pmem and f.pmem_mounts:
            mp = f.pmem_mounts[0].get("mountpoint")
            out.append(Note("info", f"data:{f.data.path}",
                            f"a PMEM mount exists at {mp} but the data is not on it; "
                            f"{GAIN[f.workload]}",
                            f"place the data directory under {mp}"))
        elif f.data_on_pmem:
            where = "data and WAL" if f.wal_on_pmem else "data (log on other media)"
            out.append(Note("info", f"data:{f.data.path}",
                            f"{where} on PMEM, the placement the papers favour; expected: "
                            f"{GAIN[f.workload]}"))
        if f.wal is not None and f.data is not None and f.wal.path != f.data.path:
            if f.pg:
                out.append(OsStep(f"initdb -D {quote(f.data.path)} --waldir={quote(f.wal.path)}",
                                  "WAL on its own path, chosen at initdb (K23-2 placement)"))
            else:
                out.append(OsStep(
                    f"in my.cnf: innodb_log_group_home_dir = {f.wal.path}  # move ib_logfile* "
                    "there with the server stopped",
                    "redo log on its own path (K23-2 placement)"))
        return out


RULE = DataOnPmemNotOnlyLog()
