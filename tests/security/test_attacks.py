"""Root runs the tool, ``nobody`` attacks: each reproducer must leave root's files untouched,
print no byte the attacker could not read, end within its bound and exit 0/1/2/3 with one
line. Races run a bounded number of rounds against an attacker looping as nobody."""

from __future__ import annotations

import os
import stat
import tarfile
import time
import uuid
from pathlib import Path

import pytest

from pmem_advisor.instances import registry
from pmem_advisor.probes import medium as m
from tests.security.conftest import (
    NOBODY,
    as_root_only,
    chown_nobody,
    cli,
    fingerprint,
    one_line_refusal,
)

pytestmark = as_root_only()

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests/probes/golden/container-v2.json"
SECRET = "TOPSECRET-" + uuid.uuid4().hex[:8]


def _wait(pred, timeout: float = 10) -> None:
    end = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < end, "the attacker did not start"
        time.sleep(0.01)


# -- 1. medium measurement: the scratch directory in the user's directory ----------------------
MEDIUM_ATTACK = r'''
import glob
user, victim = sys.argv[1], sys.argv[2]
open(os.path.join(user, "ready"), "w").close()
swaps = 0
while running():
    for d in glob.glob(os.path.join(user, ".pmem-advisor-medium-*")):
        if os.path.islink(d):
            continue
        try:
            os.rename(d, d + ".moved")
            os.symlink(victim, d)
            swaps += 1
        except OSError:
            pass
print(swaps)
'''


@pytest.mark.parametrize("use_fio", [False, True])
def test_the_medium_scratch_cannot_be_redirected_by_the_directory_owner(user_dir, root_only,
                                                                        attacker, use_fio):
    if use_fio and not m.shutil.which("fio"):
        pytest.skip("fio is not installed")
    data = user_dir / "data"
    data.mkdir()
    chown_nobody(data)
    before = fingerprint(root_only)
    a = attacker(MEDIUM_ATTACK, str(user_dir), str(root_only))
    _wait(lambda: (user_dir / "ready").exists())
    outcomes = []
    for _ in range(4):  # bounded rounds; each measurement is bounded by DEADLINE_SECONDS
        try:
            outcomes.append(m.measure(str(data), seconds=0.1, use_fio=use_fio,
                                      size=8 << 20)["class"])
        except m.MeasureError as e:
            outcomes.append(str(e))
    a.stop()
    assert fingerprint(root_only) == before, outcomes
    left = [p for p in user_dir.rglob("*") if p.is_file() and p.stat().st_size > 4096]
    assert not left, f"scratch data left in the user's directory: {left}"


# -- 2. the reaper: check the marker, then the directory is swapped for a link ----------------
REAPER_ATTACK = r'''
import glob
user, victim = sys.argv[1], sys.argv[2]
open(os.path.join(user, "ready"), "w").close()
swaps = 0
while running():
    for inst in glob.glob(os.path.join(user, "remove-*")) + glob.glob(user + "/empty-*"):
        if inst.endswith(".real") or os.path.islink(inst):
            continue
        try:
            os.rename(inst, inst + ".real")
            os.symlink(victim, inst)
            os.unlink(inst)
            os.rename(inst + ".real", inst)
            swaps += 1
        except OSError:
            pass
print(swaps)
'''


def _dead_pid() -> int:
    import subprocess
    import sys

    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_the_reaper_never_follows_a_directory_swapped_for_a_link(user_dir, root_only, attacker,
                                                                 monkeypatch, base):
    monkeypatch.setenv("PMEM_ADVISOR_STATE_DIR", str(base / "state"))
    before = fingerprint(root_only)
    a = attacker(REAPER_ATTACK, str(user_dir), str(root_only))
    _wait(lambda: (user_dir / "ready").exists())
    dead = _dead_pid()
    for rnd in range(20):
        rec_id = f"po15-attack{rnd:04d}"
        for name in ("remove", "empty"):  # made aside, then moved into the attacker's reach
            stage = user_dir / f"stage-{name}-{rnd}"
            stage.mkdir()
            for i in range(20):
                (stage / f"data{i}").write_text("instance data\n")
            registry.write_marker(stage, rec_id)
            stage.rename(user_dir / f"{name}-{rnd}")
        rec = registry.new_record(id=rec_id, engine="postgres", flavour="postgresql",
                                  version="15", bindir="/usr/bin", workdir="/nonexistent",
                                  data_dir="/nonexistent", wal_dir=None,
                                  socket_dir="/nonexistent", owner_pid=dead,
                                  remove=[str(user_dir / f"remove-{rnd}")],
                                  empty=[str(user_dir / f"empty-{rnd}")])
        registry.save(rec)
        registry.reap(rec)  # raised (exit 70) in 5 of 20 rounds before
        for name in ("remove", "empty"):  # the attacker's next round targets only the next
            for left in (user_dir / f"{name}-{rnd}", user_dir / f"{name}-{rnd}.real"):
                if left.is_dir() and not left.is_symlink():
                    registry.remove_tree(left)
    swaps = a.stop()
    assert int(swaps.split()[-1]) > 0, swaps  # the attack did run
    assert fingerprint(root_only) == before


