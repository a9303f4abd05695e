"""Every catalog knob, at its default and at two other legal values, is accepted by the real
server and read back unchanged. Values are batched: one server start per batch."""

import json

import pytest

from pmem_advisor.errors import EnvironmentProblem
from pmem_advisor.knobs.catalog import load_catalog
from pmem_advisor.knobs.emit import Header, Setting, emit_config

pytestmark = pytest.mark.server

TARGETS = {
    "postgresql-15": ("postgres", "postgresql", "15"),
    "postgresql-18": ("postgres", "postgresql", "18"),
    "mariadb-10.11": ("mysql", "mariadb", "10.11"),
    "mysql-8": ("mysql", "mysql", "8"),
}
_CONTEXT = {"postmaster": "restart", "sighup": "reload", "user": "session",
            "superuser": "session"}


def _binary(engine, flavour, version):
    from pmem_advisor.instances import pick_server

    try:
        return pick_server(engine, flavour, version)
    except EnvironmentProblem as e:
        pytest.skip(f"no {flavour} {version} server on this machine: {e}")


def batch(catalog, i):
    """Batch 0: every knob at its default; batch i: samples[i-1] where a knob has one."""
    out = []
    for k in catalog:
        if not k.config_file or (k.scope == "reinit" and i > 0):
            continue  # reinit knobs must match the data directory: default only
        if i == 0:
            if k.type == "path" and not k.default:
                continue  # "unset" cannot be written down
            value = k.default
        elif len(k.samples) >= i:
            value = k.samples[i - 1]
        else:
            continue
        out.append(Setting(k.name, value, f"round-trip batch {i}"))
    return out


@pytest.fixture(scope="module", params=list(TARGETS))
def server(request, tmp_path_factory):
    from pmem_advisor.instances import create_instance

    engine, flavour, version = TARGETS[request.param]
    binary = _binary(engine, flavour, version)
    catalog = load_catalog(engine, binary.flavour, binary.version)
    inst = create_instance(binary)
    request.addfinalizer(inst.destroy)
    inst.initialize()
    return inst, catalog


def test_every_knob_round_trips(server):
    inst, catalog = server
    problems, checked = [], 0
    for i in range(3):
        settings = batch(catalog, i)
        text = emit_config(catalog.engine, settings, Header("test", catalog.flavour,
                                                             catalog.version),
                           catalog=catalog).text
        inst.start(text)
        try:
            reported = inst.settings()
        finally:
            inst.stop()
        for s in settings:
            knob = catalog.get(s.name)
            got = reported.get(knob.name)
            checked += 1
            if any(knob.same(knob.coerce(s.value), a) for a in knob.auto_values):
                continue  # the server derives the value (wal_buffers=-1): nothing to compare
            if got is None:
                problems.append(f"batch {i}: {knob.name} not reported")
            elif not knob.same(knob.parse(got, check_range=False), knob.coerce(s.value)):
                problems.append(f"batch {i}: {knob.name}={knob.render(knob.coerce(s.value))} "
                                f"came back as {got}")
    assert checked >= 2 * len(catalog)
    assert not problems, "\n".join(problems)


def test_postgres_catalog_matches_pg_settings(server):
    inst, catalog = server
    if catalog.engine != "postgres":
        pytest.skip("pg_settings metadata is PostgreSQL only")
    inst.start("")
    try:
        rows = inst.query("SELECT name, vartype, unit, min_val, max_val, enumvals, context "
                          "FROM pg_settings")
    finally:
        inst.stop()
    meta = {r[0]: r[1:] for r in rows}
    problems = []
    for k in catalog:
        vartype, unit, lo, hi, enumvals, context = meta[k.name]
        if (k.unit or None) != (unit or None):
            problems.append(f"{k.name}: unit {k.unit} vs {unit}")
        if k.config_file and lo is not None and float(lo) != k.min:
            problems.append(f"{k.name}: min {k.min} vs {lo}")
        if k.config_file and hi is not None and float(hi) != k.max:
            problems.append(f"{k.name}: max {k.max} vs {hi}")
        if enumvals and not set(enumvals) <= set(k.values):
            problems.append(f"{k.name}: server values {enumvals} not all in {k.values}")
        if context in _CONTEXT and _CONTEXT[context] != k.scope:
            problems.append(f"{k.name}: scope {k.scope} vs context {context}")
    assert not problems, "\n".join(problems)


