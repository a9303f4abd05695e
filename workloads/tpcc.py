"""TPC-C-like OLTP (our sysbench script lua/tpcc.lua): the five transactions, standard mix.

Scale = warehouses. ``density`` (0 < d <= 1, default 1) shrinks the per-warehouse
cardinalities (items, customers and initial orders per district) for tiny test runs; at 1 they
are TPC-C's (100000 items, 3000 customers per district), ~100 MB per warehouse.
"""

from __future__ import annotations

import os

from pmem_advisor.errors import UsageError
from pmem_advisor.workloads.sysbench import SysbenchWorkload

TPCC_ITEMS = 100_000
TPCC_CUSTOMERS = 3_000
WAREHOUSE_BYTES = 100 << 20  # ~100 MB per warehouse at density 1 (stock and customer rows)


class Tpcc(SysbenchWorkload):
    name = "tpcc"
    script = "tpcc"
    own_script = True
    kind = "oltp"
    option_names = data_option_names = ("density",)
    scale_help = "warehouses (~100 MB each at density 1)"

    def _density(self) -> float:
        density = float(self.options.get("density", 1.0))
        if not 0 < density <= 1:
            raise UsageError(f"tpcc density must be in (0, 1], got {density}")
        return density

    @property
    def bytes_per_scale(self) -> int:  # type: ignore[override]
        return int(WAREHOUSE_BYTES * self._density())  # one warehouse, at this density

    def script_args(self, scale: int) -> list[str]:
        d = self._density()
        items = max(100, int(TPCC_ITEMS * d))
        customers = max(30, int(TPCC_CUSTOMERS * d))
        return [f"--warehouses={scale}", f"--items={items}", f"--customers={customers}"]

    def load_steps(self, scale: int) -> list[tuple[str, int]]:
        # schema and items first (one thread), then warehouses in parallel
        return [("prepare", 1), ("load", min(scale, os.cpu_count() or 1))]
