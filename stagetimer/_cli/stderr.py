"""The one line a command prints on standard error for each thing it could not do."""

from __future__ import annotations

import sys

__all__ = ["PROG", "error"]

PROG = "stagetimer"


def error(command: str, message: str) -> None:
    """``stagetimer COMMAND: MESSAGE`` on standard error (``stagetimer: MESSAGE`` without one)."""
    where = f"{PROG} {command}" if command else PROG
    print(f"{where}: {message}", file=sys.stderr)
