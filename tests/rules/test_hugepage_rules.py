"""PM040/PM041 on probed machines: the pool the probe saw decides the OS steps."""

from __future__ import annotations

from pmem_advisor.probes.profile import probe
from pmem_advisor.probes.sysaccess import SysAccess
from pmem_advisor.rules import combine
from pmem_advisor.rules.facts import build_facts
from pmem_advisor.rules.model import Note, OsStep, Set
from pmem_advisor.rules.registry import get_rule
from tests.probes.machine_builder import build


def _effects(machine: str, tmp_path, engine: str, data_dir: str, **kw):
    root = build(machine, tmp_path / machine)
    profile = probe(SysAccess(str(root), kind="root"), [data_dir], measure=False)
    facts = build_facts(profile, engine=engine, data_dir=data_dir, **kw)
    rule = get_rule("PM040" if engine == "postgres" else "PM041")
    return rule.evaluate(facts)


def test_existing_free_pool_needs_no_sysctl_step(tmp_path):
    """hugepage-pool: 16384 free 2 MiB pages (32 GiB) cover a 4 GiB budget's buffer pool."""
    eff = _effects("hugepage-pool", tmp_path, "mysql", "/var/lib/mysql", flavour="mariadb",
                   version="10.11", memory_bytes=4 << 30)
    steps = [e.command for e in eff if isinstance(e, OsStep)]
    assert not any("vm.nr_hugepages" in s for s in steps)
    assert any("LimitMEMLOCK=infinity" in s for s in steps)
    pages = next(e for e in eff if isinstance(e, Set) and e.name == "large_pages")
    assert "already has the 1094 free pages" in pages.reason
    assert not any(isinstance(e, Note) for e in eff)  # nothing for `check` to repeat


def test_pool_too_small_is_grown_by_what_is_missing(tmp_path):
    """The whole 126 GiB host: the buffer pool needs more than the 16384 free pages; the step
    sets the total that leaves enough free (total - free + need)."""
    eff = _effects("hugepage-pool", tmp_path, "mysql", "/var/lib/mysql", flavour="mariadb",
                   version="10.11")
    step = next(e.command for e in eff if isinstance(e, OsStep) and "nr_hugepages" in e.command)
    need = int(step.split("vm.nr_hugepages = ")[1].split("\\n")[0])
    assert need > 16384
    assert any(isinstance(e, Set) and e.name == "large_pages" for e in eff)


def test_container_gets_the_host_wide_caveat(tmp_path):
    """container-v2 (memory.max 4 GiB): the sysctl is the host's, said in a note."""
    eff = _effects("container-v2", tmp_path, "postgres", "/var/lib/postgresql/data",
                   memory_bytes=None)
    # 4 GiB budget -> 1 GiB shared_buffers: below PM040's 2 GiB threshold, nothing at all
    assert eff == []
    eff = _effects("container-v2", tmp_path, "mysql", "/var/lib/postgresql/data",
                   flavour="mariadb", version="10.11")
    step = next(e for e in eff if isinstance(e, OsStep) and "nr_hugepages" in e.command)
    assert "host-wide setting, so run this on the host" in step.reason
    assert "(it allows 0 B today, /sys/fs/cgroup/hugetlb.2MB.max)" in step.reason


def test_no_finding_in_check(tmp_path):
    """PM040/PM041 only recommend: `check` of a config leaves huge pages to CK015."""
    root = build("hugepage-pool", tmp_path / "h")
    profile = probe(SysAccess(str(root), kind="root"), ["/var/lib/mysql"], measure=False)
    facts = build_facts(profile, engine="postgres", data_dir="/var/lib/mysql")
    found = combine.check(facts, {"shared_buffers": "1GB"}, rules=(get_rule("PM040"),))
    assert [f for f in found if f.rule == "PM040"] == []
