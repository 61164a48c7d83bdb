"""The one line a command prints on standard error for each thing it could not do, and
for the page it wrote."""

from __future__ import annotations

import sys
from collections.abc import Callable

from stagetimer._escape import escape_text

__all__ = ["PROG", "error", "write_html"]

PROG = "stagetimer"


def error(command: str, message: str) -> None:
    """``stagetimer COMMAND: MESSAGE`` on standard error (``stagetimer: MESSAGE`` without one).

    The message is made safe to print here (``escape_text``, which leaves text already
    escaped as it is): it names paths and stages from the files.
    """
    where = f"{PROG} {command}" if command else PROG
    print(f"{where}: {escape_text(message)}", file=sys.stderr)


def write_html(command: str, path: str, render: Callable[[], str]) -> bool:
    """Write the page ``render`` makes to ``path`` (``--html``) and say so; False after
    saying why it could not be written."""
    from stagetimer._render.html.page import write_page

    try:
        write_page(path, render())
    except OSError as exc:
        error(command, f"--html {path}: {exc.strerror or exc}")
        return False
    print(f"page written to {path}", file=sys.stderr)
    return True
