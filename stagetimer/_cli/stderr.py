"""The one line a command prints on standard error for each thing it could not do, and
for the page it wrote."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TypeVar

from stagetimer._escape import escape_text

__all__ = ["PROG", "error", "errors", "html_refused", "read_or_say", "write_html"]

_T = TypeVar("_T")

PROG = "stagetimer"


def error(command: str, message: str) -> None:
    """``stagetimer COMMAND: MESSAGE`` on standard error (``stagetimer: MESSAGE`` without one).

    The message is made safe to print here (``escape_text``, which leaves text already
    escaped as it is): it names paths and stages from the files.
    """
    where = f"{PROG} {command}" if command else PROG
    print(f"{where}: {escape_text(message)}", file=sys.stderr)


def errors(command: str, messages: list[str]) -> bool:
    """One ``error`` line for each of ``messages``; whether there was one."""
    for message in messages:
        error(command, message)
    return bool(messages)


def read_or_say(command: str, path: str, read: Callable[[], _T]) -> _T | None:
    """What ``read()`` returns, or None after one line naming what could not be read
    (``path``: where the reading began)."""
    from stagetimer._analysis.tree import read_problem
    from stagetimer._errors import SchemaVersionError, SidecarCorruptError

    try:
        return read()
    except (OSError, SidecarCorruptError, SchemaVersionError) as exc:
        error(command, read_problem(exc, path).line())
        return None


def html_refused(command: str, path: str | None) -> bool:
    """Whether ``--html PATH`` cannot be written, after saying why (before any work)."""
    if path is None:
        return False
    from stagetimer._render.html.page import check_path

    if (problem := check_path(path)) is None:
        return False
    error(command, f"--html {path}: {problem}")
    return True


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
