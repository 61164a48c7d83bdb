"""Per-process state: the package's one fork hook and one exit hook, the order of the work
each runs, and the recorders of this process.

A module whose state is its process's alone (locks held, caches, a running section)
hands this module its reset, under a name of ``FORK_RESETS``::

    process_state.register_at_fork("store.lock", after_in_child=reset_after_fork)

and work for interpreter exit under a name of ``EXIT_WORK``. The one ``after_in_child``
hook runs the resets in the child right after ``fork()``, in the order of
``FORK_RESETS`` whatever the order the modules were imported in; a module never
imported has nothing to reset and nothing registered. The one exit hook runs the exit
work in the order of ``EXIT_WORK``. A name not in those lists is a programming error:
its place must be written there first.

Registering happens at import, under the import lock, which ``fork()`` also takes: a
child never sees a registration half made. The resets run while the child has one
thread: each only drops or replaces the parent's objects, and takes no lock another
thread could have held at the fork.

The recorders (``stagetimer._record.recorder``) add themselves to ``recorders`` when
built, and to or from ``with_pending`` after each save: at exit those holding records
close (their records saved, or left in the rescue file), and in a forked child every
recorder drops the parent's pending records.
"""

from __future__ import annotations

import atexit
import os
import warnings
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol

from stagetimer._errors import StageTimerWarning

__all__ = [
    "EXIT_WORK",
    "FORK_RESETS",
    "recorders",
    "register_at_exit",
    "register_at_fork",
    "with_pending",
]

# The order of the resets in a forked child, one name per module with state of its own.
FORK_RESETS = (
    # the parent's claims, held and seen: forgotten before anything in the child may lock
    "store.claims",
    # the parent's locks: their descriptors closed (never unlocked: the parent's flock)
    "store.lock",
    # no save section runs in the child: a save there is never taken for a re-entry
    "record.reentry",
    # each recorder drops the parent's pending records and builds a new saver: after the
    # locks, claims and sections above are forgotten, so that nothing of them carries over
    "record.recorders",
    # the counters probe again (NVML handles, cgroup); a stage open at the fork counts
    "record.resources",
    # the live hardware, software, job and rank of the run are read again
    "record.pending",
    # no beats of the parent's stages, and no beating thread
    "record.heartbeat",
    # the parent's unfinished writes are the parent's to clear
    "store.leftovers",
    # the software description is captured again: the child may import or change code
    "software.capture",
    # the hardware description is captured again (the child may set its own affinity);
    # last, as it renews the capture's lock
    "hardware.capture",
)

# The order of the work at interpreter exit. Each work returns the problems to warn about.
EXIT_WORK = (
    # the recorders holding records save them, or leave them in their rescue files
    "record.recorders",
    # then the stages still open say they failed (their saves above are already done)
    "record.attempt_markers",
)

_fork_resets: dict[str, Callable[[], None]] = {}
_exit_work: dict[str, Callable[[], Iterable[str]]] = {}


def register_at_fork(name: str, *, after_in_child: Callable[[], None]) -> None:
    """Have ``after_in_child`` run in a forked child at ``name``'s place in
    ``FORK_RESETS``; registering the same name again replaces it (a module reloaded)."""
    _fork_resets[_listed(name, FORK_RESETS)] = after_in_child


def register_at_exit(name: str, work: Callable[[], Iterable[str]]) -> None:
    """Have ``work`` run at interpreter exit at ``name``'s place in ``EXIT_WORK``; each
    line it returns is warned about (``StageTimerWarning``). It must not raise."""
    _exit_work[_listed(name, EXIT_WORK)] = work


def _listed(name: str, order: tuple[str, ...]) -> str:
    if name not in order:
        raise ValueError(f"{name!r} has no place in the order of {order}: add it there")
    return name


def _after_fork_in_child() -> None:
    """The one fork hook: every reset runs, in order, also after one that failed."""
    failure: Exception | None = None
    for name in FORK_RESETS:
        reset = _fork_resets.get(name)
        if reset is None:
            continue  # its module was never imported: nothing to reset
        try:
            reset()
        except Exception as exc:  # reported once all have run, as separate hooks were
            failure = failure or exc
    if failure is not None:
        raise failure


def _at_exit() -> None:
    """The one exit hook. Work registered while an earlier one runs (a module it imports)
    still runs at its place."""
    for name in EXIT_WORK:
        work = _exit_work.get(name)
        if work is not None:
            for problem in work():
                warnings.warn(problem, StageTimerWarning, stacklevel=2)


class Recorder(Protocol):
    """A recorder, as its process's life sees it."""

    @property
    def directory(self) -> str: ...

    def close(self) -> None: ...

    def _reset_in_child(self) -> None: ...


# Recorders holding pending records, kept alive (strong references) until those are saved
# or given up at exit: a recorder dropped by its user must not take its records with it.
# Only added to, discarded from, copied and cleared: each one atomic operation, no lock.
with_pending: set[Recorder] = set()
# Every recorder of this process, for the reset in a forked child.
recorders: weakref.WeakSet[Recorder] = weakref.WeakSet()


def _close_recorders() -> Iterator[str]:
    for rec in list(with_pending):  # one C-level copy: atomic under the GIL
        try:
            rec.close()
        except Exception as exc:  # at exit, one recorder's failure must not hide the others'
            yield f"{rec.directory}: closing at exit failed: {exc}"


def _reset_recorders() -> None:
    """In a forked child: no recorder lock is held, none of the parent's records is
    pending."""
    with_pending.clear()  # cleared in place: recorder.py holds this same set
    for rec in list(recorders):
        rec._reset_in_child()


register_at_fork("record.recorders", after_in_child=_reset_recorders)
register_at_exit("record.recorders", _close_recorders)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
atexit.register(_at_exit)
