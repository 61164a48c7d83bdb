"""What the command line does to the process it owns: the collector off while a command
runs, and one line (exit status 1) when standard output cannot be written.

The library never touches either; a command owns its process, so it may.
"""

from __future__ import annotations

import contextlib
import gc
import io
import os
import sys
from collections.abc import Iterator
from typing import TextIO, cast

__all__ = ["OutputFailed", "collector_off", "stdout_guarded"]


@contextlib.contextmanager
def collector_off() -> Iterator[None]:
    """The cyclic garbage collector off while a command runs.

    The readers build millions of small objects (a dict per run, a suite holds hundreds
    of thousands of runs) and none of them is part of a cycle; every collection their
    allocations trigger walks all of them again, for nothing. What a command built is
    freed by reference counting when it returns. The collector is given back as it was
    found, for callers of ``main`` in their own process (the tests, the benchmarks).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class OutputFailed(Exception):
    """Standard output could not be written; ``.reason`` is the ``OSError``.

    Not an ``OSError`` itself, so that no command's ``except OSError`` (meant for the
    files it reads) mistakes it for its own, and argparse, which ignores an ``OSError``
    while printing ``--help``, lets it through.
    """

    def __init__(self, reason: OSError) -> None:
        super().__init__(str(reason))
        self.reason = reason


class _Guarded(io.TextIOBase):
    """``sys.stdout`` whose write errors are ``OutputFailed``."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as exc:
            raise OutputFailed(exc) from exc

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            raise OutputFailed(exc) from exc

    def fileno(self) -> int:
        return self._stream.fileno()

    def isatty(self) -> bool:
        return self._stream.isatty()

    @property
    def encoding(self) -> str:  # type: ignore[override]  # TextIOBase's is Any
        return self._stream.encoding


@contextlib.contextmanager
def stdout_guarded() -> Iterator[None]:
    """``sys.stdout`` raising ``OutputFailed`` for the duration; put back afterwards."""
    stream = sys.stdout
    sys.stdout = cast(TextIO, _Guarded(stream))
    try:
        yield
    except OutputFailed:
        _discard_pending(stream)
        raise
    finally:
        sys.stdout = stream


def _discard_pending(stream: TextIO) -> None:
    """Point the failed descriptor at /dev/null, so that the flush Python does at exit
    writes what is still buffered there instead of failing again with a traceback
    ("Exception ignored ... BrokenPipeError") and exit status 120.
    https://docs.python.org/3/library/signal.html#note-on-sigpipe
    """
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):  # an in-memory stream: nothing pending
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)
