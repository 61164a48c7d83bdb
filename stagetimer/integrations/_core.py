"""What the three callbacks share: the stages of one fit, opened and closed by hooks.

A framework calls its hooks in pairs (``on_fit_start`` … ``on_fit_end``); each pair is one
:func:`stagetimer.stage` entered at the first hook and left at the second, so a stage left
by an exception records nothing, as a ``with stage(...)`` block would. Nothing here runs
per batch unless ``data_wait=True`` asks for it.

A fit is one run; its epochs, validations and checkpoints are labelled parts of it. The
first record of each stage in a fit is saved by the recorder's policy (under the
default ``"sequential"``, a fit of run 0 starts the stage over and a fit of run k > 0
adds to it); the stage's later records in the same fit, and every record of a resumed
fit, replace only the part of the same run index, label and rank
(``stage.part_stage``), so that no policy drops one epoch for the next.

A fit that raised with no hook called (Keras, the Hugging Face ``Trainer``; a caught
``KeyboardInterrupt``, a notebook's Ctrl-C) leaves its stages open: the next fit of the
same callback settles them as failed, their time up to the callback's last sign of life,
and is the continuation of the fit it follows (``<train_stage>_auto_resume``).
"""

from __future__ import annotations

import os
import re
import sys
import time

from stagetimer._errors import InvalidSettingError, UnsupportedVersionError
from stagetimer._format import AUTO_RESUME_SUFFIX, is_training_name
from stagetimer._record.pending import declare_rank
from stagetimer._record.recorder import Recorder, record_run, resolve_recorder
from stagetimer._record.stage import Stage, open_parent, part_stage, stage

#: how a callback's records replace what is on disk, under any recorder policy
_PART = "upsert"

__all__ = [
    "CHECKPOINT",
    "DATA_WAIT",
    "EPOCH",
    "TEST",
    "VALIDATE",
    "FitTimer",
    "UnsupportedVersionError",
    "check_version",
]

EPOCH = "train_epoch"
VALIDATE = "validate"
CHECKPOINT = "checkpoint_save"
TEST = "test"
DATA_WAIT = "data_wait"


def _release(version: str) -> tuple[int, ...]:
    """The leading numbers of a version string: ``"3.15.1.dev0"`` -> ``(3, 15, 1)``."""
    numbers = []
    for part in version.split("."):
        digits = re.match(r"\d+", part)
        if digits is None:
            break
        numbers.append(int(digits.group()))
        if digits.group() != part:
            break
    return tuple(numbers)


def check_version(framework: str, version: str, low: str, high: str) -> None:
    """Raise :class:`UnsupportedVersionError` unless ``low <= version < high``."""
    if not _release(low) <= _release(version) < _release(high):
        raise UnsupportedVersionError(
            f"stagetimer's {framework} callback supports {framework} >={low},<{high}; "
            f"{framework} {version} is installed"
        )


def _check_recorder(directory: str | os.PathLike[str] | None, recorder: Recorder | None) -> None:
    """Either a directory or a recorder, not both; a recorder a ``Recorder``."""
    if directory is not None and recorder is not None:
        raise InvalidSettingError(
            "give either directory or recorder, not both", (directory, recorder)
        )
    if recorder is not None and not isinstance(recorder, Recorder):
        raise InvalidSettingError(
            f"recorder {recorder!r} is not valid: expected a stagetimer.Recorder", recorder
        )


def _check_settings(
    directory: str | os.PathLike[str] | None, recorder: Recorder | None, run_idx: int | None,
    train_stage: str,
) -> None:
    """Raise :class:`InvalidSettingError` for the first of a callback's arguments that is
    not valid."""
    _check_recorder(directory, recorder)
    if not isinstance(train_stage, str) or not is_training_name(train_stage):
        raise InvalidSettingError(
            f"train_stage {train_stage!r} is not valid: expected a name ending in '_train' "
            "(its continuation, <name>_auto_resume, times a resumed fit)",
            train_stage,
        )
    _check_run_idx(run_idx)


def _check_run_idx(run_idx: int | None) -> None:
    if run_idx is not None and (
        isinstance(run_idx, bool) or not isinstance(run_idx, int) or run_idx < 0
    ):
        raise InvalidSettingError(
            f"run_idx {run_idx!r} is not valid: expected None or an int >= 0", run_idx
        )


