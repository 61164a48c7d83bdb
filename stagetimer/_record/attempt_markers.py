"""A recorder's started markers: one per attempt of a recorded stage, from its entry to its end.

``stage.py`` asks the recorder's ``AttemptMarkers`` for a new attempt (``begin``),
writes its marker before the block runs (``mark``), removes it again when the entry is
interrupted (``abandon``) and, when the block raised or the exit was interrupted, has it
say so (``failed``). A finished run's marker is the saver's to remove, once the run is
stored. What a marker holds and how it ends: ``attempt.py``; its heartbeats:
``heartbeat.py``.

An attempt whose marker was written is *open* (``open_attempts``) until its run is
handed over, or its marker says it failed, or its entry is abandoned. One still open
when the interpreter exits never reached its end: a framework's callback saw no end of
a fit that raised, or an interrupt came before ``Stage.__exit__`` ran its first line.
``settle_at_exit`` has its marker say so (with the exception that ended the program,
where one did), so that it reads as failed rather than killed.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING

import attrs

from stagetimer._record import attempt
from stagetimer._record import heartbeat as beats
from stagetimer._store import markers
from stagetimer._system import process_state

if TYPE_CHECKING:
    from stagetimer._record.attempt import Started
    from stagetimer._record.pending import Pending

__all__ = ["AttemptMarkers", "open_attempts", "settle_at_exit"]

#: this process's attempts whose marker is written and whose end is not yet known, by id
#: (set and popped by single dict steps: no lock an interrupt could leave held)
open_attempts: dict[str, Started] = {}


@attrs.define(eq=False)
class AttemptMarkers:
    """One recorder's started markers: the recorder's ``directory``, ``attempts`` and
    ``heartbeat`` settings (with the environment's: ``_settings.recorder_environment``);
    ``pending``: its pending records (its saver's list, followed after fork); ``warn``:
    its warning, given once for markers that cannot be written."""

    directory: str
    attempts: bool
    heartbeat: float | None
    pending: list[Pending]
    warn: Callable[[str], None]
    _warned: bool = attrs.field(default=False, init=False)

    def holds(self, started: Started) -> bool:
        """Whether the run of attempt ``started`` was handed over (pending or saved)."""
        return started.stored or any(p.attempt is started for p in self.pending)

    def begin(
        self,
        name: str,
        run_idx: int | None,
        label: str | None,
        started_at: float,
        parent: dict[str, str] | None = None,
    ) -> Started | None:
        """A stage's new attempt (its marker not yet written: ``mark``); None when
        markers are off (``attempts=False``, ``STAGETIMER_ATTEMPTS=0``). ``parent``: the
        stage open around it (``{"stage", "attempt_id"}``), None where none."""
        if not self.attempts:
            return None
        return attempt.prepare(
            self.directory, name, run_idx, label, started_at, self.heartbeat, parent
        )

    def mark(self, started: Started) -> bool:
        """Write ``started``'s marker and start its heartbeats (when asked); False when
        it could not be written (one warning per recorder; the stage still runs and is
        recorded)."""
        try:
            attempt.write(started)
        except Exception as exc:  # OSError, or a label JSON will not take: no marker
            self._warn_once(exc)
            return False
        open_attempts[started.id] = started
        interval = started.marker["heartbeat"]
        if interval is not None:
            beats.start(started.id, started.directory, interval)
        return True

    def handed_over(self, started: Started) -> None:
        """``started``'s run is pending: its end is known; its heartbeats stop."""
        open_attempts.pop(started.id, None)
        beats.stop(started.id)

    def abandon(self, started: Started | None) -> None:
        """An entry interrupted before its block ran: its marker goes (never raises)."""
        if started is not None:
            open_attempts.pop(started.id, None)
            beats.stop(started.id)
            try:
                markers.remove(started.directory, [started.id])
            except Exception as exc:
                self._warn_once(exc)

    def failed(
        self,
        started: Started,
        exc_type: type[BaseException] | None,
        tb: TracebackType | None,
        seconds: float,
        ended_at: float | None = None,
    ) -> None:
        """A stage whose block raised, was interrupted, or whose record was never handed
        over: its marker says so, unless its run is pending or saved (then it finished).
        ``exc_type`` None: interrupted by no exception known; ``ended_at``: when it ended
        (a Unix time), if not now. Never raises an error of its own: the caller's
        exception propagates."""
        open_attempts.pop(started.id, None)
        beats.stop(started.id)
        if started.pid != os.getpid() or self.holds(started):
            return
        try:
            attempt.fail(
                started, exc_type, tb, seconds, time.time() if ended_at is None else ended_at
            )
        except Exception as exc:
            self._warn_once(exc)

    def _warn_once(self, exc: Exception) -> None:
        if not self._warned:
            self._warned = True
            self.warn(f"started markers cannot be written ({exc}); stages are still recorded")


def _uncaught() -> BaseException | None:
    """The exception that ended the program, where one did: the interpreter keeps the
    last one it printed as ``sys.last_exc`` (before 3.12 ``sys.last_value``); in an
    interactive session (IPython too) that is the last one shown."""
    found = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
    return found if isinstance(found, BaseException) else None


def settle_at_exit() -> list[str]:
    """At interpreter exit: each attempt of this process still open gets a marker that
    says it failed — ended by the exception that ended the program, else interrupted by
    none known. Returns what could not be written (one line each); never raises."""
    ended = _uncaught()
    exc_type = None if ended is None else type(ended)
    tb = None if ended is None else ended.__traceback__
    now = time.time()
    problems = []
    for started in list(open_attempts.values()):  # one C-level copy
        open_attempts.pop(started.id, None)
        if started.pid != os.getpid() or started.stored:
            continue  # a forked child's copy of its parent's attempt, or a finished one
        beats.stop(started.id)
        try:
            attempt.fail(started, exc_type, tb, max(now - started.began, 0.0), now)
        except Exception as exc:
            problems.append(f"{started.directory}: the marker of an open stage: {exc}")
    return problems


process_state.register_at_exit("record.attempt_markers", settle_at_exit)
