"""Help a DBA reads: -h and `help`, an example block in every command's help (each example
parses against the real command tree), one spelling of the target version, -q/-v after the
subcommand, man pages generated from the CLI that `man` opens, completion scripts that bash
loads; an install without write access says where and how to do it by hand."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from pmem_advisor.cli.examples import EXAMPLES
from pmem_advisor.errors import EXIT_ENVIRONMENT, EXIT_USAGE


def _leaf_paths():
    from pmem_advisor.cli.main import build_command

    def walk(cmd, path=()):
        yield path, cmd
        for name, sub in (getattr(cmd, "commands", None) or {}).items():
            yield from walk(sub, (*path, name))

    return dict(walk(build_command()))


def test_every_command_has_examples_in_its_help(run_cli):
    for path in _leaf_paths():
        assert EXAMPLES.get(" ".join(path)), f"no examples for {' '.join(path) or 'the tool'}"
        code, out, _ = run_cli(*path, "-h")
        assert code == 0 and "Examples:" in out, path
        assert EXAMPLES[" ".join(path)][0] in out, path


def test_every_example_parses_against_the_command_tree():
    """The words before a pipe, redirection or comment, parsed by the real commands (option
    names, choices and --format values checked; nothing runs)."""
    from pmem_advisor.cli.main import build_command

    root = build_command()
    for key, examples in EXAMPLES.items():
        for example in examples:
            words = []
            for word in shlex.split(example, comments=True):
                if word in ("|", ">", ">>", "&&"):
                    break
                words.append(word)
            assert words[0] == "pmem-advisor", example
            ctx = root.make_context("pmem-advisor", words[1:], resilient_parsing=False)
            args = [*ctx._protected_args, *ctx.args] if hasattr(ctx, "_protected_args") \
                else [*getattr(ctx, "protected_args", []), *ctx.args]
            cmd = root
            while getattr(cmd, "commands", None) and args:
                name, cmd, args = cmd.resolve_command(ctx, args)
                ctx = cmd.make_context(name, list(args), parent=ctx)
                args = [*getattr(ctx, "_protected_args", []), *ctx.args]
            # a group's examples show its subcommands: the path starts with the group's
            assert " ".join(ctx.command_path.split()[1:]).startswith(key), example


def test_help_command_and_dash_h(run_cli):
    code, out, _ = run_cli("help", "config", "validate")
    assert code == 0 and "config validate" in out and "--format" in out
    code, out, _ = run_cli("-h")
    assert code == 0 and "recommend" in out and "help" in out
    code, out, err = run_cli("help", "nonsense")
    assert code == EXIT_USAGE and out == "" and "recommend" in err


def test_one_spelling_for_the_target_version(run_cli):
    """--version everywhere a target is named; --server-version still works, unseen."""
    for path, command in _leaf_paths().items():
        opts = {o for p in command.params for o in getattr(p, "opts", ())}
        if "--server-version" in opts:
            assert "--version" in opts, path
            _, out, _ = run_cli(*path, "-h")
            assert "--server-version" not in out, path
    _, new, _ = run_cli("knobs", "postgres", "--version", "15", "--format", "tsv")
    _, old, _ = run_cli("knobs", "postgres", "--server-version", "15", "--format", "tsv")
    assert new == old and "shared_buffers" in new
    code, _, err = run_cli("knobs", "postgres", "--version", "15", "--server-version", "18")
    assert code == EXIT_USAGE and "contradict" in err


def test_global_options_after_the_subcommand(run_cli):
    code, out, err = run_cli("knobs", "postgres", "--version", "15", "-q")
    assert code == 0 and err == "" and "shared_buffers" in out
    code, _, err = run_cli("knobs", "postgres", "--version", "15", "-v")
    assert code == 0 and "server facts" in err
    code, _, err = run_cli("-q", "knobs", "postgres", "-v")
    assert code == EXIT_USAGE and "exclude" in err


# ---------------------------------------------------------------- man pages
def _man(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    if not shutil.which("man"):
        pytest.skip("man (Debian man-db) is not installed")
    return subprocess.run(["man", *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "MANPAGER": "cat", "PAGER": "cat",
                               "MANWIDTH": "100", **(env or {})})


def test_man_pages_are_generated_for_every_command_and_open(tmp_path):
    from pmem_advisor.cli.manpage import main, pages

    generated = pages()
    for path in _leaf_paths():
        assert "-".join(("pmem-advisor", *path)) + ".1" in generated
    assert main(["--install", str(tmp_path)]) == 0
    r = _man("-M", str(tmp_path), "pmem-advisor-check")
    assert r.returncode == 0, r.stderr
    text = r.stdout
    assert "PMEM-ADVISOR-CHECK(1)" in text and "--format text|json|junit" in text
    assert "EXAMPLES" in text and "pmem-advisor check --dsn-file" in text
    assert "EXIT STATUS" in text and "--server-version" not in text
    r = _man("-l", str(tmp_path / "man1" / "pmem-advisor.1"))
    assert r.returncode == 0 and "pmem-advisor-recommend(1)" in r.stdout


def test_make_install_put_the_man_page_where_man_finds_it():
    if os.geteuid() != 0:
        pytest.skip("make install writes system-wide man pages only as root")
    page = Path("/usr/local/share/man/man1/pmem-advisor-check.1")
    if not page.is_file():
        pytest.skip("make install has not been run on this machine")
    r = _man("pmem-advisor-check")
    assert r.returncode == 0 and "PMEM-ADVISOR-CHECK(1)" in r.stdout


def test_install_without_write_access_says_where_and_how(other_user, cli_as_other_user):
    # root writes anywhere, so no write access needs another user (skipped where impossible)
    tmp_path = other_user.tmpdir()  # pytest's tmp_path lies in a 0700 directory
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o755)  # root's: nobody cannot write here
    r = cli_as_other_user("-m", "pmem_advisor.cli.manpage", "--install", str(locked),
                          cwd=tmp_path)
    assert r.returncode == EXIT_ENVIRONMENT and r.stdout == "", r.stderr
    assert str(locked / "man1") in r.stderr and "by hand" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = cli_as_other_user("-m", "pmem_advisor", "completion", "install", "bash", "--dir",
                          str(locked), cwd=tmp_path)
    assert r.returncode == EXIT_ENVIRONMENT and r.stdout == "", r.stderr
    assert str(locked) in r.stderr and "completion show bash >" in r.stderr
    assert "Traceback" not in r.stderr


# ---------------------------------------------------------------- completion
@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts(run_cli, shell):
    code, out, _ = run_cli("completion", "show", shell)
    assert code == 0 and "_PMEM_ADVISOR_COMPLETE" in out


def test_completion_install_is_loaded_by_bash(run_cli, tmp_path):
    code, out, err = run_cli("completion", "install", "bash", "--dir", str(tmp_path))
    assert code == 0, err
    script = Path(out.strip())
    assert script == tmp_path / "pmem-advisor"
    r = subprocess.run(["bash", "-c", f"source {shlex.quote(str(script))} && "
                        "complete -p pmem-advisor"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and "pmem-advisor" in r.stdout, r.stderr
    code, _, err = run_cli("completion", "install", "tcsh")
    assert code == EXIT_USAGE and "bash, zsh, fish" in err