def test_validate_classifies(server, tmp_path, run_cli):
    inst, catalog = server
    if catalog.flavour == "postgresql":
        text = ("shared_buffers = 64MB\nwal_buffers = 100kB\nhuge_pages = maybe\n"
                "log_line_prefix = '%m [%p] '\n")
        path = tmp_path / "candidate.conf"
        expect = {"shared_buffers": "accepted", "wal_buffers": "adjusted",
                  "huge_pages": "rejected", "log_line_prefix": "accepted"}
    elif catalog.flavour == "mariadb":
        text = ("[mysqld]\ninnodb-buffer-pool-size = 256M\ninnodb_io_capacity = 50\n"
                "loose-no-such-option = 1\n[mysqld-5.5]\ninnodb_io_capacity = 7\n")
        path = tmp_path / "candidate.cnf"
        expect = {"innodb_buffer_pool_size": "accepted", "innodb_io_capacity": "adjusted",
                  "no_such_option": "rejected"}
    else:
        pytest.skip("validation classes are covered on PostgreSQL and MariaDB")
    path.write_text(text)
    code, out, err = run_cli("config", "validate", str(path), catalog.engine,
                             "--flavour", catalog.flavour,
                             "--version", ".".join(catalog.version.split(".")[:2]), "--json")
    assert code == 1, err
    got = {s["name"]: s["status"] for s in json.loads(out)["settings"]}
    assert got == expect
    good = tmp_path / ("good.conf" if catalog.engine == "postgres" else "good.cnf")
    good.write_text(emit_config(catalog.engine, [Setting("max_connections", 50, "t")],
                                catalog=catalog).text)
    code, out, err = run_cli("config", "validate", str(good), catalog.engine,
                             "--flavour", catalog.flavour,
                             "--version", ".".join(catalog.version.split(".")[:2]))
    assert code == 0, err


def _server_settings(inst, engine) -> dict[str, str]:
    """Every setting the running server has, as text a config file would hold."""
    if engine == "postgres":
        rows = inst.query("SELECT name, current_setting(name) FROM pg_settings"
                          " WHERE context <> 'internal'")
    else:
        rows = inst.query("SELECT LOWER(VARIABLE_NAME), GLOBAL_VALUE"
                          " FROM information_schema.SYSTEM_VARIABLES"
                          " WHERE GLOBAL_VALUE IS NOT NULL")
    return {name.lower(): value for name, value in rows}


def test_config_render_accepts_every_server_setting(server, run_cli):
    """The full catalog knows each setting of the real server at the value it runs with, and
    `config render --set` writes all of them (issue 14: log_min_duration_statement=250ms)."""
    inst, catalog = server
    inst.start("")
    try:
        values = _server_settings(inst, catalog.engine)
    finally:
        inst.stop()
    assert len(values) > 250
    problems, settable = [], {}
    for name, text in values.items():
        try:
            knob = catalog.get(name)
            # read-only variables (version, a deprecated innodb_lru_flush_size=0) are known
            # but need not be in range: no config file can set them
            knob.parse(text, check_range=knob.config_file)
        except Exception as e:  # collect all, not just the first
            problems.append(f"{name}={text!r}: {e}")
            continue
        if knob.config_file and not (knob.type == "path" and not text):
            settable[name] = text  # an empty path means "unset": the emitter says leave it out
    assert not problems, "\n".join(problems)
    assert len(settable) > 250
    version = ".".join(catalog.version.split(".")[:2])
    args = ["config", "render", catalog.engine, "--flavour", catalog.flavour,
            "--version", version]
    for name, text in settable.items():
        args += ["--set", f"{name}={text}"]
    code, out, err = run_cli(*args)
    assert code == 0, err
    rendered = {line.split("=")[0].strip(" #") for line in out.splitlines() if "=" in line}
    assert set(settable) - rendered == set()
    if catalog.engine == "postgres":
        code, out, err = run_cli("config", "render", "postgres", "--version", version,
                                 "--set", "log_min_duration_statement=250ms")
        assert code == 0 and "log_min_duration_statement = 250ms" in out, err
