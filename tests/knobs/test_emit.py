import pytest
from hypothesis import given
from hypothesis import strategies as st

from pmem_advisor.engines.mysql.emit import emit_mycnf
from pmem_advisor.engines.mysql.parse import parse_mycnf_text
from pmem_advisor.engines.postgres.emit import emit_postgresql_conf
from pmem_advisor.engines.postgres.parse import parse_postgresql_text
from pmem_advisor.errors import UnknownKnobError, UsageError
from pmem_advisor.knobs.catalog import load_catalog
from pmem_advisor.knobs.emit import Header, Setting

CATALOGS = {
    "pg18": load_catalog("postgres", version="18"),
    "pg13": load_catalog("postgres", version="13"),
    "maria": load_catalog("mysql", "mariadb", "10.11.19"),
    "mysql": load_catalog("mysql", "mysql", "8.4"),
}


def test_header_and_why_comments():
    e = emit_postgresql_conf([Setting("shared_buffers", "1GB", "PM001 (K23-2)")],
                             Header("fp-1234", "postgresql", "18.6"), catalog=CATALOGS["pg18"])
    assert "hardware fingerprint: fp-1234" in e.text and "PostgreSQL 18.6" in e.text
    assert "pmem-advisor 0.1.0" in e.text
    assert "shared_buffers = 1GB  # PM001 (K23-2)" in e.text
    full = emit_postgresql_conf([Setting("shared_buffers", "1GB", "x")], Header(),
                                catalog=CATALOGS["pg18"], fragment=False)
    assert "#work_mem = 4MB  # default (session)" in full.text


def test_missing_in_version_dropped_with_warning():
    e = emit_postgresql_conf([Setting("io_method", "sync", "t"), Setting("work_mem", "8MB", "t")],
                             catalog=CATALOGS["pg13"])
    assert "io_method" not in e.text.split("# Each line")[1]
    assert any("PostgreSQL 13" in w for w in e.warnings)


def test_bad_values_and_names():
    with pytest.raises(UnknownKnobError, match="did you mean"):
        emit_mycnf([Setting("innodb_bufer_pool_size", "1G")], catalog=CATALOGS["maria"])
    with pytest.raises(UsageError, match="allowed range"):
        emit_mycnf([Setting("innodb_write_io_threads", 100)], catalog=CATALOGS["maria"])


def test_no_directive_injection():
    for cat, emit in (("maria", emit_mycnf), ("pg18", emit_postgresql_conf)):
        name = "innodb_log_group_home_dir" if cat == "maria" else "huge_pages"
        with pytest.raises(UsageError, match="control character|one of"):
            emit([Setting(name, "/x\n!include /etc/passwd")], catalog=CATALOGS[cat])
    # a reason with a newline stays inside its comment
    e = emit_mycnf([Setting("innodb_log_group_home_dir", "/a b/#c'\"\\", "r1\n[client]")],
                   catalog=CATALOGS["maria"])
    parsed = parse_mycnf_text(e.text)
    assert parsed.effective()["innodb_log_group_home_dir"].value == "/a b/#c'\"\\"
    assert [x.group for x in parsed.entries] == ["mysqld"]


def _legal_values(knob):
    if knob.type == "bool":
        return st.booleans()
    if knob.type == "enum":
        return st.sampled_from(knob.values)
    if knob.type == "real":
        hi = min(knob.max, 1e6)
        return st.floats(knob.min, hi, allow_nan=False).map(lambda x: round(x, 3)).filter(
            lambda x: knob.min <= x <= hi)
    if knob.type in ("path", "string"):
        return st.text(st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=20)
    return st.integers(int(knob.min), int(min(knob.max, 2**40)))


@st.composite
def settings_for(draw, cat):
    knobs = draw(st.lists(st.sampled_from([k for k in CATALOGS[cat] if k.config_file]),
                          min_size=1, max_size=8, unique_by=lambda k: k.name))
    return [(k, draw(_legal_values(k))) for k in knobs]


@pytest.mark.parametrize("cat", list(CATALOGS))
def test_emit_then_parse_round_trip(cat):
    @given(settings_for(cat))
    def check(pairs):
        settings = [Setting(k.name, v, "prop") for k, v in pairs]
        if cat.startswith("pg"):
            text = emit_postgresql_conf(settings, catalog=CATALOGS[cat]).text
            eff = parse_postgresql_text(text).effective()
        else:
            text = emit_mycnf(settings, catalog=CATALOGS[cat]).text
            eff = parse_mycnf_text(text).effective()
        for k, v in pairs:
            got = k.parse(eff[k.name].value)
            assert k.same(got, k.coerce(v)), (k.name, v, eff[k.name].value)

    check()


def test_mycnf_leaves_out_settings_the_server_cannot_read_from_a_file():
    """A read-only MariaDB variable written into my.cnf stops the server from starting."""
    cat = load_catalog("mysql", "mariadb", "10.11")
    ro = next(k for k in cat.all() if not k.config_file and k.type in ("bool", "int", "enum"))
    value = ro.default if ro.default is not None else (ro.values[0] if ro.values else 1)
    out = emit_mycnf([Setting(ro.name, value, "test"), Setting("innodb_buffer_pool_size", "1G")],
                     catalog=cat)
    parsed = parse_mycnf_text(out.text)
    assert ro.name not in {e.name for e in parsed.entries}
    assert "innodb_buffer_pool_size" in {e.name for e in parsed.entries}
    assert any(ro.name in w and "not a config-file setting" in w for w in out.warnings)


def test_a_control_character_never_reaches_an_emitted_file():
    for engine, name, value in (("postgres", "data_directory", "/x\nfsync = off"),
                                ("mysql", "innodb_data_home_dir", "/x\rsync_binlog=0"),
                                ("mysql", "innodb_data_home_dir", "/x\x00y")):
        emit = emit_postgresql_conf if engine == "postgres" else emit_mycnf
        with pytest.raises(UsageError, match="control character"):
            emit([Setting(name, value)])
