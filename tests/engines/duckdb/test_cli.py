"""DuckDB through the CLI: recommend on a captured PMEM machine and check a SET file; the
recommended config is opened by DuckDB (validate_by_starting)."""

from __future__ import annotations

import pytest

duckdb = pytest.importorskip("duckdb", reason="PyPI duckdb is not installed (extra: duckdb)")


@pytest.fixture(scope="module")
def duck():
    from pmem_advisor.engines.registry import get_engine

    return get_engine("duckdb")


@pytest.fixture
def machine(tmp_path):
    """A captured two-socket fsdax machine tree and its PMEM mountpoint."""
    from pmem_advisor.probes.profile import probe
    from pmem_advisor.probes.sysaccess import SysAccess
    from tests.probes.machine_builder import build

    root = build("interleaved-2s-fsdax", tmp_path / "machine")
    mounts = probe(SysAccess(str(root)))["mounts"]
    pm = next(m["mountpoint"] for m in mounts if m.get("medium") == "pmem")
    return str(root), pm


def test_recommend_on_captured_pmem_machine(run_cli, machine, duck, tmp_path):
    root, pm = machine
    out = tmp_path / "duckdb.sql"
    code, stdout, err = run_cli("recommend", "duckdb", "--root", root, "--data-dir",
                                f"{pm}/duck", "--workload", "olap", "--memory", "4G",
                                "--out", str(out))
    assert code == 0, err
    text = out.read_text()
    assert text.startswith("-- DuckDB settings")
    parsed = duck.parse_config(text, str(out))
    # 4 physical cores on the PMEM's node in this capture (8 logical): D21 / PM050
    assert parsed["threads"] == "4" and "PM050" in text
    assert duck.memory({"threads": 4, "memory_limit": parsed["memory_limit"]}
                       ).total_bytes <= 0.9 * (4 << 30)
    for rule in ("PM052", "PM053", "PM054"):
        assert rule in stdout + err
    duck.validate_by_starting(text, tmp_path)  # DuckDB opens a database with it


def test_check_config_file(run_cli, tmp_path):
    bad = tmp_path / "bad.sql"
    bad.write_text("SET threads = 2;\nSET memory_limit = 'lots';\n")
    code, _, err = run_cli("check", "--db", "duckdb", "--config", str(bad),
                           "--data-dir", str(tmp_path))
    assert code == 2 and "bad.sql:2: memory_limit" in err and len(err.strip().splitlines()) == 1
    unsafe = tmp_path / "unsafe.sql"
    unsafe.write_text("SET fsync_mode = 'NONE';\n")
    code, stdout, err = run_cli("check", "--db", "duckdb", "--config", str(unsafe),
                                "--data-dir", str(tmp_path))
    assert code == 1 and "PM055" in stdout + err


def test_config_render_and_validate(run_cli, duck, tmp_path):
    out = tmp_path / "duck.sql"
    code, _, err = run_cli("config", "render", "duckdb", "--set", "threads=2",
                           "--set", "memory_limit=512MiB", "--out", str(out))
    assert code == 0, err
    assert duck.parse_config(out.read_text(), str(out)) == {"threads": "2",
                                                           "memory_limit": "512MiB"}
    code, stdout, err = run_cli("config", "validate", str(out), "duckdb")
    assert code == 0 and "started with all 2 settings" in stdout, err
    code, _, err = run_cli("config", "render", "duckdb", "--set", "fsync_mode=NONE")
    assert code == 2 and "risks durability" in err


def test_recommend_on_every_captured_machine(duck, tmp_path):
    """Each capture's recommendation fits --memory 1G worst case; DuckDB opens each distinct
    set of statements."""
    from pmem_advisor.library.recommend import build_recommendation, emit
    from pmem_advisor.probes.profile import probe
    from pmem_advisor.probes.sysaccess import SysAccess
    from tests.probes.machine_builder import build, machine_names

    bodies = {}
    for name in machine_names():
        root = build(name, tmp_path / name)
        mounts = probe(SysAccess(str(root)))["mounts"]
        pm = next((m["mountpoint"] for m in mounts if m.get("medium") in ("pmem", "cxl")), "/")
        rec = build_recommendation("duckdb", root=str(root), data_dir=f"{pm.rstrip('/')}/db",
                                   memory="1G", cpus=2, workload="olap", version=None)
        text = emit(rec)
        parsed = duck.parse_config(text, name)
        assert duck.memory(parsed).total_bytes <= 0.9 * (1 << 30), name
        body = "\n".join(ln for ln in text.splitlines() if ln.startswith("SET "))
        bodies.setdefault(body, text)
    for text in bodies.values():
        duck.validate_by_starting(text, tmp_path)
