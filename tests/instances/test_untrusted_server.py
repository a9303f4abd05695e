"""The managed server is untrusted (issue 50): a process of the server's user attacks while
root runs the product's own instance code, and root's canaries keep owner, mode and content.

The server's user here is the other user of tests/sandbox.py (``nobody``, standing in for
``pmemadv``): ``privileges.SERVER_USER`` is pointed at it, so the instance's home and data
directory are that user's, and what it plants there is what a compromised server could plant.
The real PostgreSQL (Debian's) is started, stopped and restarted around every attack."""

from __future__ import annotations

import os
import pwd
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from pmem_advisor.engines.mysql.instance import INCLUDE_FILE as MYSQL_INCLUDE
from pmem_advisor.engines.tarantool.instance import CONFIG_FILE as TARANTOOL_CONFIG
from pmem_advisor.errors import AdvisorError
from pmem_advisor.fileio import PlantedFile
from pmem_advisor.instances import create_instance, privileges
from tests.instances.conftest import CANARY_TEXT, find_server

pytestmark = pytest.mark.server





def state(p: Path) -> tuple[int, int, int, bytes]:
    st = p.lstat()
    return st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode), p.read_bytes()


def run_as(user, code: str, *args: str) -> str:
    """One Python snippet run as the server's user; its stdout (asserts it succeeded)."""
    r = user.run([user.python, "-c", code, *args])
    assert r.returncode == 0, r.stderr
    return r.stdout


def forget_kept(inst) -> None:
    """A refused instance keeps its tree for inspection, and its record (saying why), so that
    the next reaper removes both: the test reaps it itself, and checks that nothing is left."""
    from pmem_advisor.instances import registry

    rec = next(r for r in registry.load_all() if r.id == inst.id)
    assert rec.kept.startswith("refusing to use ") and rec.server_pid is None
    assert registry.reap(rec) == []
    for d in (inst.home, inst.log_dir, *inst._remove):
        assert not d.exists(), d


def test_a_server_log_link_planted_in_the_home_is_never_opened(as_server_user, canary):
    """Attack 1 of issue 50: ``home/server.log -> /etc/passwd`` between two starts. The log is
    a held descriptor in a root-only directory beside the home, so root never opens the name."""
    before = state(canary)
    with create_instance(find_server("pg-debian")) as inst:
        inst.initialize()
        inst.start("")
        assert inst.home.stat().st_uid == as_server_user.pw.pw_uid
        log_dir = inst.log_path.parent
        st = log_dir.stat()
        assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (0, 0o700)
        assert not log_dir.is_relative_to(inst.home)
        # every name a log could have had in the home, and one in the log directory itself
        out = run_as(as_server_user, """
import os, sys
home, canary, logdir = sys.argv[1:4]
for name in ("server.log", "postgres.log", "log"):
    os.symlink(canary, os.path.join(home, name))
try:
    os.symlink(canary, os.path.join(logdir, "server.log.new"))
    print("wrote the log dir")
except PermissionError:
    print("log dir refused")
""", str(inst.home), str(canary), str(log_dir))
        assert out.strip() == "log dir refused"
        inst.restart("")  # stop, start: every tool and the server write the log
        inst.stop()
        inst.start("")
        assert "database system is ready" in inst.log_tail(), inst.log_tail()
    assert state(canary) == before


INCLUDES = {"mariadb": MYSQL_INCLUDE, "tarantool": TARANTOOL_CONFIG}
SETTING = {"pg-debian": "work_mem = '{}MB'\n", "mariadb": "[mysqld]\nsort_buffer_size = {}M\n",
           "tarantool": "box.cfg{{readahead = {}*16320}}\n"}
RENAME_RACE = r"""
import os, sys, time
target, canary, stop = sys.argv[1:4]
data = os.path.dirname(target)
n = 0
while not os.path.exists(stop):
    tmp = os.path.join(data, ".evil%d" % n)
    try:
        os.symlink(canary, tmp)
        os.rename(tmp, target)
        n += 1
    except OSError:
        pass
print(n)
"""


def _instance(server: str):
    if server == "tarantool":
        from pmem_advisor.engines.tarantool.instance import TarantoolInstance, find_tarantool
        from pmem_advisor.errors import EnvironmentProblem

        try:
            return TarantoolInstance(find_tarantool())
        except EnvironmentProblem as e:
            pytest.skip(f"no tarantool: {e.message}")
    return create_instance(find_server(server))


