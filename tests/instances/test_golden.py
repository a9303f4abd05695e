"""Golden copies shared between instances with the same init-time settings, and TCP mode."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from types import SimpleNamespace

import psycopg
import pymysql
import pytest

from pmem_advisor.errors import UsageError
from pmem_advisor.instances import create_instance
from tests.instances.conftest import find_server

pytestmark = pytest.mark.server


@pytest.mark.parametrize("server", ["pg-debian", "mariadb"])
def test_golden_cache_is_shared_by_init_settings(server, shm_dir, tmp_path_factory):
    binary = find_server(server)
    cache = shm_dir / f"golden-{server}"
    init = {"wal_segment_size": "8MB"} if binary.engine == "postgres" else {
        "innodb_page_size": "16k"}
    with create_instance(binary, wal_dir=shm_dir / f"{server}-a", init_settings=init,
                         golden_dir=cache) as a:
        a.initialize()
        a.start()
        a.query("CREATE TABLE g (id int PRIMARY KEY)")
        a.query("INSERT INTO g VALUES (1), (2), (3)")
        a.snapshot("loaded")
        key = a.golden_key
    assert (cache / f"{key}-loaded" / "meta.json").is_file()  # the cache outlives instances

    # Same init settings, other directories: restore replaces initialisation.
    with create_instance(binary, wal_dir=shm_dir / f"{server}-b", init_settings=init,
                         golden_dir=cache) as b:
        assert b.golden_key == key and b.has_snapshot("loaded")
        b.restore("loaded")
        b.start()
        assert b.query("SELECT count(*) FROM g") == [(3,)]
        if binary.engine == "postgres":
            assert b.settings()["wal_segment_size"] == str(8 * 1024**2)

    # Other init settings: another key, no snapshot to restore.
    other = {"wal_segment_size": "16MB"} if binary.engine == "postgres" else {
        "innodb_page_size": "8k"}
    with create_instance(binary, init_settings=other, golden_dir=cache) as c:
        assert c.golden_key != key and not c.has_snapshot("loaded")
        with pytest.raises(UsageError, match="no snapshot"):
            c.restore("loaded")


@pytest.mark.parametrize("server", ["pg-debian", "mariadb"])
def test_tcp_only_on_loopback_with_a_password(server):
    binary = find_server(server)
    with create_instance(binary, tcp=True) as inst:
        inst.initialize()
        inst.start()
        info = inst.conninfo
        assert info.host == "127.0.0.1" and info.port and info.password
        if binary.engine == "postgres":
            assert inst.settings()["listen_addresses"] == "127.0.0.1"
            with psycopg.connect(host=info.host, port=info.port, user=info.user,
                                 password=info.password, dbname=info.dbname) as conn:
                assert conn.execute("SELECT 1").fetchone() == (1,)
            with pytest.raises(psycopg.OperationalError):
                psycopg.connect(host=info.host, port=info.port, user=info.user,
                                password="wrong", dbname=info.dbname).close()
        else:
            assert inst.settings()["bind_address"] == "127.0.0.1"
            conn = pymysql.connect(host=info.host, port=info.port, user=info.user,
                                   password=info.password, database=info.dbname)
            with conn.cursor() as cur:
                cur.execute("SELECT 1")
                assert cur.fetchone() == (1,)
            conn.close()


def test_bad_arguments_are_usage_errors():
    pg, = [find_server("pg-debian")]
    with pytest.raises(UsageError, match="power of two"):
        create_instance(pg, init_settings={"wal_segment_size": "3MB"})
    with pytest.raises(UsageError, match="not an init-time setting"):
        create_instance(pg, init_settings={"shared_buffers": "1GB"})
    maria = find_server("mariadb")
    with pytest.raises(UsageError, match="innodb_page_size"):
        create_instance(maria, init_settings={"innodb_page_size": "12k"})
    with pytest.raises(UsageError, match="managed by the instance"):
        create_instance(maria, init_settings={"datadir": "/x"})
    with pytest.raises(UsageError, match="apart from the data"):
        create_instance(maria, data_dir="/dev/shm/pmem-advisor-x",
                        wal_dir="/dev/shm/pmem-advisor-x/redo")
    assert not os.path.exists("/dev/shm/pmem-advisor-x")


def test_a_restore_killed_mid_copy_leaves_a_directory_the_reaper_may_empty(shm_dir, monkeypatch):
    """SIGKILL during restore (a loaded machine makes the copy slow): the data directory must
    still carry its instance's marker, or the next run's reaper rightly refuses to touch it and
    `tune --resume --data-dir DIR` stops with "not empty" (issue 17 item 7)."""
    from pmem_advisor.errors import EnvironmentProblem
    from pmem_advisor.instances import golden, registry

    data = shm_dir / "killed-restore"
    with create_instance(find_server("pg-debian"), data_dir=data) as inst:
        inst.initialize()
        inst.snapshot("golden")

        # the snapshot may come from another instance (the tuner's loader): its marker
        (golden.location(inst, "golden") / "data" / registry.MARKER).write_text("po18-other\n")

        def killed(src, dst, user=None):  # the copy stops halfway, as at a SIGKILL
            golden.shutil.copy2(src / registry.MARKER, dst / registry.MARKER) \
                if (src / registry.MARKER).exists() else None
            raise EnvironmentProblem("copy interrupted")

        monkeypatch.setattr(golden, "copy_tree", killed)
        with pytest.raises(EnvironmentProblem):
            inst.restore("golden")
        assert registry.marker_of(data) == inst.id


def test_a_restore_into_a_fresh_empty_directory_marks_it_before_copying(shm_dir, monkeypatch,
                                                                          tmp_path):
    """The tuner's second instance on the user's (empty) --data-dir restores a golden copy
    straight away, without an initdb: a SIGKILL mid-copy must still leave the directory marked
    as that instance's, although it held no marker when the copy began (issue 17 item 7)."""
    from pmem_advisor.errors import EnvironmentProblem
    from pmem_advisor.instances import golden, registry

    cache = tmp_path / "golden"
    binary = find_server("pg-debian")
    with create_instance(binary, golden_dir=cache) as loader:
        loader.initialize()
        loader.snapshot("golden")
    data = shm_dir / "fresh-restore"
    data.mkdir()
    with create_instance(binary, data_dir=data, golden_dir=cache) as inst:
        assert registry.marker_of(data) is None and inst.has_snapshot("golden")

        def killed(src, dst, user=None):  # one file lands, then the kill
            golden.shutil.copy2(src / "PG_VERSION", dst / "PG_VERSION")
            raise EnvironmentProblem("copy interrupted")

        monkeypatch.setattr(golden, "copy_tree", killed)
        with pytest.raises(EnvironmentProblem):
            inst.restore("golden")
        assert (data / "PG_VERSION").exists() and registry.marker_of(data) == inst.id
        rec = next(r for r in registry.load_all() if r.id == inst.id)
        assert registry.remove_files(rec) == [] and not list(data.iterdir())
        monkeypatch.undo()


