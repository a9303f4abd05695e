"""Issue 11, DIMM health end to end: the probe keeps what ndctl list -DH, ipmctl show -dimm
and the kernel's NFIT flags say about each module, and `check --root` on the captured worn
machine (tests/probes/machines/unhealthy-dimm) reports CK014 with the severity of the harm."""

from __future__ import annotations

import json

import pytest

from pmem_advisor.errors import EXIT_FINDINGS
from tests.probes.machine_builder import build

PG = ["--db", "postgres", "--version", "16"]


@pytest.fixture(scope="module")
def worn_root(tmp_path_factory) -> str:
    return str(build("unhealthy-dimm", tmp_path_factory.mktemp("m") / "unhealthy-dimm"))


def _ck014(out: str) -> list[dict]:
    return [f for f in json.loads(out)["findings"] if f["rule"] == "CK014"]


def test_dirty_shutdown_under_the_data_fails(run_cli, worn_root):
    code, out, err = run_cli("check", "--root", worn_root, *PG, "--data-dir",
                             "/mnt/pmem0/pgdata", "--no-measure", "--format", "json")
    assert code == EXIT_FINDINGS, err
    found = {(f["severity"], f["subject"], f["message"]) for f in _ck014(out)}
    assert {s for s, subject, _ in found} == {"fail", "warn"}
    assert {subject for _, subject, _ in found} == {"dimm:nmem1"}  # the healthy three: quiet
    fails = [m for s, _, m in found if s == "fail"]
    assert len(fails) == 1 and "last shutdown was dirty" in fails[0] and "7 shutdowns" in fails[0]
    warns = sorted(m for s, _, m in found if s == "warn")
    assert any("non-critical (ndctl)" in m for m in warns), warns
    assert any("10% spare blocks left (its spares alarm is set)" in m for m in warns), warns


def test_a_hardware_fault_is_not_waived_by_allow_unsafe(run_cli, worn_root):
    """--allow-unsafe waives settings the user chose; a module that lost writes is not one."""
    code, out, err = run_cli("check", "--root", worn_root, *PG, "--data-dir",
                             "/mnt/pmem0/pgdata", "--no-measure", "--allow-unsafe",
                             "--format", "json")
    assert code == EXIT_FINDINGS, err
    assert "fail" in {f["severity"] for f in _ck014(out)}


def test_data_off_pmem_only_warns(run_cli, worn_root):
    code, out, err = run_cli("check", "--root", worn_root, *PG, "--data-dir",
                             "/var/lib/postgresql", "--no-measure", "--format", "json")
    assert code in (0, EXIT_FINDINGS), err
    found = _ck014(out)
    assert found and {f["severity"] for f in found} == {"warn"}, found  # nothing of ours lost


def test_probe_keeps_the_health_of_every_module(run_cli, worn_root):
    code, out, err = run_cli("probe", "--root", worn_root, "--json")
    assert code == 0, err
    health = {d["name"]: d["health"] for d in json.loads(out)["pmem"]["dimms"]}
    worn = health["nmem1"]
    assert (worn["state"], worn["source"], worn["spares_percentage"], worn["shutdown_state"],
            worn["shutdown_count"], worn["life_used_percentage"]) == (
        "non-critical", "ndctl", 10, "dirty", 7, 18)
    assert worn["flags"] == ["alarm_spares", "smart_event", "smart_notify"]
    # nmem3's SMART query failed: ipmctl's HealthState stands in, in ndctl's words
    assert (health["nmem3"]["state"], health["nmem3"]["reported"],
            health["nmem3"]["source"]) == ("ok", "Healthy", "ipmctl")
