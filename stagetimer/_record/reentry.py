"""Save sections: one save at a time per thread, whatever interrupts it.

A save runs as its thread's *section*. A stage recorded while the thread is already
inside one (a signal handler that interrupted the save, or code the save calls) is
queued on its recorder, never waits, and is saved before the outer section returns.

A thread lock a section takes goes through :func:`hold`: an interrupt at the bytecodes
between a ``with lock:`` body and the call of the lock's ``__exit__`` leaves the lock
held (other threads would then wait on it forever), so when the outermost section ends,
whatever its thread still holds of the locks it took is released.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable
from types import FrameType
from typing import Protocol

from stagetimer._store.locking import release_mine
from stagetimer._system import process_state

__all__ = ["Deferrable", "current_frame", "defer", "hold", "reentered", "section"]


class Deferrable(Protocol):
    """What a section saves for a record queued while it runs (a ``Recorder``)."""

    def _flush(self) -> None: ...  # save what was queued; warns, never raises

    def _make_safe(self) -> None: ...  # after an interrupt: rescue what is pending


# Per thread: ``frame``, the frame running the thread's outermost section,
# ``deferred``, the recorders given records while it runs, and ``held``, the locks
# taken in it (``hold``).
_local = threading.local()


def current_frame() -> FrameType | None:
    """The frame of the function that calls this (``inspect.currentframe()`` is this
    function's own)."""
    frame = inspect.currentframe()  # this function's own frame
    return frame.f_back if frame is not None else None


def reentered() -> bool:
    """Whether this thread is inside a section further up its own stack, from the
    caller's caller up (a recorder's method is the caller).

    A marker an interrupt left behind is not on the stack, so it does not count.
    """
    outer: FrameType | None = getattr(_local, "frame", None)
    if outer is None:
        return False
    frame: FrameType | None = current_frame()  # this function's own
    for _ in range(2):  # up to the caller, then the caller's caller
        frame = frame.f_back if frame is not None else None
    while frame is not None:
        if frame is outer:
            return True
        frame = frame.f_back
    return False


def defer(saver: Deferrable) -> None:
    """Have the running section save ``saver``'s queued records before it returns."""
    _local.deferred.append(saver)


def hold(lock: threading.RLock) -> threading.RLock:
    """``lock`` (re-entrant), noted so that the running section releases what this
    thread still holds of it when it ends: use as ``with hold(lock):`` in a section."""
    held: list[threading.RLock] | None = getattr(_local, "held", None)
    if held is not None and lock not in held:
        held.append(lock)
    return lock


def _let_go(held: list[threading.RLock]) -> None:
    """Release every hold this thread still has on the locks in ``held``: only an
    interrupt leaves one once the outermost section's work is over."""
    for lock in held:
        while True:
            try:
                lock.release()
            except RuntimeError:  # not (or no longer) held by this thread
                break


def section(work: Callable[[], None]) -> None:
    """Run ``work`` as this thread's outermost save section.

    Records queued meanwhile are saved before this returns; an ``Exception`` from
    ``work`` is raised after that, a ``BaseException`` (an interrupt) after they were
    put in their rescue files. Whatever lock an interrupt left held is released.
    """
    failure: BaseException | None = None
    while True:
        deferred: list[Deferrable] = []
        held: list[threading.RLock] = []
        _local.deferred = deferred
        _local.held = held
        _local.frame = current_frame()
        try:
            work()
        except BaseException as exc:
            if failure is None or not isinstance(exc, Exception):
                failure = exc
        finally:
            _local.frame = None  # from here on, handlers save directly
            _let_go(held)
            release_mine()
        if failure is not None and not isinstance(failure, Exception):
            for saver in dict.fromkeys(deferred):
                saver._make_safe()
            raise failure
        if not deferred:
            if failure is not None:
                raise failure
            return
        work = functools.partial(_flush_all, list(dict.fromkeys(deferred)))


def _flush_all(savers: list[Deferrable]) -> None:
    for saver in savers:
        saver._flush()


def _reset_after_fork() -> None:
    """In a forked child: no section is running."""
    global _local
    _local = threading.local()


process_state.register_at_fork("record.reentry", after_in_child=_reset_after_fork)
