"""Man pages generated from the command tree: ``pmem-advisor(1)`` and one page per command
(``pmem-advisor-check(1)``, ``pmem-advisor-config-parse(1)``), so ``man`` shows exactly the
options the CLI accepts, with the examples of ``cli/examples.py``.

    python -m pmem_advisor.cli.manpage --out build/man     # build time: build/man/man1/*.1
    python -m pmem_advisor.cli.manpage --install [MANDIR]  # make install: MANDIR/man1
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pmem_advisor import __version__
from pmem_advisor.cli.examples import examples_for

PROG = "pmem-advisor"
EXIT_STATUS = [
    ("0", "success"),
    ("1", "findings (check), or a config the server adjusted or rejected (config validate)"),
    ("2", "bad usage or input"),
    ("3", "environment problem: a server, tool, extra or device missing or failed"),
    ("70", "internal error (a bug; PMEM_ADVISOR_DEBUG=1 shows the traceback)"),
    ("130", "interrupted"),
    ("143", "terminated (SIGTERM)"),
]


def escape(text: str) -> str:
    """Text safe in roff: backslashes and hyphens escaped, no line read as a request."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join("\\&" + ln if ln[:1] in (".", "'") else ln for ln in text.splitlines())


def _walk(command: Any, path: tuple[str, ...] = ()):
    yield path, command
    for name, sub in (getattr(command, "commands", None) or {}).items():
        if not getattr(sub, "hidden", False):
            yield from _walk(sub, (*path, name))


def page_name(path: tuple[str, ...]) -> str:
    return "-".join((PROG, *path))


def render_page(path: tuple[str, ...], command: Any, root: Any) -> str:
    """One man page (roff) for the command at ``path``."""
    from typer._click import Context

    ctx = Context(root, info_name=PROG)
    for name in path:
        ctx = Context(ctx.command.commands[name], info_name=name, parent=ctx)
    name = page_name(path)
    date = datetime.fromtimestamp(int(os.environ.get("SOURCE_DATE_EPOCH", "0")) or
                                  datetime.now(UTC).timestamp(), UTC).strftime("%Y-%m-%d")
    help_text = (command.help or "").split("\f")[0].strip()
    summary = (help_text.split("\n\n")[0].replace("\n", " ") or name).rstrip(".")
    lines = [f'.TH "{name.upper()}" "1" "{date}" "{PROG} {__version__}" "User Commands"',
             ".SH NAME", f"{escape(name)} \\- {escape(summary)}", ".SH SYNOPSIS",
             f".B {escape(' '.join((PROG, *path)))}",
             escape(" ".join(command.collect_usage_pieces(ctx))), ".SH DESCRIPTION"]
    for paragraph in help_text.split("\n\n"):
        lines += [escape(" ".join(paragraph.split())), ".PP"]
    lines.pop()
    options = [p.get_help_record(ctx) for p in command.get_params(ctx)]
    options = [o for o in options if o]
    if options:
        lines.append(".SH OPTIONS")
        for opts, help_ in options:
            lines += [".TP", f"\\fB{escape(opts)}\\fR", escape(" ".join(help_.split()))]
    subs = [(n, c) for n, c in (getattr(command, "commands", None) or {}).items()
            if not getattr(c, "hidden", False)]
    if subs:
        lines.append(".SH COMMANDS")
        for sub_name, sub in subs:
            lines += [".TP", f"\\fB{escape(sub_name)}\\fR",
                      escape(sub.get_short_help_str(limit=200)),
                      f"See \\fB{escape(page_name((*path, sub_name)))}\\fR(1)."]
    examples = examples_for(" ".join(path))
    if examples:
        lines += [".SH EXAMPLES", ".nf", ".RS 4"] + [escape(e) for e in examples] + \
            [".RE", ".fi"]
    if not path or name == f"{PROG}-check":
        lines.append(".SH EXIT STATUS")
        for code, meaning in EXIT_STATUS:
            lines += [".TP", f"\\fB{code}\\fR", escape(meaning)]
    if not path:
        lines += [".SH STREAMS", escape(
            "Results (tables, JSON, config text, SQL) go to standard output; progress, notes "
            "and warnings to standard error. Piped tables are one row per line and never "
            "wrapped; --format tsv|json where a command prints a table.")]
    see = sorted({page_name(p) for p, _ in _walk(root)} - {name})
    lines += [".SH SEE ALSO", ",\n".join(f"\\fB{escape(s)}\\fR(1)" for s in see)]
    return "\n".join(lines) + "\n"


def pages() -> dict[str, str]:
    """Every page: file name (``pmem-advisor-check.1``) -> roff text."""
    from pmem_advisor.cli.main import build_command

    root = build_command()
    return {page_name(path) + ".1": render_page(path, command, root)
            for path, command in _walk(root)}


def default_mandir() -> Path:
    """/usr/local/share/man for root (in man's default path); the user's own otherwise."""
    if os.geteuid() == 0:
        return Path("/usr/local/share/man")
    data = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local/share")
    return data / "man"


def main(argv: list[str] | None = None) -> int:
    from pmem_advisor.cli.completion import install_files
    from pmem_advisor.errors import AdvisorError

    parser = argparse.ArgumentParser(prog="python -m pmem_advisor.cli.manpage",
                                     description="Generate or install pmem-advisor's man pages.")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--out", metavar="DIR", help="write DIR/man1/*.1")
    group.add_argument("--install", metavar="MANDIR", nargs="?", const="",
                       help="install into MANDIR/man1 (default: /usr/local/share/man as root, "
                       "~/.local/share/man otherwise)")
    args = parser.parse_args(argv)
    generated = pages()
    base = Path(args.out if args.out is not None else (args.install or default_mandir()))
    target = base.expanduser() / "man1"
    by_hand = (f"python3 -m pmem_advisor.cli.manpage --out /tmp/pmem-man && sudo cp "
               f"/tmp/pmem-man/man1/*.1 {target}/")
    try:
        written = install_files(target, generated, by_hand)
    except AdvisorError as e:
        sys.stderr.write(f"pmem-advisor: error: {e}\n")
        return e.exit_code
    print(f"{len(written)} man pages in {target}" +
          ("" if args.out else f" (try: man {PROG}-check)"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
