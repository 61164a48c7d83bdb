"""One attempt of a recorded stage as it runs: its started marker, and how it ended.

``prepare`` and ``write`` make the marker (``stagetimer._store.markers``) as a recorded stage is
entered; the finished run carries the attempt's id and the saver removes the marker
once that run is published; ``fail`` replaces it by one that says how the block ended.
A recorder calls them through its ``AttemptMarkers`` (``attempt_markers.py``).
"""

from __future__ import annotations

import os
import signal
from types import TracebackType
from typing import Any

from stagetimer._format import MARKER_FORMAT
from stagetimer._record.pending import known_identity, utc_iso
from stagetimer._store import markers
from stagetimer._store.owner import this_process

__all__ = ["Started", "fail", "outcome_of", "prepare", "type_name", "write"]


class Started:
    """An attempt whose marker was written: its id, where, and what the marker says.

    ``stored``: its run reached ``timings.json`` (set by the saver before the run leaves
    the pending list, so that an attempt is never both finished and failed). ``pid``:
    the process whose attempt it is; a forked child that leaves the parent's block does
    not own the parent's marker.
    """

    __slots__ = ("began", "directory", "id", "marker", "pid", "stored")

    def __init__(
        self, directory: str, attempt_id: str, marker: dict[str, Any], began: float
    ) -> None:
        self.directory = directory
        self.id = attempt_id
        self.marker = marker
        self.began = began  # the Unix time it started at
        self.pid = os.getpid()
        self.stored = False


def prepare(
    directory: str,
    name: str,
    run_idx: int | None,
    label: str | None,
    started_at: float,
    heartbeat: float | None,
    parent: dict[str, str] | None = None,
) -> Started:
    """A new attempt of stage ``name``: its id and marker, not yet written (``write``);
    ``parent``: the stage open around it (``{"stage", "attempt_id"}``) or None."""
    attempt_id = markers.new_attempt_id()
    marker: dict[str, Any] = {
        "format": MARKER_FORMAT,
        "attempt_id": attempt_id,
        "stage": name,
        "run_idx": run_idx,
        "label": label,
        "started_at": utc_iso(started_at),
        "writer": this_process(),
        **known_identity(),
        "heartbeat": heartbeat,
        "parent": parent,
    }
    return Started(directory, attempt_id, marker, started_at)


def write(started: Started) -> None:
    """Write the started marker (``OSError`` when it cannot be: nothing is left then)."""
    markers.create(started.directory, started.id, markers.encode(started.marker))


def _handler_codes() -> set[Any]:
    """The code objects of the Python functions installed as signal handlers now."""
    codes = set()
    for signum in signal.valid_signals():
        try:
            handler = signal.getsignal(signum)
        except (ValueError, OSError):
            continue
        code = getattr(handler, "__code__", None)
        if code is not None:
            codes.add(code)
    return codes


def outcome_of(exc_type: type[BaseException], tb: TracebackType | None) -> str:
    """``"interrupted"`` for ``KeyboardInterrupt``, ``SystemExit`` (and any other
    ``BaseException`` that is no ``Exception``) or an exception raised inside a
    function installed as a signal handler; ``"raised"`` otherwise."""
    if not issubclass(exc_type, Exception):
        return "interrupted"
    codes = _handler_codes() if tb is not None else set()
    while tb is not None:
        if tb.tb_frame.f_code in codes:
            return "interrupted"
        tb = tb.tb_next
    return "raised"


def type_name(exc_type: type[BaseException]) -> str:
    """``KeyboardInterrupt``, ``torch.OutOfMemoryError``: the qualified name, without the
    module for built-in exceptions."""
    module = getattr(exc_type, "__module__", None)
    name = getattr(exc_type, "__qualname__", None) or exc_type.__name__
    return name if module in (None, "builtins") else f"{module}.{name}"


def fail(
    started: Started,
    exc_type: type[BaseException] | None,
    tb: TracebackType | None,
    seconds: float,
    ended_at: float,
) -> None:
    """Replace the marker of an attempt whose block raised or was interrupted by one
    that says so: ``ended_at``, ``seconds``, ``outcome`` and the exception's type name
    (never its message); ``exc_type`` None: interrupted by no exception known (its
    process ended while the block was open). ``OSError`` when it cannot be replaced."""
    marker = dict(started.marker)
    marker["ended_at"] = utc_iso(ended_at)
    marker["seconds"] = seconds
    marker["outcome"] = "interrupted" if exc_type is None else outcome_of(exc_type, tb)
    marker["exception"] = None if exc_type is None else type_name(exc_type)
    markers.replace(started.directory, started.id, markers.encode(marker))
