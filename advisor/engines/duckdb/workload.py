"""DuckDB's workloads on the project's TPC-H-like data (workloads/olap.py).

olap-tpch-lite: the same data and queries as on PostgreSQL and MySQL.
tpch-refresh: TPC-H's refresh functions on that data, as small transactions (below).

The data comes from the same deterministic generator (``generation_sql``: DuckDB takes the
PostgreSQL dialect it writes: ``DATE + integer``, ``MOD``, ``CONCAT``) and the queries are
the same YAML set, so DuckDB holds the same rows PostgreSQL and MySQL do. DuckDB is
embedded: there is no connection string; the functions below run inside the child process
the evaluator starts (advisor/engines/duckdb/child.py), on a database file path.

Throughput metric: queries per second over the measured window (the workload's existing
metric, ``unit = "queries"``); clients are threads, each with its own DuckDB cursor on one
database instance, cycling through the query set as olap.py's clients do.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any

from pmem_advisor.errors import UsageError
from pmem_advisor.workloads.base import percentiles_from_samples
from pmem_advisor.workloads.olap import LAST_DAY, OlapTpchLite, generation_sql, load_queries

META_TABLE = "pmem_advisor_workload"
# Never download or load an extension at run time: the workload needs none.
OPEN_CONFIG = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}


class DuckOlapTpchLite(OlapTpchLite):
    """The same workload, run by the DuckDB evaluator (not through a server connection)."""

    engines = ("duckdb",)
    # DuckDB's compressed columns with the four indexes (DuckDB 2.0.1, 256 KiB blocks): files
    # of 60 MB at scale 10, 115 MB at 20 and ~340 MB at 60, 5.7 MB per unit, against ~15 MB
    # in PostgreSQL. (Scale 1's 11.5 MB is mostly the file's fixed blocks: taken per unit, it
    # made `tune` load half the data it meant to, a file the memory_limit holds whole.)
    bytes_per_scale = 5_700_000

    def load(self, conn: Any, scale: int) -> None:  # pragma: no cover - no server here
        raise UsageError("olap-tpch-lite on DuckDB is loaded by its evaluator "
                         "(pmem-advisor tune duckdb), not through a connection")


def open_db(path: str, statements: list[str] | tuple[str, ...] = ()) -> Any:
    """A DuckDB connection with extension downloads off, then the config's statements."""
    import duckdb

    con = duckdb.connect(path, config=dict(OPEN_CONFIG))
    for stmt in statements:
        con.execute(stmt)
    return con


def load(con: Any, scale: int) -> dict[str, Any]:
    """Generate the data at ``scale`` and checkpoint it into the database file."""
    if scale < 1:
        raise UsageError(f"scale must be at least 1, got {scale}")
    t0 = time.monotonic()
    for stmt in generation_sql("postgres", scale):
        con.execute(stmt)
    con.execute(f"CREATE TABLE {META_TABLE} (workload VARCHAR, scale INTEGER)")
    con.execute(f"INSERT INTO {META_TABLE} VALUES ('olap-tpch-lite', {int(scale)})")
    con.execute("CHECKPOINT")
    rows = con.execute("SELECT count(*) FROM lineitem").fetchone()[0]
    return {"load_s": round(time.monotonic() - t0, 3), "lineitem_rows": int(rows)}


def _loaded_scale(con: Any) -> int:
    row = con.execute(f"SELECT scale FROM {META_TABLE} WHERE workload = 'olap-tpch-lite'"
                      ).fetchone()
    if row is None:
        raise UsageError("the database holds no olap-tpch-lite data (load it first)")
    return int(row[0])


def _drive(con: Any, clients: int, duration: float, warmup: float,
           step: Any) -> tuple[dict[Any, list[float]], float, str | None]:
    """Run ``clients`` threads, each with its own cursor, calling ``step(cursor, client, i)``
    (which returns the sample's key) until the deadline; (ms per key for the steps started
    after the warm-up, the measured window, the first failure)."""
    start = time.monotonic()
    measure_from = start + warmup
    deadline = measure_from + duration
    samples: dict[Any, list[float]] = {}
    failures: list[str] = []
    ended: list[float] = []
    lock = threading.Lock()
    cursors = [con.cursor() for _ in range(clients)]

    def client(idx: int) -> None:
        cur, i = cursors[idx], 0
        try:
            while time.monotonic() < deadline and not failures:
                t0 = time.monotonic()
                key = step(cur, idx, i)
                t1 = time.monotonic()
                i += 1
                if t0 >= measure_from:
                    with lock:
                        samples.setdefault(key, []).append((t1 - t0) * 1000.0)
            with lock:
                ended.append(time.monotonic())
        except Exception as e:  # DuckDB's message (out of memory, a conflict ...), first line
            text = str(e).strip()
            with lock:
                failures.append(text.splitlines()[0] if text else type(e).__name__)

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for c in cursors:
        c.close()
    window = max(ended, default=deadline) - measure_from
    return samples, window, (failures[0] if failures else None)


