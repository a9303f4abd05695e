"""Baseline sizing for ordinary hardware (pgtune / MySQL dedicated-server style).

The PMEM rules of ``rules/catalog`` then adjust these values; the baseline has the lowest
priority so every paper rule wins a conflict with it.
"""

from pmem_advisor.rules.baseline.mysql import MysqlBaseline
from pmem_advisor.rules.baseline.postgres import PostgresBaseline

BASELINES = (PostgresBaseline(), MysqlBaseline())

__all__ = ["BASELINES", "MysqlBaseline", "PostgresBaseline"]
