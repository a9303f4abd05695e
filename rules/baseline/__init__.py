"""Baseline sizing for ordinary hardware (pgtune / MySQL dedicated-server style).

The PMEM rules of ``rules/catalog`` then adjust these values; the baseline has the lowest
priority so every paper rule wins a conflict with it. Each engine's baseline lives in its
package (advisor/engines/<engine>/baseline.py).
"""

from pmem_advisor.engines.mysql.baseline import MysqlBaseline
from pmem_advisor.engines.postgres.baseline import PostgresBaseline

BASELINES = (PostgresBaseline(), MysqlBaseline())

__all__ = ["BASELINES", "MysqlBaseline", "PostgresBaseline"]
