import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pmem_advisor.engines.postgres.parse import (
    parse_postgresql_conf,
    parse_postgresql_text,
    quote,
    unquote,
)
from pmem_advisor.errors import InputError


def test_includes_quoting_last_wins(tmp_path):
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "conf.d" / "10-a.conf").write_text("work_mem = 8MB\n")
    (tmp_path / "conf.d" / "20-b.conf").write_text("work_mem = 16MB  # later file wins\n")
    (tmp_path / "conf.d" / "skip.txt").write_text("work_mem = 1MB\n")
    (tmp_path / "extra.conf").write_text("shared_buffers 256MB\n")
    main = tmp_path / "postgresql.conf"
    main.write_text(
        "# comment\n"
        "shared_buffers = 128MB\n"
        "include 'extra.conf'\n"
        "include_if_exists 'missing.conf'\n"
        "include_dir 'conf.d'\n"
        "log_line_prefix = '%m it''s \\\\ [%p] '\n"
        "Random_Page_Cost=1.1\n"
    )
    (tmp_path / "postgresql.auto.conf").write_text("random_page_cost = '1.5'\n")
    c = parse_postgresql_conf(str(main))
    eff = c.effective()
    assert eff["shared_buffers"].value == "256MB"
    assert eff["shared_buffers"].file.endswith("extra.conf") and eff["shared_buffers"].line == 1
    assert eff["work_mem"].value == "16MB" and eff["work_mem"].file.endswith("20-b.conf")
    assert eff["log_line_prefix"].value == "%m it's \\ [%p] "
    assert eff["random_page_cost"].value == "1.5"
    assert eff["random_page_cost"].file.endswith("postgresql.auto.conf")
    assert any("missing.conf" in n for n in c.notes)
    assert len(c.files) == 5


def test_errors_name_file_and_line(tmp_path):
    f = tmp_path / "p.conf"
    f.write_text("a = 1\nshared_buffers = = 3\n")
    with pytest.raises(InputError, match=r"p.conf:2: syntax error"):
        parse_postgresql_conf(str(f))
    f.write_text("work_mem = 1MB\ninclude 'nope.conf'\n")
    with pytest.raises(InputError, match=r"p.conf:2: include 'nope.conf'"):
        parse_postgresql_conf(str(f))
    f.write_text("include 'p.conf'\n")
    with pytest.raises(InputError, match="nested"):
        parse_postgresql_conf(str(f))
    with pytest.raises(InputError, match="no such file"):
        parse_postgresql_conf(str(tmp_path / "absent.conf"))


@given(st.binary(max_size=300))
@settings(max_examples=150, deadline=None,  # a loaded 2-core machine: no timing
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_random_bytes_never_crash(tmp_path, data):
    f = tmp_path / "fuzz.conf"
    f.write_bytes(data)
    try:
        c = parse_postgresql_conf(str(f), auto_conf=False)
    except InputError as e:
        assert "\n" not in str(e)
    else:
        for e in c.entries:
            assert e.line >= 1


@given(st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs")), max_size=40))
def test_quote_round_trip(text):
    assert unquote(quote(text)) == text
    parsed = parse_postgresql_text(f"x = {quote(text)}  # why\n")
    assert parsed.effective()["x"].value == text


def test_non_regular_files_and_huge_files_are_refused(tmp_path, run_cli):
    """Issue 17 item 10. Failed before the fix: `config parse /dev/zero` read without limit
    (memory grew until killed) and a FIFO hung the parser; both are now exit 2 at once."""
    import os

    from pmem_advisor.knobs import configfile

    fifo = tmp_path / "fifo.conf"
    os.mkfifo(fifo)
    for path in ("/dev/zero", str(fifo), str(tmp_path)):
        with pytest.raises(InputError, match="not a regular file"):
            parse_postgresql_conf(path)
    inc = tmp_path / "postgresql.conf"
    inc.write_text("include '/dev/zero'\n")
    with pytest.raises(InputError, match="not a regular file"):
        parse_postgresql_conf(str(inc))
    big = tmp_path / "big.conf"
    big.write_bytes(b"# x\n" * ((configfile.MAX_CONFIG_BYTES // 4) + 1))
    with pytest.raises(InputError, match="larger than"):
        parse_postgresql_conf(str(big))
    code, _, err = run_cli("config", "parse", "--engine", "postgres", "/dev/zero")
    assert code == 2 and "not a regular file" in err
    from pmem_advisor.knobs.configfile import read_head

    for path in (str(fifo), str(tmp_path)):
        with pytest.raises(InputError, match="not a regular file"):
            read_head(path)  # for guessing the format without reading /dev/zero forever
