"""Text that is only text on a terminal: control characters and bidi overrides become
visible escapes, so a value read from a file cannot move the cursor, retitle the terminal or
hide text (cli/output.py's contract; every console string passes through here)."""

from __future__ import annotations

import errno
import re
from typing import Any

from rich.console import Console
from rich.text import Text

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _visible(m: re.Match) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def safe_text(text: object) -> str:
    """``text`` with every control character (but tab and newline) and bidi override made a
    visible escape: what a terminal shows, never what it obeys."""
    return _UNSAFE.sub(_visible, str(text))


class SafeConsole(Console):
    """A rich Console that renders every string through ``safe_text`` (prints and table cells
    alike) and, unless a caller asks for it with its own escaping, no markup."""

    def on_broken_pipe(self) -> None:
        """rich would exit 1 here; a reader that went away (``| head``) is main()'s to end,
        with exit 0 (see cli.main)."""
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, "the reader of the output went away")

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(safe_text(text), **kwargs)

    def print(self, *objects: Any, **kwargs: Any) -> None:  # noqa: A003 - rich's name
        objects = tuple(_safe_text_object(o) for o in objects)
        super().print(*objects, **kwargs)


def _safe_text_object(o: Any) -> Any:
    if isinstance(o, Text) and _UNSAFE.search(o.plain):
        o = o.copy()
        o.plain = _UNSAFE.sub("?", o.plain)  # same length: the styles keep their places
    return o


def styled(text: object, style: str) -> Text:
    """Coloured text that is still only text (no markup is parsed from ``text``)."""
    return Text(_UNSAFE.sub("?", str(text)), style=style)


def plain_text(cell: Any) -> str:
    """A table cell as plain, safe text (a ``styled`` cell loses its colour; a string is shown
    as it is: no markup is parsed from it)."""
    if cell is None:
        return ""
    if isinstance(cell, Text):
        return safe_text(cell.plain)
    return safe_text(cell)