@pytest.mark.parametrize("server", ["pg-debian", "mariadb", "tarantool"])
def test_a_link_renamed_over_the_include_file_never_gets_root_to_chown_its_target(
        as_server_user, canary, server):
    """Attack 2 of issue 50: the include is written, then (before) chowned by name in the
    server-owned data directory; a process of the server's user renames a link to root's file
    over it in a loop. Ownership is now given at creation, by descriptor: whatever the race
    does, root's file keeps owner, mode and content, and a refusal is a one-line PlantedFile."""
    before = state(canary)
    user = as_server_user
    with _instance(server) as inst:
        inst.initialize()
        include = inst.data_dir / "pmem-advisor.conf" if server == "pg-debian" else \
            inst.home / INCLUDES[server]
        stop = Path(tempfile.mkdtemp(prefix="race-stop-", dir="/var/tmp")) / "stop"
        stop.parent.chmod(0o755)
        attacker = subprocess.Popen(
            [user.python, "-c", RENAME_RACE, str(include), str(canary), str(stop)],
            user=user.pw.pw_uid, group=user.pw.pw_gid, extra_groups=[], cwd="/",
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        refused = written = 0
        try:
            deadline = time.monotonic() + 20
            while written + refused < 400 and time.monotonic() < deadline:
                try:
                    inst._write_config(SETTING[server].format(4 + written % 8))
                    written += 1
                except AdvisorError as e:  # the link was there when root looked
                    assert isinstance(e, PlantedFile), e
                    assert str(include) in e.message
                    assert "owned by uid" in e.message and "\n" not in e.message
                    refused += 1
        finally:
            stop.touch()
            out, err = attacker.communicate(timeout=30)
            stop.unlink()
            stop.parent.rmdir()
        assert int(out.strip() or 0) > 0, err  # the attacker did swap links in
        assert written + refused >= 50
        os.unlink(include)
        inst.start("")  # the instance still works once the link is gone
        inst.stop()
    assert state(canary) == before


def test_a_fifo_in_place_of_the_include_is_refused_in_one_line_and_the_tree_kept(
        as_server_user):
    """A FIFO where root writes a file: refused before anything opens it (no blocked root),
    one line naming path and owner; the instance is stopped, its data left for inspection."""
    with create_instance(find_server("pg-debian")) as inst:
        inst.initialize()
        inst.start("")
        inst.stop()
        run_as(as_server_user, "import os, sys; os.unlink(sys.argv[1]); os.mkfifo(sys.argv[1])",
               str(inst.data_dir / "pmem-advisor.conf"))
        with pytest.raises(PlantedFile) as got:
            inst.start("shared_buffers = '32MB'\n")
        msg = got.value.message
        assert msg.startswith(f"refusing to use {inst.data_dir / 'pmem-advisor.conf'}: it is a "
                              f"FIFO owned by uid {as_server_user.pw.pw_uid}"), msg
        assert not inst.is_running()
        assert got.value.exit_code == 3
        inst.destroy()
        try:  # kept: the data (PG_VERSION), the FIFO and the log are all still there
            assert (inst.data_dir / "PG_VERSION").is_file()
            assert stat.S_ISFIFO((inst.data_dir / "pmem-advisor.conf").lstat().st_mode)
            assert inst.log_path.is_file()
        finally:
            forget_kept(inst)


def test_a_fifo_planted_in_the_data_directory_stops_the_golden_copy(as_server_user):
    """The snapshot walks the server's tree by descriptor: a FIFO (which would block a
    reader, or ``cp`` as root) is refused with its path and owner, nothing is copied on."""
    with create_instance(find_server("pg-debian")) as inst:
        inst.initialize()
        fifo = inst.data_dir / "base" / "trap"
        run_as(as_server_user, "import os, sys; os.mkfifo(sys.argv[1])", str(fifo))
        with pytest.raises(PlantedFile) as got:
            inst.snapshot("golden")
        assert f"refusing to use {fifo}: it is a FIFO owned by uid" in got.value.message
        assert not inst.has_snapshot("golden")
        inst.destroy()
        assert fifo.parent.is_dir()  # kept for inspection
        forget_kept(inst)


SWAP_RACE = r"""
import os, sys
tree, victim, stop = sys.argv[1:4]
sub, aside = os.path.join(tree, "sub"), os.path.join(tree, "sub.real")
n = 0
while not os.path.exists(stop):
    try:
        os.rename(sub, aside)
        os.symlink(victim, sub)
        os.unlink(sub)
        os.rename(aside, sub)
        n += 1
    except OSError:
        pass
print(n)
"""


@pytest.mark.parametrize("walk", ["copy", "chown"])
def test_a_directory_swapped_for_a_link_mid_walk_is_never_followed(as_server_user, canary,
                                                                  tmp_path, walk):
    """The server's user swaps a subdirectory of its tree for a link to root's directory and
    back, in a loop, while root copies (golden copy) or chowns (hand-over) the tree: root's
    files keep owner, mode and content, and no copy ever holds the canary's bytes."""
    from pmem_advisor.fileio import chown_tree_fd, copy_tree_fd

    user = as_server_user
    owner = (user.pw.pw_uid, user.pw.pw_gid)
    tree = Path(tempfile.mkdtemp(prefix="server-tree-", dir=user.base))
    os.chown(tree, *owner)
    run_as(user, """
import os, sys
for i in range(30):
    os.makedirs(os.path.join(sys.argv[1], "sub", "d%d" % i))
    open(os.path.join(sys.argv[1], "sub", "d%d" % i, "canary"), "w").write("the user's\\n")
""", str(tree))
    before = state(canary)
    stop = Path(tempfile.mkdtemp(prefix="swap-stop-", dir="/var/tmp")) / "stop"
    stop.parent.chmod(0o755)
    attacker = subprocess.Popen(
        [user.python, "-c", SWAP_RACE, str(tree), str(canary.parent), str(stop)],
        user=user.pw.pw_uid, group=user.pw.pw_gid, extra_groups=[], cwd="/",
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    refused = done = 0
    try:
        for i in range(150):
            try:
                if walk == "copy":
                    dst = tmp_path / f"copy{i}"
                    dst.mkdir()
                    copy_tree_fd(tree, dst, owner, src_owners=(owner[0],))
                    for p in dst.rglob("*"):
                        if p.is_file() and not p.is_symlink():
                            assert p.read_bytes() != CANARY_TEXT, p
                else:
                    chown_tree_fd(tree, owner)
                done += 1
            except (PlantedFile, FileNotFoundError, FileExistsError):
                refused += 1  # the swap was seen: refused, nothing followed
    finally:
        stop.touch()
        out, err = attacker.communicate(timeout=30)
        stop.unlink()
        stop.parent.rmdir()
    assert int(out.strip() or 0) > 0, err
    assert done + refused == 150
    assert state(canary) == before


def test_a_planted_link_where_root_hands_a_directory_over_is_refused(as_server_user, canary):
    """hand_over by descriptor: a link at the name (here to root's directory) is PlantedFile,
    and the link's target keeps its owner and mode."""
    user = as_server_user
    tree = Path(tempfile.mkdtemp(prefix="server-tree-", dir=user.base))
    os.chown(tree, user.pw.pw_uid, user.pw.pw_gid)
    run_as(user, "import os, sys; os.symlink(sys.argv[2], os.path.join(sys.argv[1], 'sock'))",
           str(tree), str(canary.parent))
    before = canary.parent.stat()
    with pytest.raises(PlantedFile) as got:
        privileges.hand_over(tree / "sock", privileges.server_user())
    assert "it is a symbolic link owned by uid" in got.value.message
    after = canary.parent.stat()
    assert (after.st_uid, after.st_mode) == (before.st_uid, before.st_mode)


def test_the_refusal_names_path_kind_and_owner_in_one_line_with_exit_code_3(tmp_path):
    """PlantedFile is an AdvisorError (the CLI prints its one line, exits 3): path, kind and
    owner of what was found, and what root expected there."""
    from pmem_advisor.fileio import planted

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    err = planted(str(fifo), os.lstat(fifo), "a regular file")
    assert isinstance(err, AdvisorError) and err.exit_code == 3
    me = os.getuid()  # whoever runs the tests made the FIFO
    assert err.message == (f"refusing to use {fifo}: it is a FIFO owned by uid {me} "
                           f"({pwd.getpwuid(me).pw_name}), "
                           "not a regular file")
