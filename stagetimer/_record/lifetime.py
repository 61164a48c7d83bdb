"""A recorder's place in its process's life: kept alive while records are pending,
closed at interpreter exit (where the markers of stages still open say they failed),
reset in a forked child.

The recorder (``recorder.py``) adds itself to ``instances`` when built and to or from
``with_pending`` after each save; this module owns the ``atexit`` and
``os.register_at_fork`` hooks that use those sets.
"""

from __future__ import annotations

import atexit
import os
import sys
import warnings
import weakref
from typing import TYPE_CHECKING

from stagetimer._errors import StageTimerWarning

# ``after_in_child`` hooks run in the order they were registered (Python docs,
# os.register_at_fork): reentry, and through it _store.lock and _store.claims, are
# imported first so that a child forgets the parent's sections, locks and claims before
# its recorders build their new savers.
from stagetimer._record import reentry  # noqa: F401  (imported for its hook's place)

if TYPE_CHECKING:
    from stagetimer._record.recorder import Recorder

__all__ = ["instances", "with_pending"]

# Recorders holding pending records, kept alive (strong references) until those are saved
# or given up at exit: a recorder dropped by its user must not take its records with it.
# Only added to, discarded from, copied and cleared: each one atomic operation, no lock.
with_pending: set[Recorder] = set()
# Every recorder of this process, for the reset in a forked child.
instances: weakref.WeakSet[Recorder] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    recorders = list(with_pending)  # one C-level copy: atomic under the GIL
    for rec in recorders:
        try:
            rec.close()
        except Exception as exc:  # at exit, one recorder's failure must not hide the others'
            warnings.warn(
                f"{rec.directory}: closing at exit failed: {exc}", StageTimerWarning, stacklevel=2
            )
    # Stages still open never reached their end: their markers say they failed. Loaded
    # with the first recorder; where it never was, no marker was written.
    markers = sys.modules.get("stagetimer._record.attempt_markers")
    if markers is not None:
        for problem in markers.settle_at_exit():
            warnings.warn(problem, StageTimerWarning, stacklevel=2)


def _after_fork_in_child() -> None:
    """A forked child: no recorder lock is held, none of the parent's records is pending."""
    with_pending.clear()  # cleared in place: recorder.py holds this same set
    for rec in list(instances):
        rec._reset_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