# -- 3. --out through a directory the user swapped for a link --------------------------------
def test_out_through_a_users_link_to_a_root_only_directory_is_refused(user_dir, root_only):
    (root_only / "x").write_text("root's config\n")
    before = fingerprint(root_only)
    (user_dir / "sub").symlink_to(root_only)
    chown_nobody(user_dir / "sub")
    code, _, err, _ = cli("recommend", "postgres", "--version", "16", "--profile", str(GOLDEN),
                          "--out", str(user_dir / "sub" / "x"))
    line = one_line_refusal(code, err)
    assert "symbolic link owned by" in line and str(user_dir / "sub") in line
    assert fingerprint(root_only) == before


# -- 4. includes must not disclose files the config's owner cannot read ------------------------
@pytest.mark.parametrize("fmt", ["postgresql", "mycnf"])
def test_an_include_of_a_root_only_file_is_refused_before_it_is_read(user_dir, root_only, fmt):
    secret = root_only / ("secret.conf" if fmt == "postgresql" else "secret.cnf")
    secret.write_text(f"db_password = '{SECRET}'\n" if fmt == "postgresql"
                      else f"[mysqld]\npassword = {SECRET}\n")
    secret.chmod(0o600)
    root_only.chmod(0o755)  # the directory is not what protects it: the file's mode is
    conf = user_dir / ("postgresql.conf" if fmt == "postgresql" else "my.cnf")
    conf.write_text(f"shared_buffers = 128MB\ninclude '{secret}'\n" if fmt == "postgresql"
                    else f"[mysqld]\nmax_connections = 10\n!include {secret}\n")
    chown_nobody(conf)
    for args in (["config", "parse", str(conf), "--json"], ["config", "parse", str(conf)]):
        code, out, err, _ = cli(*args)
        line = one_line_refusal(code, err)
        assert SECRET not in out + err
        assert "refusing to read" in line and "could not read it" in line


def test_an_include_of_etc_shadow_prints_not_a_byte_of_it(user_dir):
    conf = user_dir / "postgresql.conf"
    conf.write_text("include '/etc/shadow'\n")
    chown_nobody(conf)
    shadow_head = Path("/etc/shadow").read_text().split(":", 1)[0]
    code, out, err, _ = cli("config", "parse", str(conf))
    one_line_refusal(code, err)
    assert f"{shadow_head}:" not in out + err.replace("/etc/shadow:", "")


def test_a_syntax_error_never_prints_the_line(tmp_path):
    conf = tmp_path / "postgresql.conf"
    conf.write_text(f"{SECRET} is not a setting !\n")
    code, out, err, _ = cli("config", "parse", str(conf))
    line = one_line_refusal(code, err)
    assert SECRET not in out + err and f"{conf}:1" in line


# -- 5. probe --root: the captured tree is a jail ------------------------------------------------
def _tree(base: Path) -> Path:
    from tests.probes.machine_builder import build

    return build("container-v2", base / "tree")


@pytest.mark.parametrize("facts", ["dev-zero", "fifo"])
def test_facts_json_that_is_a_device_or_a_fifo_neither_hangs_nor_eats_memory(base, facts):
    tree = _tree(base)
    f = tree / ".pmem-advisor" / "facts.json"
    f.parent.mkdir(exist_ok=True)
    f.unlink(missing_ok=True)
    if facts == "dev-zero":
        f.symlink_to("/dev/zero")
    else:
        os.mkfifo(f)
    for cmd in (["probe", "--root", str(tree), "--json"],
                ["recommend", "postgres", "--version", "16", "--root", str(tree)]):
        code, _, err, seconds = cli(*cmd, timeout=60)
        assert code in (0, 1, 2, 3) and "Traceback" not in err, (code, err)
        assert seconds < 60


@pytest.mark.parametrize("hops", [39, 40, 41])  # around the hop limit, where it was cut
def test_a_chain_of_links_cannot_reach_the_host_and_nothing_of_it_is_saved(base, hops):
    tree = _tree(base)
    host = base / "host-only"
    host.mkdir()
    marker = "HOSTONLY-" + uuid.uuid4().hex[:8]
    (host / marker).write_text("x")
    hugepages = tree / "sys/kernel/mm/hugepages"  # a directory the probe lists and saves
    hugepages.parent.mkdir(parents=True, exist_ok=True)
    if hugepages.is_symlink() or hugepages.is_file():
        hugepages.unlink()
    elif hugepages.exists():
        import shutil

        shutil.rmtree(hugepages)
    hugepages.symlink_to("/c1")
    for i in range(1, hops):
        (tree / f"c{i}").symlink_to(f"/c{i + 1}")
    (tree / f"c{hops}").symlink_to(str(host))  # absolute: re-rooted inside, never the host
    from pmem_advisor.probes.sysaccess import SysAccess

    jail = SysAccess(str(tree))
    assert marker not in jail.listdir("/sys/kernel/mm/hugepages")  # it was at 40 hops
    snap = base / "snap.tar.gz"
    code, out, err, seconds = cli("probe", "--root", str(tree), "--json", "--save", str(snap),
                                  timeout=60)
    assert code in (0, 1, 2, 3) and "Traceback" not in err, (code, err)
    assert marker not in out + err
    if snap.exists():
        with tarfile.open(snap) as tar:
            assert not [n for n in tar.getnames() if marker in n]
            for member in tar:
                if member.isfile():
                    assert marker.encode() not in tar.extractfile(member).read()


