"""From a save's outcome (``saver.py``) to what the recorder's user hears: a warning, a
likely-mistake note, or, for a refusal nobody else reports, the error.

Part of the save path: imported by the first recorder, not by ``import stagetimer``.
"""

from __future__ import annotations

from collections.abc import Callable

from stagetimer._record.likely_mistakes import LikelyMistakes
from stagetimer._record.saver import (
    AppendedAgain,
    KeptPending,
    Noted,
    Outcome,
    Refused,
    Saved,
)

__all__ = ["report", "report_refused"]


def report(outcome: Outcome, mistakes: LikelyMistakes, warn: Callable[[str], None]) -> None:
    """Warn about an outcome nobody waits for; a strict recorder raises a refusal."""
    if isinstance(outcome, KeptPending):
        finished = outcome.newest
        warn(
            f"stage {finished.name!r} finished ({finished.seconds:.3f} s) but could not be "
            f"saved: {outcome.error}; {outcome.count} record(s) kept pending, retried at "
            f"the next save and at exit; {outcome.where}"
        )
    elif isinstance(outcome, Refused):
        report_refused(outcome, mistakes, warn)
        if outcome.rescued is None:
            raise outcome.error
    elif isinstance(outcome, Saved):
        _noted(outcome.appended_again, mistakes)


def report_refused(outcome: Refused, mistakes: LikelyMistakes, warn: Callable[[str], None]) -> None:
    """The notes of a refused save, and where its refused records were rescued."""
    _noted(outcome.appended_again, mistakes)
    if outcome.rescued is not None:
        warn(f"{outcome.error}; {outcome.rescued}")


def _noted(noted: tuple[Noted, ...], mistakes: LikelyMistakes) -> None:
    for note in noted:
        if isinstance(note, AppendedAgain):
            mistakes.appended_again(note.stage, note.run_idx)
        else:
            mistakes.reset_dropped(note.stage, note.run_idxs)