def run(con: Any, *, clients: int, duration: float, warmup: float) -> dict[str, Any]:
    """Clients cycle through the queries for ``warmup`` + ``duration`` s; queries/s measured."""
    scale = _loaded_scale(con)
    queries = list(load_queries().items())

    def step(cur: Any, idx: int, i: int) -> str:
        name, sql = queries[(idx + i) % len(queries)]
        cur.execute(sql).fetchall()
        return name

    samples, window, failure = _drive(con, clients, duration, warmup, step)
    if failure:
        return {"ok": False, "failure": failure}
    all_ms = [ms for v in samples.values() for ms in v]
    per_query = {name: {"count": len(samples.get(name, [])),
                        **percentiles_from_samples(samples.get(name, []))}
                 for name, _ in queries}
    return {"ok": True, "queries": len(all_ms), "scale": scale,
            "throughput_qps": round(len(all_ms) / window, 3) if window > 0 else 0.0,
            "latency_ms": percentiles_from_samples(all_ms), "duration_s": round(window, 3),
            "per_query_ms": per_query, "warmup_s": warmup, "measure_s": math.ceil(duration)}


# ------------------------------------------------------------------------------ tpch-refresh
ORDERS_PER_TX = 1  # TPC-H's RF1/RF2 insert and delete 0.1% of orders in one go; here one order


class DuckTpchRefresh(DuckOlapTpchLite):
    """TPC-H's refresh functions as small transactions on the olap-tpch-lite data.

    Each transaction is one RF1 step (insert a new order and its 1-7 lines) and one RF2 step
    (delete the oldest remaining order and its lines), committed together: the orders table
    keeps its size, the WAL grows by every commit and DuckDB syncs it at each commit
    (fsync_mode STANDARD) and checkpoints it into the database file every
    checkpoint_threshold (16 MiB by default). Clients take disjoint keys (client c the j-th
    step with j mod clients == c), so they never write the same row. Metric: transactions/s.
    """

    name = "tpch-refresh"
    kind = "oltp"
    unit = "transactions"
    write_heavy = True
    scale_help = "hundredths of the TPC-H scale factor of the data refreshed (as olap-tpch-lite)"


def refresh_sql(new_key: int, old_key: int, n: int = ORDERS_PER_TX) -> list[str]:
    """One refresh transaction's statements: RF1 for orders new_key.., RF2 for old_key.."""
    day = f"MOD(o.n * 37, {LAST_DAY})"
    return [
        "INSERT INTO orders SELECT o.n, MOD(o.n * 13, 1000) + 1, 'O', "
        f"1000 + MOD(o.n * 101, 500000) * 0.01, DATE '1992-01-01' + {day}::INTEGER, "
        f"'3-MEDIUM', 0 FROM range({new_key}, {new_key + n}) o(n)",
        "INSERT INTO lineitem SELECT o.n, l.d, MOD(o.n * 7 + l.d * 13, 2000) + 1, "
        "MOD(o.n * 11 + l.d * 3, 100) + 1, MOD(o.n * 3 + l.d * 7, 50) + 1, "
        "(MOD(o.n * 3 + l.d * 7, 50) + 1) * 950, MOD(o.n + l.d, 11) * 0.01, "
        f"MOD(o.n * 3 + l.d, 9) * 0.01, 'N', 'O', DATE '1992-01-02' + {day}::INTEGER, "
        f"DATE '1992-01-31' + {day}::INTEGER, DATE '1992-02-03' + {day}::INTEGER, 'AIR' "
        f"FROM range({new_key}, {new_key + n}) o(n), range(1, 8) l(d) "
        "WHERE l.d <= 1 + MOD(o.n, 7)",
        f"DELETE FROM lineitem WHERE l_orderkey >= {old_key} AND l_orderkey < {old_key + n}",
        f"DELETE FROM orders WHERE o_orderkey >= {old_key} AND o_orderkey < {old_key + n}",
    ]


def run_refresh(con: Any, *, clients: int, duration: float, warmup: float) -> dict[str, Any]:
    """Clients commit refresh transactions for ``warmup`` + ``duration`` s; transactions/s."""
    scale = _loaded_scale(con)
    low, high = con.execute("SELECT min(o_orderkey), max(o_orderkey) FROM orders").fetchone()

    def step(cur: Any, idx: int, i: int) -> str:
        j = idx + clients * i  # client idx's i-th step: keys no other client touches
        cur.execute("BEGIN TRANSACTION")
        for stmt in refresh_sql(high + 1 + j * ORDERS_PER_TX, low + j * ORDERS_PER_TX):
            cur.execute(stmt)
        cur.execute("COMMIT")
        return "refresh"

    samples, window, failure = _drive(con, clients, duration, warmup, step)
    if failure:
        return {"ok": False, "failure": failure}
    ms = samples.get("refresh", [])
    return {"ok": True, "transactions": len(ms), "scale": scale,
            "throughput_tps": round(len(ms) / window, 3) if window > 0 else 0.0,
            "latency_ms": percentiles_from_samples(ms), "duration_s": round(window, 3),
            "warmup_s": warmup, "measure_s": math.ceil(duration)}


RUNS = {DuckOlapTpchLite.name: run, DuckTpchRefresh.name: run_refresh}
