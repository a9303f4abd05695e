"""Hardware limits every search space obeys, with or without the papers' rules.

A catalog range is what the server accepts, not what this machine can run: PostgreSQL
accepts ``shared_buffers`` up to 8 TB and ``bgwriter_lru_maxpages`` up to 1e9. Any tuner
narrows ranges to the hardware before searching; this is that step, applied alike to
``pmem-advisor tune`` and to the peers of the benchmark (random, TPE, SMAC), so that no arm
spends trials on configs that cannot start. The papers' rules narrow further on top.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from typing import Any

from pmem_advisor.tuner.feasible import DataBound

# Base units a catalog may give a size knob, in bytes (PostgreSQL's 8kB pages, kB, MB).
UNIT_BYTES = {None: 1, "": 1, "B": 1, "kB": 1024, "8kB": 8192, "MB": 1 << 20}
# All shared memory together stays under 3/4 of the budget (pgtune's and MySQL's
# dedicated-server ceiling): the OS, connections and the load generator need the rest.
MEMORY_SHARE = 0.75
# Per-operation buffers (work_mem, sort_buffer_size, ...): sized per client, so the
# ceiling is far lower; 1/64 of the budget still allows 64 concurrent sorts.
PER_OPERATION_SHARE = 1 / 64
PER_OPERATION_DEFAULT_MAX = 64 << 20  # a default below 64 MB marks a per-operation buffer
# WAL/redo may take at most a quarter of the free space of the data path, and 16 GB.
LOG_DISK_SHARE = 0.25
LOG_MAX_BYTES = 16 << 30
LOG_MIN_BYTES = 32 << 20
# A plain count with an enormous legal range (maxpages, capacities): search at most
# two orders of magnitude above its default; a rule bound may open it further.
COUNT_SPAN = 100
REAL_SPAN = 10
# Memory knobs are searched down to 1/16 of their default, not to the server's minimum.
LOW_SPAN = 16


@dataclass(frozen=True)
class Limits:
    """What this machine gives the server: a memory budget and the data path's free space."""

    memory_bytes: int
    disk_free_bytes: int | None = None
    # Room for one global buffer (shared_buffers, the buffer pool) once the production
    # connections' worst-case memory is set aside; None = not known (3/4 of the budget).
    shared_room_bytes: int | None = None
    # What the loaded data demands (tuner/feasible.py): knob -> bound, applied after every
    # other range, the baselines' anchors included.
    data_bounds: dict[str, DataBound] = field(default_factory=dict)
    # The engine's main buffer (its YAML's ``tuning.main_buffer``): a global buffer whatever
    # its default, never a per-operation one (RocksDB's block cache defaults to 8 MB).
    main_buffer: str | None = None

    @classmethod
    def for_host(cls, memory_bytes: int | None = None, data_path: str | None = None,
                 shared_room_bytes: int | None = None,
                 data_bounds: dict[str, DataBound] | None = None) -> Limits:
        mem = memory_bytes or _host_memory()
        free = None
        if data_path:
            probe = data_path
            while probe and not os.path.exists(probe):  # the data dir may not exist yet
                probe = os.path.dirname(probe.rstrip("/")) or "/"
            free = shutil.disk_usage(probe).free
        return cls(mem, free, shared_room_bytes, dict(data_bounds or {}))

    def floor(self, spec: Any) -> float | None:
        """The smallest value worth searching: a memory knob far below its default only
        starves the server (MariaDB refuses a buffer pool under 6 MiB with 16 KB pages)."""
        default = spec.default
        if spec.type != "size" or isinstance(default, bool) or \
                not isinstance(default, (int, float)) or default <= 0:
            return None
        category = getattr(spec, "category", "") or ""
        if category == "memory":
            return float(default) / LOW_SPAN
        per_unit = UNIT_BYTES.get(getattr(spec, "unit", None))
        if category in ("wal", "checkpoint") and per_unit:
            # PostgreSQL refuses min/max_wal_size under two 16 MB segments.
            return max(float(default) / LOW_SPAN, LOG_MIN_BYTES / per_unit)
        return None

    def cap(self, spec: Any) -> float | None:
        """The largest value worth searching for ``spec`` (in its base unit), or None."""
        if spec.type == "size":
            per_unit = UNIT_BYTES.get(getattr(spec, "unit", None))
            if per_unit is None:
                return None
            category = getattr(spec, "category", "") or ""
            if category == "memory":
                default_bytes = (spec.default or 0) * per_unit
                if 0 < default_bytes < PER_OPERATION_DEFAULT_MAX and \
                        spec.name != self.main_buffer:
                    return self.memory_bytes * PER_OPERATION_SHARE / per_unit
                room = self.memory_bytes * MEMORY_SHARE
                if self.shared_room_bytes is not None:
                    room = min(room, max(self.shared_room_bytes, 0))
                return room / per_unit
            if category in ("wal", "checkpoint"):
                room = LOG_MAX_BYTES
                if self.disk_free_bytes is not None:
                    room = min(room, self.disk_free_bytes * LOG_DISK_SHARE)
                return room / per_unit
            return None
        default = spec.default
        if isinstance(default, bool) or not isinstance(default, (int, float)) or default <= 0:
            return None
        if spec.type in ("int", "duration"):
            return float(default * COUNT_SPAN)
        if spec.type == "real":  # costs and multipliers: one order of magnitude is plenty
            return float(default * REAL_SPAN)
        return None


def _host_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 8 << 30