# -- 6. unbounded parsing ---------------------------------------------------------------------
def test_includes_multiplying_stop_at_the_file_limit_quickly(tmp_path):
    for level in range(9):
        nxt = f"f{level + 1}.conf"
        (tmp_path / f"f{level}.conf").write_text(f"include '{nxt}'\n" * 10)
    (tmp_path / "f9.conf").write_text("work_mem = 4MB\n" * 400)
    code, _, err, seconds = cli("config", "parse", str(tmp_path / "f0.conf"), timeout=60)
    line = one_line_refusal(code, err)
    assert "files read through includes" in line and seconds < 30


def test_a_long_line_parses_in_linear_time():
    from pmem_advisor.engines.postgres.parse import parse_postgresql_text
    from pmem_advisor.errors import InputError

    for line in ("a" * 20_000 + "!", "a" * 20_000 + " = " + "b" * 20_000 + " !",
                 "a = '" + "b" * 20_000, "a" + " " * 20_000 + "!"):
        start = time.monotonic()
        with pytest.raises(InputError):
            parse_postgresql_text(line)
        assert time.monotonic() - start < 1.0  # 28 s before


# -- 7. crashes: markup in a path or a value, numbers beyond any machine -------------------------
def test_markup_and_escapes_are_text(tmp_path):
    (tmp_path / "[").mkdir()  # so that ".../[/bold]x.conf" names a file: rich's closing tag
    target = f"{tmp_path}/[/bold]x.conf"
    code, _, err, _ = cli("recommend", "postgres", "--version", "16", "--profile", str(GOLDEN),
                          "--out", target)
    assert code == 0, err
    assert os.path.isfile(target) and target in err
    conf = tmp_path / "postgresql.conf"
    conf.write_text("application_name = '[/bold]\\033]0;owned\\007\\033[2J'\n")
    code, out_text, err, _ = cli("config", "parse", str(conf))
    assert code == 0, err
    assert "\x1b" not in out_text + err and "\x07" not in out_text + err
    assert "[/bold]" in out_text and "\\x1b" in out_text


@pytest.mark.parametrize("value", ["1e400", "1e308", "-5"])
def test_profile_numbers_beyond_any_machine_are_bad_input(tmp_path, value):
    doc = GOLDEN.read_text().replace('"total_bytes": 270394195968', f'"total_bytes": {value}', 1)
    assert doc != GOLDEN.read_text()
    p = tmp_path / "profile.json"
    p.write_text(doc)
    code, _, err, _ = cli("recommend", "postgres", "--version", "16", "--profile", str(p))
    line = one_line_refusal(code, err)
    assert "memory.total_bytes" in line


# -- 8. smaller ones ------------------------------------------------------------------------------
def test_a_state_dir_variable_naming_a_file_changes_nothing(tmp_path):
    victim = tmp_path / "passwd"
    victim.write_text("root:x:0:0::/root:/bin/sh\n")
    victim.chmod(0o644)
    code, _, err, _ = cli("instances", "reap", env={"PMEM_ADVISOR_STATE_DIR": str(victim)})
    line = one_line_refusal(code, err, expected=(2, 3))
    assert "not a directory" in line
    assert stat.S_IMODE(victim.stat().st_mode) == 0o644


def test_a_password_with_an_escaped_space_is_redacted_whole_and_the_note_shown_on_failure():
    code, out, err, _ = cli("check", "postgres", "--dsn",
                            "host=/nonexistent-socket-dir password=pre\\ post user=u",
                            "--profile", str(GOLDEN))
    one_line_refusal(code, err, expected=(2, 3))
    assert "pre" not in out + err.replace("prefer", "") and "post" not in out + err
    assert "visible to every local user" in err


def test_the_attacker_is_really_nobody(attacker, user_dir):
    a = attacker("print(os.geteuid(), os.getegid(), os.getgroups())", seconds=5)
    out = a.stop()
    assert out.split()[0] == str(NOBODY.pw_uid) and "[]" in out



@pytest.mark.parametrize("value", ["inf", "nan", "-5", "1e400"])
def test_number_flags_are_finite_and_in_range(value):
    code, _, err, _ = cli("workload", "run", "postgres", "--workload", "tpcb", "--duration", value)
    line = one_line_refusal(code, err)
    assert "--duration" in line and "not a number from 0" in line