def _declare(rank: int | None, world_size: int | None) -> None:
    """Declare the rank of a fit among several processes (not one of one)."""
    if rank is not None and world_size is not None and world_size > 1:
        declare_rank(rank, world_size)


class FitTimer:
    """The stages of the fits one callback sees; each callback maps its hooks onto it."""

    def __init__(
        self,
        directory: str | os.PathLike[str] | None,
        recorder: Recorder | None,
        run_idx: int | None,
        train_stage: str,
        data_wait: bool,
    ) -> None:
        _check_settings(directory, recorder, run_idx, train_stage)
        self._recorder = (
            Recorder(directory, policy="upsert") if directory is not None else recorder
        )
        self.run_idx = run_idx
        self.train_stage = train_stage
        self.data_wait = bool(data_wait)
        self.resumed = False
        self._fit_run_idx: int | None = None
        self._open: dict[str, Stage] = {}
        self._waited = 0.0
        self._batch_ended: float | None = None
        self._epoch_wall = 0.0
        #: ``perf_counter`` of the last hook seen: the fit's last sign of life
        self._seen = time.perf_counter()
        #: a fit of this callback ended with its stages open (settled as failed)
        self._cut_short = False
        #: ``id()`` of the exception the interpreter last showed when the fit began
        #: (``_ended_by``); not the exception, whose frames may hold a model's tensors
        self._shown_before: int | None = None
        #: continuing a fit cut short: labels go on after the parts it finished
        self._continuing = False
        self._shift: dict[str, int] = {}
        self._finished_parts: dict[str, int] = {}
        #: the stages this fit has recorded into (or opened) so far
        self._named: set[str] = set()

    # -- one fit ---------------------------------------------------------------

    def start_fit(
        self, seed: int | None, resumed: bool, rank: int | None, world_size: int | None
    ) -> None:
        """Open the fit's stage: run index from ``seed`` unless one was given (else 0).
        ``resumed``: the framework resumed it (from a checkpoint); a fit that follows
        one cut short is resumed too, its parts labelled on after those finished. What
        an earlier fit left open is settled first: never counted as this one."""
        self.settle()
        shown = _shown()
        self._shown_before = None if shown is None else id(shown)
        _declare(rank, world_size)
        self._choose_run(seed)
        self._continuing = self._cut_short and not resumed
        self._shift = {}
        self._named = set()
        self.resumed = resumed or self._cut_short
        self._cut_short = False
        self.begin("fit", self.train_stage + (AUTO_RESUME_SUFFIX if self.resumed else ""))

    def settle(self) -> None:
        """Fail every stage still open (a fit that raised with no hook called), each at
        the last hook seen, with what ended it where known (else: interrupted). Called
        when the next fit of this callback begins."""
        if not self._open:
            return
        error = _ended_by(self._shown_before)
        for key in reversed(list(self._open)):
            timing = self._open.pop(key)
            if key == "fit":
                self._cut_short = True
            timing._settle(error, self._seen)
        self._batch_ended = None
        self._waited = 0.0

    def seen(self) -> None:
        """A hook ran: the fit is alive now (one clock read)."""
        self._seen = time.perf_counter()

    def label(self, kind: str, number: int) -> str:
        """``epoch3``, ``step40``: a part's label. A fit that continues one cut short
        and counts from 0 again (a new ``Trainer``, Keras's ``fit``) labels its parts on
        after the last one finished: its first epoch is the one after it, its step N
        the step N after it, and no finished part is replaced."""
        if self._continuing:
            shift = self._shift.get(kind)
            if shift is None:
                done = self._finished_parts.get(kind)
                shift = 0
                if done is not None and number <= done:
                    shift = done + 1 - number if kind == "epoch" else done
                self._shift[kind] = shift
            number += shift
        return f"{kind}{number}"

    def _finished(self, label: str | None) -> None:
        """A part labelled ``label`` (``epoch3``) was recorded: later fits go on after it."""
        if label is None:
            return
        kind = label.rstrip("0123456789")
        digits = label[len(kind):]
        if digits and kind in ("epoch", "step"):
            number = int(digits)
            if number > self._finished_parts.get(kind, -1):
                self._finished_parts[kind] = number

    def begin_test(self, seed: int | None, name: str) -> None:
        """Open a test's stage: the fit's run when one ran, else as ``start_fit`` picks it."""
        if not self.is_open("fit"):
            self._choose_run(seed)
        self.begin("test", name)

    def _choose_run(self, seed: int | None) -> None:
        index = self.run_idx if self.run_idx is not None else seed
        self._fit_run_idx = index if index is not None and index >= 0 else 0

    def end_fit(self) -> None:
        """Close every stage still open (innermost first) and the fit's."""
        self.seen()
        self.end_all()

    @property
    def recorder(self) -> Recorder:
        if self._recorder is None:
            self._recorder = resolve_recorder(None)
        return self._recorder

    # -- stages ------------------------------------------------------------------

    def begin(self, key: str, name: str, label: str | None = None) -> None:
        """Enter stage ``name`` of this fit's run under ``key`` (one open stage per key)."""
        self.end(key)
        make = part_stage if self._a_part(name) else stage
        timing = make(name, run_idx=self._fit_run_idx, label=label, recorder=self.recorder)
        timing.__enter__()
        self._open[key] = timing
        self._seen = timing._t0

    def end(self, key: str) -> None:
        """Leave the stage open under ``key``, recording it; nothing when none is open."""
        timing = self._open.pop(key, None)
        if timing is not None:
            timing.__exit__(None, None, None)
            self._finished(timing.label)
            self.seen()

    def is_open(self, key: str) -> bool:
        return key in self._open

    def end_all(self) -> None:
        for key in reversed(list(self._open)):
            self.end(key)

    def fail_all(self, exc: BaseException) -> None:
        """The fit raised ``exc``: every open stage ends as a failed block (nothing recorded)."""
        for key in reversed(list(self._open)):
            timing = self._open.pop(key)
            if key == "fit":
                self._cut_short = True
            timing.__exit__(type(exc), exc, exc.__traceback__)

    def record(self, name: str, seconds: float, label: str | None, started_at: float) -> None:
        """One run measured between hooks that cannot hold a stage open (``time.time()``)."""
        recorder = self.recorder
        record_run(
            recorder, name, max(seconds, 0.0), self._fit_run_idx, label, started_at,
            None, _PART if self._a_part(name) else None, open_parent(recorder),
        )
        self._finished(label)
        self.seen()

    def _a_part(self, name: str) -> bool:
        """Whether a record of stage ``name`` adds a part to this fit's run (a later
        record of the stage in this fit, or any of a resumed fit), rather than being the
        fit's first, which the recorder's policy places."""
        first = name not in self._named and not self.resumed
        self._named.add(name)
        return not first

    def continued(self, name: str) -> str:
        """``name`` as the resumed fit records it (``checkpoint_save_auto_resume``)."""
        return name + AUTO_RESUME_SUFFIX if self.resumed else name

    # -- the data-loading wait (data_wait=True only) -----------------------------

    def epoch_started(self) -> None:
        self._waited = 0.0
        self._batch_ended = time.perf_counter()
        self._epoch_wall = time.time()

    def batch_started(self) -> None:
        ended = self._batch_ended
        if ended is not None:
            self._waited += time.perf_counter() - ended
            self._batch_ended = None

    def batch_ended(self) -> None:
        self._batch_ended = time.perf_counter()

    def epoch_ended(self, label: str) -> None:
        """Record the epoch's summed wait between batches as one ``data_wait`` run."""
        if self._batch_ended is None and self._waited == 0.0:
            return
        self.record(DATA_WAIT, self._waited, label, self._epoch_wall)
        self._batch_ended = None
        self._waited = 0.0


def _shown() -> BaseException | None:
    """The exception the interpreter last showed (``sys.last_exc``; ``sys.last_value``
    before 3.12): in a notebook or a REPL, the one a cell or a line ended with."""
    found = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
    return found if isinstance(found, BaseException) else None


def _ended_by(shown_before: int | None) -> BaseException | None:
    """What ended a fit cut short, where known: the exception being handled now (the
    next fit called from an ``except`` block), else one the interpreter showed since
    the fit began (a notebook's Ctrl-C); None otherwise."""
    handled = sys.exc_info()[1]
    if handled is not None:
        return handled
    shown = _shown()
    return shown if shown is not None and id(shown) != shown_before else None
