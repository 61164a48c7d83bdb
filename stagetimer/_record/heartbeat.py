"""Heartbeats: the started markers of running stages touched every S seconds, when asked.

``Recorder(heartbeat=S)`` or ``STAGETIMER_HEARTBEAT=S``: while a stage runs, one daemon
thread per process (started at the first beating stage, gone once none beats) sets
its marker's modification time to now every S seconds, so that a reader on any host
can tell a writer that stopped beating (killed, its node gone) from one that runs.
Nothing beats unless asked: the library starts no thread of its own otherwise.

Each beat is ``utimensat`` on the marker's name through a descriptor of the markers'
directory opened without following links, and never follows a link at the name.
The files are touched outside the lock, so a stage's exit never waits for a beat's
I/O (a slow network file system).

``fork()``: the child starts with no beats and no thread (``os.register_at_fork``): a
stage the parent runs is the parent's to beat, also when the child leaves its block.
"""

from __future__ import annotations

import math
import os
import threading
import time

from stagetimer._errors import InvalidSettingError, short_repr
from stagetimer._format import MARKER_SUFFIX
from stagetimer._store.markers import DIRECTORY_FLAGS, attempts_path

__all__ = ["HEARTBEAT_ENV", "beating", "check_interval", "from_environment", "start", "stop"]

#: ``STAGETIMER_HEARTBEAT=S``: beat every S seconds (unset, empty or ``0``: no beats).
HEARTBEAT_ENV = "STAGETIMER_HEARTBEAT"


def check_interval(value: object, where: str = "heartbeat") -> float | None:
    """``None`` or the seconds between beats (a finite number > 0), else
    ``InvalidSettingError`` naming the value."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
        math.isfinite(value) and value > 0
    ):
        raise InvalidSettingError(
            f"{where} {short_repr(value)} is not valid: expected None or the seconds between "
            "beats, a finite number > 0",
            value,
        )
    return float(value)


def from_environment() -> float | None:
    """``STAGETIMER_HEARTBEAT`` as seconds (None when unset, empty or ``0``);
    ``InvalidSettingError`` naming the value for anything else than a number > 0."""
    raw = os.environ.get(HEARTBEAT_ENV, "").strip()
    if not raw or raw == "0":
        return None
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise InvalidSettingError(
            f"{HEARTBEAT_ENV}={raw!r} is not valid: expected the seconds between beats, "
            "a number > 0 (or 0 for none)",
            raw,
        )
    return value


class _Beats:
    """The markers this process beats: attempt id -> (artifact directory, interval,
    next beat on the monotonic clock), and the thread that beats them."""

    def __init__(self) -> None:
        # Re-entrant: a signal handler's stage may start beating while this thread is
        # inside ``start``.
        self.cond = threading.Condition(threading.RLock())
        self.due: dict[str, tuple[str, float, float]] = {}
        self.thread: threading.Thread | None = None


_beats = _Beats()


def start(attempt_id: str, directory: str, interval: float) -> None:
    """Beat the marker of ``attempt_id`` in ``directory`` every ``interval`` seconds."""
    beats = _beats
    with beats.cond:
        beats.due[attempt_id] = (directory, interval, time.monotonic() + interval)
        if beats.thread is None:
            beats.thread = threading.Thread(
                target=_run, args=(beats,), name="stagetimer-heartbeat", daemon=True
            )
            beats.thread.start()
        beats.cond.notify()


def stop(attempt_id: str) -> None:
    """No more beats for ``attempt_id`` (one atomic ``dict.pop``: no lock, no wait)."""
    _beats.due.pop(attempt_id, None)


def beating() -> set[str]:
    """The attempt ids this process beats now."""
    return set(_beats.due)


def _run(beats: _Beats) -> None:
    while True:
        with beats.cond:
            if not beats.due:
                beats.thread = None  # ``start`` makes a new one when a stage beats again
                return
            now = time.monotonic()
            soonest = min(due for _, _, due in beats.due.values())
            if soonest > now:
                beats.cond.wait(soonest - now)
                continue
            todo = []
            for attempt_id, (directory, interval, due) in list(beats.due.items()):
                if due <= now:
                    todo.append((attempt_id, directory))
                    beats.due[attempt_id] = (directory, interval, now + interval)
        for attempt_id, directory in todo:
            if attempt_id in beats.due:  # not stopped meanwhile
                _touch(directory, attempt_id)


def _touch(directory: str, attempt_id: str) -> None:
    """Set the marker's times to now; a marker or directory gone or refused is left."""
    try:
        dfd = os.open(attempts_path(directory), DIRECTORY_FLAGS)
    except OSError:
        return
    try:
        os.utime(attempt_id + MARKER_SUFFIX, dir_fd=dfd, follow_symlinks=False)
    except OSError:
        pass
    finally:
        os.close(dfd)


def _reset_after_fork() -> None:
    """A forked child beats nothing of its parent's, and has no beating thread."""
    global _beats
    _beats = _Beats()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)
