"""The child process that opens DuckDB for pmem-advisor (``python -m ...duckdb.child``).

DuckDB runs inside the process that opens it, so a crash, an out-of-memory kill or a hang of
DuckDB would take the tuner with it. The evaluator and ``validate_by_starting`` therefore run
every DuckDB open in this child: a JSON request on stdin, one JSON answer on stdout.

Requests: {"op": "validate" | "load" | "run", "db": path, "statements": [SET ...],
"names": [settings to read back], "scale", "clients", "duration", "warmup", "workload"}.
Answers: {"ok": true, ...} or {"ok": false, "stage": ..., "failure": DuckDB's first line}.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from pmem_advisor.engines.duckdb import workload as duckdb_olap


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def handle(req: dict[str, Any]) -> dict[str, Any]:
    try:
        import duckdb
    except ImportError:
        return {"ok": False, "stage": "import", "failure": "the duckdb module is not installed"}
    out: dict[str, Any] = {"ok": True, "version": duckdb.__version__}
    try:
        con = duckdb.connect(req["db"], config=dict(duckdb_olap.OPEN_CONFIG))
    except Exception as e:  # noqa: BLE001 - DuckDB's reason is the answer
        return {"ok": False, "stage": "open", "failure": _first_line(e)}
    try:
        for stmt in req.get("statements") or ():
            try:
                con.execute(stmt)
            except Exception as e:  # noqa: BLE001
                return {"ok": False, "stage": "settings", "statement": stmt,
                        "failure": _first_line(e)}
        op = req["op"]
        if op == "validate":
            con.execute("SELECT 1").fetchall()
            out["settings"] = {n: con.execute("SELECT current_setting(?)", [n]).fetchone()[0]
                               for n in req.get("names") or ()}
        elif op == "load":
            out.update(duckdb_olap.load(con, int(req["scale"])))
        elif op == "run":
            run = duckdb_olap.RUNS.get(req.get("workload") or "olap-tpch-lite")
            if run is None:
                return {"ok": False, "stage": "request",
                        "failure": f"unknown workload {req.get('workload')!r}"}
            out.update(run(con, clients=int(req["clients"]), duration=float(req["duration"]),
                           warmup=float(req["warmup"])))
        else:
            return {"ok": False, "stage": "request", "failure": f"unknown op {op!r}"}
    except Exception as e:  # noqa: BLE001
        return {"ok": False, "stage": req.get("op", "?"), "failure": _first_line(e)}
    finally:
        try:
            con.close()
        except Exception:  # noqa: BLE001, S110 - closing a broken database
            pass
    return out


def main() -> int:
    req = json.loads(sys.stdin.read())
    answer = handle(req)
    sys.stdout.write("\n" + json.dumps(answer, default=str) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
