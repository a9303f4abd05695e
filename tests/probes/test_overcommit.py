"""The overcommit probe (probes/overcommit.py) on a tree standing in for /proc."""

from __future__ import annotations

import os

from pmem_advisor.probes.overcommit import commit_limit, read_overcommit
from pmem_advisor.probes.reading import ProbeContext
from pmem_advisor.probes.sysaccess import SysAccess


def _tree(tmp_path, files: dict[str, str]) -> ProbeContext:
    for path, text in files.items():
        full = tmp_path / path.lstrip("/")
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text(text)
    return ProbeContext(SysAccess(str(tmp_path), kind="root"))


def test_the_kernels_own_limit_is_read_when_shown(tmp_path):
    ctx = _tree(tmp_path, {"/proc/sys/vm/overcommit_memory": "2\n",
                           "/proc/sys/vm/overcommit_ratio": "80\n",
                           "/proc/meminfo": "MemTotal: 1000 kB\nSwapTotal: 0 kB\n"
                                            "CommitLimit: 800 kB\nCommitted_AS: 120 kB\n"})
    oc = read_overcommit(ctx)
    assert (oc["memory"], oc["ratio"]) == (2, 80)
    assert (oc["commit_limit_bytes"], oc["committed_bytes"]) == (800 * 1024, 120 * 1024)


def test_a_masked_proc_sys_gives_no_mode_and_no_warning(tmp_path):
    ctx = _tree(tmp_path, {"/proc/meminfo": "MemTotal: 1000 kB\n"})
    oc = read_overcommit(ctx)
    assert oc["memory"] is None and oc["ratio"] is None and ctx.warnings == []


def test_an_unreadable_file_is_a_warning_not_a_crash(tmp_path):
    ctx = _tree(tmp_path, {"/proc/sys/vm/overcommit_memory": "7\n"})
    assert read_overcommit(ctx)["memory"] is None
    assert any("not a mode" in w for w in ctx.warnings)
    if os.geteuid() != 0:  # root reads a mode-000 file anyway
        path = tmp_path / "proc/sys/vm/overcommit_memory"
        path.chmod(0)
        ctx2 = ProbeContext(SysAccess(str(tmp_path), kind="root"))
        assert read_overcommit(ctx2)["memory"] is None


def test_the_formula_matches_vm_commit_limit():
    # ratio percent of RAM less the huge page pools, plus swap; overcommit_kbytes wins
    assert commit_limit(100 << 30, 20 << 30, 4 << 30, 50, 0) == (40 << 30) + (4 << 30)
    assert commit_limit(100 << 30, 0, 0, 50, 1024) == 1 << 20
    # this VM's captured tree: 50% of MemTotal 24683656 kB, no swap, no pool -> CommitLimit
    assert commit_limit(24683656 * 1024, 0, 0, 50, 0) // 1024 == 12341828
