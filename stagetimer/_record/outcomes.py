"""How a save ends: its four named outcomes, and what each tells the recorder's user.

Every save (``Saver.save``) ends in exactly one of them:

``Saved``
    Every pending record is in ``timings.json`` (hardware first, in
    ``timings_hardware.json``); the rescue file is removed.
``Refused``
    The file can never hold a record (its stage name holds other data). The records
    stored meanwhile are saved; the refused ones are kept in the rescue file for the
    user (``rescued`` says where), or, for a strict recorder, only reported.
``KeptPending``
    The save failed (lock timeout, full disk...): every record stays pending, retried at
    the next save and at exit, and is in the rescue file before the save returns.
``HandedBack``
    A strict recorder's save failed: the record its caller waits for is dropped and the
    error given back to that caller; the other records are kept as for ``KeptPending``.

An outcome reports itself: ``answer`` to the caller who waits for the save (a stage's own
save), ``report`` where nobody waits (a queued record, ``close``), ``report_at_close`` at
close, after the recorder gave up the records of a save that ``kept`` them pending. Each
says it through the recorder's ``warn`` and its likely mistakes (a warning, a note), or
raises the error its caller must get.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from stagetimer._errors import InvalidRecordError
from stagetimer._record.likely_mistakes import LikelyMistakes
from stagetimer._record.pending import Finished

__all__ = [
    "AppendedAgain",
    "DroppedByReset",
    "HandedBack",
    "KeptPending",
    "Noted",
    "Outcome",
    "Refused",
    "Saved",
]

Warn = Callable[[str], None]


@attrs.frozen
class AppendedAgain:
    """Under ``sequential``: run ``run_idx > 0`` of ``stage`` appended beside one on disk."""

    stage: str
    run_idx: int

    def tell(self, mistakes: LikelyMistakes) -> None:
        mistakes.appended_again(self.stage, self.run_idx)


@attrs.frozen
class DroppedByReset:
    """Under ``sequential``: a ``run_idx=0`` of ``stage`` dropped runs that started after it."""

    stage: str
    run_idxs: tuple[int, ...]

    def tell(self, mistakes: LikelyMistakes) -> None:
        mistakes.reset_dropped(self.stage, self.run_idxs)


Noted = AppendedAgain | DroppedByReset


def _tell(noted: tuple[Noted, ...], mistakes: LikelyMistakes) -> None:
    for note in noted:
        note.tell(mistakes)


class _Reports:
    """What every outcome does unless it says otherwise."""

    __slots__ = ()

    #: whether the save's records are still pending (the recorder gives them up at close)
    kept = False

    def report(self, mistakes: LikelyMistakes, warn: Warn) -> None:
        """Tell the user of an outcome nobody waits for."""

    def answer(self, mistakes: LikelyMistakes, warn: Warn) -> None:
        """Tell the caller who waits for the save (a refusal or a failure it must get
        raises)."""
        self.report(mistakes, warn)

    def report_at_close(self, mistakes: LikelyMistakes, warn: Warn) -> None:
        """Tell the user of the outcome of the save at close."""
        self.report(mistakes, warn)


@attrs.frozen
class Saved(_Reports):
    """Every pending record is stored."""

    appended_again: tuple[Noted, ...] = ()

    def report(self, mistakes: LikelyMistakes, warn: Warn) -> None:
        _tell(self.appended_again, mistakes)


@attrs.frozen
class Refused(_Reports):
    """The file refuses a record (``error``, the first refusal); the others are stored.

    ``rescued``: where the refused records are kept, None when they are not (strict).
    """

    error: InvalidRecordError
    rescued: str | None
    appended_again: tuple[Noted, ...] = ()

    def report(self, mistakes: LikelyMistakes, warn: Warn) -> None:
        """The notes and where the refused records were rescued; a strict recorder's
        refusal (nothing rescued) raises."""
        self._notes(mistakes, warn)
        if self.rescued is None:
            raise self.error

    def answer(self, mistakes: LikelyMistakes, warn: Warn) -> None:
        self._notes(mistakes, warn)
        raise self.error

    def _notes(self, mistakes: LikelyMistakes, warn: Warn) -> None:
        _tell(self.appended_again, mistakes)
        if self.rescued is not None:
            warn(f"{self.error}; {self.rescued}")


@attrs.frozen
class KeptPending(_Reports):
    """The save failed; ``count`` records stay pending and are rescued at ``where``.

    ``newest``: the record the save was made for (the last one queued).
    """

    error: Exception
    newest: Finished
    count: int
    where: str

    kept = True

    def report(self, mistakes: LikelyMistakes, warn: Warn) -> None:
        finished = self.newest
        warn(
            f"stage {finished.name!r} finished ({finished.seconds:.3f} s) but could not be "
            f"saved: {self.error}; {self.count} record(s) kept pending, retried at "
            f"the next save and at exit; {self.where}"
        )

    def report_at_close(self, mistakes: LikelyMistakes, warn: Warn) -> None:
        warn(f"{self.count} record(s) could not be saved at close: {self.error}; {self.where}")


@attrs.frozen
class HandedBack(_Reports):
    """A strict save failed: the waiting caller's record is dropped, ``error`` is theirs."""

    error: Exception

    def answer(self, mistakes: LikelyMistakes, warn: Warn) -> None:
        raise self.error


Outcome = Saved | Refused | KeptPending | HandedBack
