"""Knob pairs a server keeps in order, and what it does with a pair out of order.

One list for the two places that need it: the tuner orders its own trials by it (a file it
emits says what runs), and ``check`` (CK002) warns of such a pair in a config others wrote.
"""

from __future__ import annotations

from typing import Any

# (low, high, what the server does when low is above high). MariaDB 10.11's answer was seen
# on the server itself (SET GLOBAL: "Setting innodb_max_io_capacity to 6000").
ORDERED_PAIRS = (
    ("innodb_io_capacity", "innodb_io_capacity_max",
     "MariaDB raises innodb_io_capacity_max to twice innodb_io_capacity, with a warning"),
    ("min_wal_size", "max_wal_size",
     "PostgreSQL recycles WAL segments up to max_wal_size only (xlog.c, XLOGfileslop): a "
     "min_wal_size above it does nothing"),
)


def ordered(params: dict[str, Any], base: dict[str, Any] | None = None) -> dict[str, Any]:
    """``params`` with each pair out of order put in order: a sampled ceiling rises to the
    floor; a ceiling fixed in ``base`` (the rules') brings the sampled floor down to it."""
    out = dict(params)
    merged = {**(base or {}), **out}
    for low, high, _ in ORDERED_PAIRS:
        lo, hi = merged.get(low), merged.get(high)
        if lo is None or hi is None or hi >= lo:
            continue
        if high in out:  # the sampled ceiling rises to the floor
            out[high] = lo
        elif low in out:  # the ceiling is fixed (rules): the floor comes down to it
            out[low] = hi
    return out
