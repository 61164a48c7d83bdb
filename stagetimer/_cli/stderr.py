"""The one line a command prints on standard error for each thing it could not do."""

from __future__ import annotations

import sys

from stagetimer._escape import escape_text

__all__ = ["PROG", "error"]

PROG = "stagetimer"


def error(command: str, message: str) -> None:
    """``stagetimer COMMAND: MESSAGE`` on standard error (``stagetimer: MESSAGE`` without one).

    The message is made safe to print here (``escape_text``, which leaves text already
    escaped as it is): it names paths and stages from the files.
    """
    where = f"{PROG} {command}" if command else PROG
    print(f"{where}: {escape_text(message)}", file=sys.stderr)
