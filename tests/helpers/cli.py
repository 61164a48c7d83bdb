"""Running the command line in tests: in this process where only its behaviour matters,
as a real process where the process is the point (the installed script's exit status,
``python -m stagetimer``, a closed or full standard output, another environment)."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, NamedTuple

__all__ = ["LAUNCHERS", "Ran", "run_cli", "run_process", "stagetimer_script"]

Arg = str | os.PathLike[str]


class Ran(NamedTuple):
    """What a run of the command line gave: its exit status and its two outputs."""

    returncode: int
    stdout: str
    stderr: str


def run_cli(*args: Arg, cwd: Path | None = None) -> Ran:
    """``stagetimer ARGS`` in this process (``stagetimer._cli.main``), its output captured.

    Standard output encodes as a UTF-8 terminal's does (a lone surrogate is an error, as
    there) and standard error with backslash escapes, as Python sets them up.
    """
    from stagetimer._cli import main

    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict", newline="\n")
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace",
                           newline="\n")
    with _working_directory(cwd), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        status = main([os.fspath(a) for a in args])
    return Ran(status, _text(out), _text(err))


def _text(stream: io.TextIOWrapper) -> str:
    stream.flush()
    buffer = stream.buffer
    assert isinstance(buffer, io.BytesIO)
    return buffer.getvalue().decode("utf-8")


@contextlib.contextmanager
def _working_directory(cwd: Path | None) -> Iterator[None]:
    """``cwd`` as the working directory for the duration (contextlib.chdir is 3.11+)."""
    if cwd is None:
        yield
        return
    before = os.getcwd()
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(before)


def stagetimer_script() -> str:
    """The installed ``stagetimer`` console script (beside this Python, else on PATH)."""
    beside = Path(sys.executable).with_name("stagetimer")
    found = str(beside) if beside.exists() else shutil.which("stagetimer")
    assert found, "the stagetimer console script is not installed"
    return found


#: the two ways a person starts the command line
LAUNCHERS = {
    "script": lambda: [stagetimer_script()],
    "python -m": lambda: [sys.executable, "-m", "stagetimer"],
}


def run_process(
    *args: Arg,
    launcher: str = "script",
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    stdout: int | IO[bytes] | None = subprocess.PIPE,
    timeout: float = 120,
) -> Ran:
    """``stagetimer ARGS`` as a real process started by ``launcher`` (a key of
    ``LAUNCHERS``); ``stdout`` may be a descriptor or file to write into instead."""
    done = subprocess.run(
        [*LAUNCHERS[launcher](), *map(os.fspath, args)],
        stdout=stdout, stderr=subprocess.PIPE, text=True, cwd=cwd, env=env, timeout=timeout,
    )
    return Ran(done.returncode, done.stdout or "", done.stderr)
