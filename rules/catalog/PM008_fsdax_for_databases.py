"""PM008 PostgreSQL and MySQL need fsdax namespaces.

Anti-pattern: PMEM only as devdax (a character device, no filesystem), sector (BTT: atomic
sectors, but no DAX) or raw namespaces on a PostgreSQL/MySQL host. devdax gives 5-10% more
bandwidth but suits engines that manage memory themselves (D21 §2.3, best practice 7); these
servers need files on a DAX filesystem (H4, K23 §2.1).

Recommendation: ``ndctl create-namespace --mode=fsdax`` and a DAX-mounted ext4/xfs on it.
"""

from pmem_advisor.engines import api
from pmem_advisor.rules.model import PRIORITY_PLACEMENT, Note, Rule

# Engines that take PMEM as memory (a devdax namespace onlined as kmem): devdax is right for
# them (A21 §3.2 for openGauss MOT, PM085; D21 best practice 7 for Hyrise-like stores, PM088).
MEMORY_ENGINES = ("opengauss_mot", "hyrise")


class FsdaxForDatabases(Rule):
    id = "PM008"
    title = "Database files need an fsdax namespace"
    insights = ("D21-4", "H4")
    paper = "D21 §2.3, best practice 7; K23 §2.1, §3.1"
    priority = PRIORITY_PLACEMENT
    engines = ()

    def condition(self, f):
        ns = f.pmem.get("namespaces") or []
        if f.engine in MEMORY_ENGINES:
            return any(p.namespace_mode == "sector" for p in f.placed)
        return bool(ns) or any(p.namespace_mode == "sector" for p in f.placed)

    def effects(self, f):
        ns = f.pmem.get("namespaces") or []
        modes = sorted({str(n.get("mode")) for n in ns})
        out = []
        if ns and "fsdax" not in modes and f.engine not in MEMORY_ENGINES:
            who = "PostgreSQL and MySQL need" if f.engine in (None, "postgres", "mysql") \
                else f"{_title(f.engine)} needs"
            out.append(Note("warn" if f.engine else "info", "pmem.namespaces",
                            f"no fsdax namespace (modes: {', '.join(modes)}): {who} a DAX "
                            "filesystem for its files; devdax suits engines that manage "
                            "memory themselves",
                            "ndctl create-namespace --mode=fsdax --region=<region> on free "
                            "capacity (reconfiguring an existing namespace with -f -e "
                            f"DESTROYS its data: back it up first), then mkfs.ext4 -b "
                            f"{f.page_size} (the page size) and mount -o dax=always"))
        for p in f.placed:
            if p.namespace_mode == "sector":
                out.append(Note("info", f"{p.role}:{p.path}",
                                f"{p.path} is on a sector (BTT) namespace: torn-sector safe but "
                                "no DAX, so the page cache stays in the path",
                                "use fsdax for data; sector only where sector atomicity is "
                                "required"))
        return out


def _title(engine: str) -> str:
    try:
        return api.get_engine(engine).title
    except Exception:  # noqa: BLE001 - a name the registry does not know: say it as given
        return engine


RULE = FsdaxForDatabases()