def test_the_copy_keeps_content_modes_times_and_links_and_starts_no_child(tmp_path):
    """The golden copy is made by descriptor in this process (issue 50: no ``cp`` running as
    root in the server's tree), so an interrupt leaves no child writing on after the cleanup
    (the failure the earlier ``cp -a`` child had); what it copies is byte- and mode-exact."""
    from pmem_advisor.instances import golden

    src, dst = tmp_path / "golden", tmp_path / "data"
    (src / "base" / "1").mkdir(parents=True)
    dst.mkdir()
    want = {}
    for i in range(20):
        p = src / "base" / "1" / f"f{i}"
        p.write_bytes(os.urandom(1 << 14) * (i + 1))
        p.chmod(0o600 if i % 2 else 0o640)
        os.utime(p, ns=(1_000_000_000 * i, 2_000_000_000 * i))
        want[p.relative_to(src)] = (p.read_bytes(), p.stat().st_mode, p.stat().st_mtime_ns)
    (src / "pg_wal").symlink_to("/nowhere/wal")
    forks = []
    real = subprocess.Popen._execute_child
    subprocess.Popen._execute_child = lambda self, args, *a, **k: forks.append(args)
    try:
        golden.copy_tree(src, dst)
    finally:
        subprocess.Popen._execute_child = real
    assert forks == []
    for rel, (data, mode, mtime) in want.items():
        st = (dst / rel).stat()
        assert ((dst / rel).read_bytes(), st.st_mode, st.st_mtime_ns) == (data, mode, mtime)
    assert os.readlink(dst / "pg_wal") == "/nowhere/wal"


