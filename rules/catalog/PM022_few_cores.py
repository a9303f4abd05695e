"""PM022 Few cores: PMEM gains little.

Anti-pattern: expecting PMEM's hardware numbers on a small CPU budget. In AppDirect there is
no DMA: the CPU does every copy, so with few cores or CPU-bound work the SSD stays competitive
(K23 §7.1 iv, §4.1; H6).

Recommendation: give the server enough physical cores near the PMEM (8 or more) before
expecting a large gain.
"""

from pmem_advisor.rules.model import PRIORITY_SPEED, Note, Rule

FEW = 8  # K23 §4.1: PostgreSQL's 8 threads left PMEM bandwidth unused


class FewCores(Rule):
    id = "PM022"
    title = "Few cores near the PMEM: expect a small gain"
    insights = ("K23-13",)
    paper = "K23 §4.1, §7.1 (iv)"
    priority = PRIORITY_SPEED
    engines = ()

    def _cores(self, f):
        return min(f.physical_cores, f.cores_near(f.pmem_node))

    def condition(self, f):
        has_pmem = f.any_pmem_path or (f.engine is None and f.pmem_mode in ("app_direct",
                                                                          "mixed"))
        return has_pmem and self._cores(f) < FEW

    def effects(self, f):
        n = self._cores(f)
        return [Note("info", "cpu",
                     f"{n} physical core(s) near the PMEM: the CPU does every PMEM copy (no DMA), "
                     "so with few cores PMEM gains little over an SSD (K23 §7.1 iv)",
                     f"give the server {FEW} or more physical cores on the PMEM's socket")]


RULE = FewCores()
