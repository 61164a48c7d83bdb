"""Heartbeats: the started markers of running stages touched every S seconds, when asked.

``Recorder(heartbeat=S)`` or ``STAGETIMER_HEARTBEAT=S``: while a stage runs, one daemon
thread per process (started at the first beating stage, gone once none beats) sets
its marker's modification time to now every S seconds, so that a reader on any host
can tell a writer that stopped beating (killed, its node gone) from one that runs.
Nothing beats unless asked: the library starts no thread of its own otherwise.

Each beat is ``utimensat`` on the marker's name through a descriptor of the markers'
directory opened without following links, and never follows a link at the name.
Starting and stopping beats take no lock, so a stage's entry and exit never wait for
a beat's I/O (a slow network file system), and an interrupt cannot leave one held.

``fork()``: the child starts with no beats and no thread (its reset after fork): a
stage the parent runs is the parent's to beat, also when the child leaves its block.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
import time

from stagetimer._format import MARKER_SUFFIX
from stagetimer._store.markers import DIRECTORY_FLAGS, attempts_path
from stagetimer._system import process_state

__all__ = ["beating", "start", "stop"]

class _Beats:
    """The markers this process beats: attempt id -> (artifact directory, interval,
    first beat on the monotonic clock), and the thread that beats them.

    No thread lock: an interrupt between a ``with lock:`` body and the call of the
    lock's ``__exit__`` leaves the lock held, and every other thread that starts a
    stage would then wait on it forever. Each step here is one atomic operation: a
    ``dict`` item set or popped, a ``SimpleQueue`` put or get (C calls).
    """

    def __init__(self) -> None:
        self.due: dict[str, tuple[str, float, float]] = {}
        self.wake: queue.SimpleQueue[None] = queue.SimpleQueue()  # a stage came or went
        # _RUNNER -> the beating thread: taken by ``setdefault``, given back by ``pop``.
        self.post: dict[str, threading.Thread] = {}


_RUNNER = "runner"
_beats = _Beats()


def start(attempt_id: str, directory: str, interval: float) -> None:
    """Beat the marker of ``attempt_id`` in ``directory`` every ``interval`` seconds."""
    beats = _beats
    beats.due[attempt_id] = (directory, interval, time.monotonic() + interval)
    beats.wake.put(None)
    runner = beats.post.get(_RUNNER)
    if runner is not None and runner.is_alive():
        return  # it sees the new marker on waking (it re-checks before it leaves)
    if runner is not None:  # never started (an interrupt), or gone: replace it
        beats.post.pop(_RUNNER, None)
    thread = threading.Thread(
        target=_run, args=(beats,), name="stagetimer-heartbeat", daemon=True
    )
    if beats.post.setdefault(_RUNNER, thread) is thread:
        thread.start()


def stop(attempt_id: str) -> None:
    """No more beats for ``attempt_id`` (atomic steps: no lock, no wait)."""
    beats = _beats
    if beats.due.pop(attempt_id, None) is not None:
        # Woken only for an attempt it beat: a stage without beats must leave nothing
        # behind in the queue (no thread may be there to take it).
        beats.wake.put(None)  # the thread leaves at once when nothing beats any more


def beating() -> set[str]:
    """The attempt ids this process beats now."""
    return set(_beats.due)


def _run(beats: _Beats) -> None:
    me = threading.current_thread()
    upcoming: dict[str, float] = {}  # attempt id -> its next beat (this thread's own)
    while beats.post.get(_RUNNER) is me:  # else another took over: leave it the work
        due = dict(beats.due)  # one atomic copy
        if not due:
            if _back_at_post(beats, me):
                continue
            return  # ``start`` makes a new one when a stage beats again
        upcoming = {key: upcoming.get(key, first) for key, (_, _, first) in due.items()}
        _beat_or_wait(beats, due, upcoming)


def _back_at_post(beats: _Beats, me: threading.Thread) -> bool:
    """Leave the post; take it again (True) when a stage that started meanwhile may have
    seen this thread at it."""
    beats.post.pop(_RUNNER, None)
    return bool(beats.due) and beats.post.setdefault(_RUNNER, me) is me


def _beat_or_wait(
    beats: _Beats, due: dict[str, tuple[str, float, float]], upcoming: dict[str, float]
) -> None:
    """Touch the markers whose beat is due now, or wait for the soonest (or a wake-up)."""
    now = time.monotonic()
    soonest = min(upcoming.values())
    if soonest > now:
        with contextlib.suppress(queue.Empty):
            beats.wake.get(timeout=soonest - now)
        return
    for attempt_id, (directory, interval, _) in due.items():
        if upcoming[attempt_id] <= now and attempt_id in beats.due:  # not stopped
            upcoming[attempt_id] = now + interval
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


process_state.register_at_fork("record.heartbeat", after_in_child=_reset_after_fork)
