"""PM027 fsdax: 2 MiB alignment, and pre-fault before measuring or serving.

Anti-pattern: a namespace not aligned to 2 MiB (no huge-page mappings), and first-touch page
faults on a fresh fsdax file. D21 measured devdax 5-10% faster than fsdax and traced it to page
faults: fsdax zeroes every page on its first fault; with all pages pre-faulted the two were
identical. A 2 MB fault (ndctl's default alignment) takes ~0.5 ms, so pre-faulting 1 GB takes at
least 0.25 s (D21 §2.3, best practice 7).

Recommendation: namespaces aligned to 2 MiB (``ndctl create-namespace --align=2M``; re-creating
one destroys its data, so only on an empty one); for PostgreSQL keep ``wal_init_zero`` and
``wal_recycle`` on, which write each new WAL segment once (pre-faulting it) and then reuse it;
warm data files after a restart (pg_prewarm) before judging a benchmark.
"""

from pmem_advisor.rules.model import PRIORITY_SPEED, Note, Rule, Set

ALIGN = 2 << 20


class PrefaultAndAlignment(Rule):
    id = "PM027"
    title = "fsdax: 2 MiB-aligned namespaces; pre-fault (keep WAL segments zeroed and recycled)"
    insights = ("D21-5", "H4")
    paper = "D21 §2.3, best practice 7"
    priority = PRIORITY_SPEED
    engines = ()

    def _misaligned(self, f):
        return [n for n in f.pmem.get("namespaces") or []
                if n.get("mode") == "fsdax" and n.get("align") and int(n["align"]) % ALIGN]

    def condition(self, f):
        return bool(self._misaligned(f)) or (f.pg and f.data is not None and f.data.dax_on)

    def effects(self, f):
        out = []
        for n in self._misaligned(f):
            out.append(Note("warn", f"namespace:{n.get('name')}",
                            f"{n.get('name')} is aligned to {int(n['align']) >> 10} KiB, not "
                            "2 MiB: mappings fall back to 4 KiB pages, each faulting separately",
                            "on an empty namespace only (it DESTROYS the data): ndctl "
                            f"create-namespace -f -e {n.get('name')} --mode=fsdax --align=2M"))
        if f.pg and f.data is not None and f.data.dax_on:
            why = ("fsdax zeroes a page on its first fault (D21 §2.3: devdax was 5-10% faster "
                   "until fsdax was pre-faulted)")
            out += [Set("wal_init_zero", "on", f"{why}; zero-filling new WAL segments pre-faults "
                                               "them before commits wait on them"),
                    Set("wal_recycle", "on", f"{why}; recycled segments are already faulted in")]
        return out


RULE = PrefaultAndAlignment()