def _resident_bytes(tree) -> tuple[int, int]:
    """(bytes of ``tree``'s regular files in the page cache, their total size), by fincore."""
    files = [str(p) for p in tree.rglob("*") if p.is_file() and not p.is_symlink()]
    r = subprocess.run(["fincore", "--bytes", "--noheadings", "--raw", "--output", "RES,SIZE",
                        *files], capture_output=True, text=True, check=True)
    pairs = [tuple(map(int, line.split())) for line in r.stdout.splitlines() if line.strip()]
    return sum(res for res, _ in pairs), sum(size for _, size in pairs)


@pytest.mark.skipif(shutil.which("fincore") is None, reason="fincore (util-linux) not installed")
def test_a_restored_copy_on_disk_leaves_no_pages_in_the_page_cache(tmp_path):
    """The copy is written by the tuner, outside the server's memory budget: its pages left in
    the cache would serve the trial's reads for free and hide every memory knob."""
    root = Path(tempfile.mkdtemp(prefix="pmem-advisor-test-", dir="/var/tmp"))
    try:
        os.chmod(root, 0o755)
        with create_instance(find_server("pg-debian"), data_dir=root / "data",
                             golden_dir=tmp_path / "golden") as inst:
            inst.initialize()
            inst.snapshot("golden")
            inst.restore("golden")
            resident, size = _resident_bytes(root / "data")
            assert size > 20 * 1024**2  # a real cluster was copied
            assert resident < size / 10, (resident, size)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_a_ctrl_c_mid_restore_of_a_trial_leaves_the_data_dir_as_it_found_it(shm_dir,
                                                                            monkeypatch):
    """The tuner's restore interrupted halfway through the copy (a Ctrl-C): the copy runs in
    this process (issue 50), so nothing writes on into --data-dir after the cleanup emptied it
    and dropped its record, and `tune --resume` accepts the directory. (Replaces the test that
    aimed the interrupt at the fork of the ``cp -a`` child the copy used to be.)"""
    from pmem_advisor.instances import golden, pick_server, registry
    from pmem_advisor.tuner.evaluator import TrialConfig
    from pmem_advisor.tuner.managed import ManagedEvaluator, check_data_dir
    from tests.sandbox import processes_under

    result = SimpleNamespace(throughput_tps=1.0, latency_ms={"p50": 1.0}, errors=0,
                             duration_s=1.0, workload="stub", clients=1, raw={})
    workload = SimpleNamespace(load=lambda conninfo, scale: None,
                               run=lambda conninfo, **kw: result)
    data = shm_dir / "tuner-ctrl-c"  # (shm_dir is the module's: other tests leave theirs)
    ev = ManagedEvaluator(pick_server("postgres"), workload, scale=1, clients=1, duration=1,
                          data_dir=data)
    try:
        assert ev.evaluate(TrialConfig(params={})).ok  # the golden copy, and a trial on it
        calls = []

        def interrupted(src, dst, *a, **kw):
            calls.append(dst)
            (Path(dst) / "half-copied").write_bytes(b"x" * 4096)
            raise KeyboardInterrupt

        monkeypatch.setattr(golden, "copy_tree_fd", interrupted)
        with pytest.raises(KeyboardInterrupt):
            ev.evaluate(TrialConfig(params={}))
        assert calls
        assert not data.exists() or not list(data.iterdir())
        assert not [r for r in registry.load_all() if str(data) in (r.data_dir, *r.remove)]
        assert not processes_under(data)
        check_data_dir(data)  # what `tune --resume` checks first
    finally:
        ev.close()


def test_golden_depends_on_no_instance_module_above_it():
    """instances/base uses golden; golden names what it needs of an instance by its own
    Protocol (issue 53): no import of base, not even a type-only or in-function one."""
    import ast

    from pmem_advisor.instances import golden

    tree = ast.parse(Path(golden.__file__).read_text(encoding="utf-8"))
    names = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    names |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not {m for m in names if m and m.startswith("pmem_advisor.instances.base")}
    assert "pmem_advisor.instances.registry" in names  # top-level now, where it is seen
