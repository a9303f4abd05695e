"""PM023 Schema advice for PMEM: clustered access, and indexes first when space is short.

Anti-pattern: secondary-index lookups that fetch rows from PMEM, and (when PMEM cannot hold
everything) rows on PMEM while indexes stay on slower media. Secondary lookups lose the page
cache on PMEM; clustered indexes help (K23 §4.3). Indexes on PMEM cost less than rows on PMEM
because their hot inner nodes stay in CPU caches (A21 §4.2).

Recommendation: report notes (no knob): prefer clustered/covering access; with limited PMEM,
put indexes on it first (a PMEM tablespace).
"""

from pmem_advisor.rules.model import PRIORITY_SPEED, Note, Rule


class ClusteredIndexesIndexPlacement(Rule):
    id = "PM023"
    title = "Clustered access on PMEM; indexes first when PMEM is short"
    insights = ("K23-14", "A21-2")
    paper = "K23 §4.3; A21 §4.2"
    priority = PRIORITY_SPEED

    def condition(self, f):
        return f.data is not None and (f.data_on_pmem or bool(f.pmem_mounts))

    def effects(self, f):
        if f.data_on_pmem:
            how = ("CLUSTER tables on their main index and use covering indexes (INCLUDE)"
                   if f.pg else "look rows up by primary key (InnoDB's clustered index) and "
                   "make secondary indexes covering")
            return [Note("info", "schema",
                         "on PMEM, secondary-index lookups lose the OS page cache (K23 §4.3)",
                         how)]
        mp = f.pmem_mounts[0].get("mountpoint")
        how = (f"CREATE TABLESPACE pmem LOCATION '{mp}/ts'; ALTER INDEX ... SET TABLESPACE pmem"
               if f.pg else f"CREATE TABLESPACE ... ADD DATAFILE '{mp}/...' for the hottest tables")
        return [Note("info", "schema",
                     "data is not on PMEM: indexes on PMEM cost less than rows on PMEM "
                     "(A21 §4.2); move the hot indexes there first", how)]


RULE = ClusteredIndexesIndexPlacement()
