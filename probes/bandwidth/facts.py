"""Result math: bandwidth of a measured point and the derived facts the rules read.

Ratios are "the interesting case over the reference" so that < 1 means a penalty:
write/read (writes are slower on PMEM, ~1/3 in `001` §4), random/sequential, grouped/
individual, far/near (~1/5 on a far socket), mixed/(mean of pure read and write).
"""

from __future__ import annotations

import math

from .plan import RATIO_SIZE


def gbps(nbytes: int, seconds: float) -> float:
    """Decimal GB/s, as fio and sysbench report."""
    if seconds <= 0 or not math.isfinite(seconds):
        raise ValueError(f"bad duration {seconds!r}")
    if nbytes < 0:
        raise ValueError(f"bad byte count {nbytes!r}")
    return nbytes / seconds / 1e9


def _ratio(num: float | None, den: float | None) -> float | None:
    if num is None or den is None or den <= 0:
        return None
    return round(num / den, 3)


def _find(points: list[dict], **want) -> dict | None:
    for p in points:
        if all(p.get(k) == v for k, v in want.items()):
            return p
    return None


def _gbps_of(points: list[dict], **want) -> float | None:
    p = _find(points, **want)
    return p["gbps"] if p else None


def best_point(points: list[dict], op: str) -> dict | None:
    """Highest sequential near-node bandwidth for ``op``; ties go to fewer threads, then
    smaller accesses (the cheaper setting that reaches the same speed)."""
    cands = [p for p in points if p["op"] == op and p["pattern"] == "seq"
             and p.get("node", "near") == "near"]
    if not cands:
        return None
    return max(cands, key=lambda p: (p["gbps"], -p["threads"], -p["access_bytes"]))


def derive(points: list[dict]) -> dict:
    """The facts of one path from its measured points (see the module docstring)."""
    best_r, best_w = best_point(points, "read"), best_point(points, "write")
    peak_r = best_r["gbps"] if best_r else None
    peak_w = best_w["gbps"] if best_w else None
    near = [p for p in points if p.get("node", "near") == "near"]
    # the ratios compare like with like at 4 KB on the most threads measured there
    at = [p["threads"] for p in near if p["access_bytes"] == RATIO_SIZE]
    top = max(at) if at else None
    ref = {"access_bytes": RATIO_SIZE, "threads": top}

    def seq(op: str) -> float | None:
        return _gbps_of(near, op=op, pattern="seq", layout="individual", **ref)

    mixed = _gbps_of(near, op="mixed", **ref)
    pure = [v for v in (seq("read"), seq("write")) if v is not None]
    far_read = _gbps_of(points, op="read", pattern="seq", node="far", **ref)
    return {
        "peak_read_gbps": _round(peak_r),
        "peak_write_gbps": _round(peak_w),
        "best_read_threads": best_r["threads"] if best_r else None,
        "best_write_threads": best_w["threads"] if best_w else None,
        "best_write_access_bytes": best_w["access_bytes"] if best_w else None,
        "best_write_layout": best_w.get("layout") if best_w else None,
        "write_read_ratio": _ratio(peak_w, peak_r),
        "random_read_ratio": _ratio(_gbps_of(near, op="read", pattern="rand", **ref),
                                    seq("read")),
        "random_write_ratio": _ratio(_gbps_of(near, op="write", pattern="rand", **ref),
                                     seq("write")),
        "grouped_read_ratio": _ratio(
            _gbps_of(near, op="read", pattern="seq", layout="grouped", **ref), seq("read")),
        "grouped_write_ratio": _ratio(
            _gbps_of(near, op="write", pattern="seq", layout="grouped", **ref), seq("write")),
        "mixed_gbps": _round(mixed),
        "mixed_ratio": _ratio(mixed, sum(pure) / len(pure) if len(pure) == 2 else None),
        "far_near_ratio": _ratio(far_read, seq("read")),
    }


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 3)


def grid(points: list[dict], op: str, layout: str = "individual"
         ) -> tuple[list[int], list[int], list[list[float]]]:
    """threads x access-size matrix of sequential near-node GB/s (NaN where not measured)."""
    sel = [p for p in points if p["op"] == op and p["pattern"] == "seq"
           and p.get("layout", "individual") == layout and p.get("node", "near") == "near"]
    threads = sorted({p["threads"] for p in sel})
    sizes = sorted({p["access_bytes"] for p in sel})
    cell = {(p["threads"], p["access_bytes"]): p["gbps"] for p in sel}
    rows = [[cell.get((t, a), math.nan) for a in sizes] for t in threads]
    return threads, sizes, rows
