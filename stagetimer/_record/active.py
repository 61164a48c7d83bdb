"""Which recorder a stage records into when none is passed: the innermost ``with rec:``
of this context, else the one recorder per ``STAGETIMER_DIR`` directory; none at all
while ``STAGETIMER_DISABLE`` turns recording off (both read by ``stagetimer._settings``).
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from stagetimer._errors import NoActiveRecorderError
from stagetimer._settings import environment_directory

if TYPE_CHECKING:
    from stagetimer._record.recorder import Recorder

__all__ = ["enter", "environment_recorder", "leave", "open_stages", "stack"]

# The recorders entered with ``with rec:`` in this context, innermost last.
stack: contextvars.ContextVar[tuple[Recorder, ...]] = contextvars.ContextVar(
    "stagetimer_recorders", default=()
)
# The recorded stages open in this context (this thread, or this asyncio task), innermost
# last: a stage entered now records the innermost one of its own recorder as its
# ``parent`` (``stage.py``). A tuple, replaced whole: a task copies its creator's context,
# and a change in one never shows in another. It holds weak references: a stage whose exit
# never ran (an interrupt at its very first instruction, as a kill would leave it) is no
# longer open once nothing holds it, and so never becomes a later stage's parent.
open_stages: contextvars.ContextVar[tuple[Any, ...]] = contextvars.ContextVar(
    "stagetimer_open_stages", default=()
)
# STAGETIMER_DIR's recorders, by absolute directory.
_env_recorders: dict[str, Recorder] = {}


def enter(rec: Recorder) -> None:
    """``rec`` becomes this context's active recorder."""
    stack.set((*stack.get(), rec))


def leave(rec: Recorder) -> None:
    """Remove the innermost entry of ``rec`` from this context's stack."""
    entered = list(stack.get())
    for i in range(len(entered) - 1, -1, -1):
        if entered[i] is rec:
            del entered[i]
            break
    stack.set(tuple(entered))


def environment_recorder(new: Callable[[str], Recorder]) -> Recorder:
    """The recorder for ``STAGETIMER_DIR``, built by ``new(directory)`` the first time."""
    directory = environment_directory()
    if not directory:
        raise NoActiveRecorderError()
    key = os.path.abspath(directory)
    rec = _env_recorders.get(key)
    if rec is None:
        # No lock: a signal handler or finaliser that records while this thread builds
        # the recorder (the first stage() imports the save path) would wait forever for
        # a lock its own thread holds. Built outside any lock and published with one
        # atomic setdefault: of two built at once, both callers get the first published.
        rec = _env_recorders.setdefault(key, new(directory))
    return rec
