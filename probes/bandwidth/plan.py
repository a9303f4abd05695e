"""Sweep planning: which points to measure, on how many threads, over how much memory.

Quick mode covers what the rules read (peak read/write, best write threads and access size,
random/sequential, grouped/individual, mixed, near/far); the full sweep adds the whole
threads x access-size grid of `001_121d05151333f933.txt` §3.1/§4.1 for the heat map.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB

# 64 B .. 64 KB in powers of two (the paper's access-size axis).
ALL_ACCESS_SIZES = tuple(64 << i for i in range(11))
QUICK_WRITE_SIZES = (256, 4 * KIB, 64 * KIB)  # Optane line, interleave unit, large copy
QUICK_READ_SIZES = (4 * KIB, 64 * KIB)
RATIO_SIZE = 4 * KIB  # random/sequential, grouped/individual, mixed and far/near compare here

# Working set: several times the LLC so caches cannot hold it, within these bounds.
LLC_FACTOR = 2
MIN_WORKING_SET = 256 * MIB
MAX_WORKING_SET = 4 * GIB
DEFAULT_LLC = 32 * MIB  # when sysfs does not say

QUICK_POINT_SECONDS = 0.15
FULL_POINT_SECONDS = 0.08


@dataclass(frozen=True)
class Point:
    """One bandwidth measurement: ``op`` read|write|mixed, ``pattern`` seq|rand,
    ``layout`` individual (one region per thread) | grouped (threads interleave one
    sequential stream), ``node`` near|far (threads on the path's node or another one)."""

    op: str
    pattern: str
    access_bytes: int
    threads: int
    layout: str = "individual"
    node: str = "near"

    def to_dict(self) -> dict:
        return asdict(self)


def thread_counts(max_threads: int, quick: bool) -> list[int]:
    """1..N: every count up to 8 in the full sweep, then coarser; a few in quick mode."""
    if max_threads < 1:
        raise ValueError("max_threads must be >= 1")
    if quick:
        wanted = {1, 2, 4, 6, 8, max_threads}  # writes peak at 4-6 threads (001 §4.2)
    else:
        wanted = set(range(1, min(max_threads, 8) + 1))
        step = 2
        n = 8
        while n < max_threads:
            n += step
            wanted.add(min(n, max_threads))
            if n >= 16:
                step = 4
            if n >= 32:
                step = 8
        wanted.add(max_threads)
    return sorted(t for t in wanted if 1 <= t <= max_threads)


def plan_sweep(max_threads: int, *, quick: bool, threads: list[int] | None = None,
               far_node: bool = False) -> list[Point]:
    """The ordered list of points; ``threads`` overrides the thread counts."""
    counts = sorted(set(threads)) if threads else thread_counts(max_threads, quick)
    if not counts or counts[0] < 1:
        raise ValueError("thread counts must be >= 1")
    top = counts[-1]
    points: list[Point] = []
    read_sizes = QUICK_READ_SIZES if quick else ALL_ACCESS_SIZES
    write_sizes = QUICK_WRITE_SIZES if quick else ALL_ACCESS_SIZES
    for t in counts:
        points += [Point("read", "seq", a, t) for a in read_sizes]
        points += [Point("write", "seq", a, t) for a in write_sizes]
    if quick:
        points.append(Point("read", "seq", RATIO_SIZE, top, "grouped"))
        points.append(Point("write", "seq", RATIO_SIZE, top, "grouped"))
        points.append(Point("read", "rand", RATIO_SIZE, top))
        points.append(Point("write", "rand", RATIO_SIZE, top))
    else:
        for t in counts:
            points += [Point("read", "seq", a, t, "grouped") for a in ALL_ACCESS_SIZES]
            points += [Point("write", "seq", a, t, "grouped") for a in ALL_ACCESS_SIZES]
        for op in ("read", "write"):
            points += [Point(op, "rand", a, top) for a in ALL_ACCESS_SIZES]
    points.append(Point("mixed", "seq", RATIO_SIZE, top))
    if far_node:
        points.append(Point("read", "seq", RATIO_SIZE, top, node="far"))
        points.append(Point("write", "seq", RATIO_SIZE, top, node="far"))
    return points


def working_set_bytes(llc_bytes: int | None, *, limit: int | None = None) -> int:
    """LLC_FACTOR x the last-level cache, clamped; ``limit`` (device size) caps it.

    Rounded down to 2 MB so every access size and huge pages divide it.
    """
    llc = llc_bytes if llc_bytes and llc_bytes > 0 else DEFAULT_LLC
    ws = min(max(LLC_FACTOR * llc, MIN_WORKING_SET), MAX_WORKING_SET)
    if limit is not None:
        ws = min(ws, limit)
    return ws // (2 * MIB) * (2 * MIB)


def point_seconds(quick: bool) -> float:
    return QUICK_POINT_SECONDS if quick else FULL_POINT_SECONDS
