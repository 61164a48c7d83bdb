"""What the three callbacks share: the stages of one fit, opened and closed by hooks.

A framework calls its hooks in pairs (``on_fit_start`` … ``on_fit_end``); each pair is one
:func:`stagetimer.stage` entered at the first hook and left at the second, so a stage left
by an exception records nothing, as a ``with stage(...)`` block would. Nothing here runs
per batch unless ``data_wait=True`` asks for it.
"""

from __future__ import annotations

import os
import re
import time
from typing import Any

from stagetimer._errors import InvalidSettingError, UnsupportedVersionError
from stagetimer._format import AUTO_RESUME_SUFFIX, is_training_name
from stagetimer._record.pending import declare_rank
from stagetimer._record.recorder import Recorder, resolve_recorder
from stagetimer._record.stage import Stage, stage

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
        if directory is not None and recorder is not None:
            raise InvalidSettingError(
                "give either directory or recorder, not both", (directory, recorder)
            )
        if recorder is not None:
            _check_policy(recorder)
        if not isinstance(train_stage, str) or not is_training_name(train_stage):
            raise InvalidSettingError(
                f"train_stage {train_stage!r} is not valid: expected a name ending in '_train' "
                "(its continuation, <name>_auto_resume, times a resumed fit)",
                train_stage,
            )
        if run_idx is not None and (
            isinstance(run_idx, bool) or not isinstance(run_idx, int) or run_idx < 0
        ):
            raise InvalidSettingError(
                f"run_idx {run_idx!r} is not valid: expected None or an int >= 0", run_idx
            )
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

    # -- one fit ---------------------------------------------------------------

    def start_fit(
        self, seed: int | None, resumed: bool, rank: int | None, world_size: int | None
    ) -> None:
        """Open the fit's stage: run index from ``seed`` unless one was given (else 0)."""
        if rank is not None and world_size is not None and world_size > 1:
            declare_rank(rank, world_size)
        self._choose_run(seed)
        self.resumed = resumed
        self.begin("fit", self.train_stage + (AUTO_RESUME_SUFFIX if resumed else ""))

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
        self.end_all()

    @property
    def recorder(self) -> Recorder:
        if self._recorder is None:
            recorder = resolve_recorder(None)
            _check_policy(recorder)
            self._recorder = recorder
        return self._recorder

    # -- stages ------------------------------------------------------------------

    def begin(self, key: str, name: str, label: str | None = None) -> None:
        """Enter stage ``name`` of this fit's run under ``key`` (one open stage per key)."""
        self.end(key)
        timing = stage(name, run_idx=self._fit_run_idx, label=label, recorder=self.recorder)
        timing.__enter__()
        self._open[key] = timing

    def end(self, key: str) -> None:
        """Leave the stage open under ``key``, recording it; nothing when none is open."""
        timing = self._open.pop(key, None)
        if timing is not None:
            timing.__exit__(None, None, None)

    def is_open(self, key: str) -> bool:
        return key in self._open

    def end_all(self) -> None:
        for key in reversed(list(self._open)):
            self.end(key)

    def fail_all(self, exc: BaseException) -> None:
        """The fit raised ``exc``: every open stage ends as a failed block (nothing recorded)."""
        for key in reversed(list(self._open)):
            timing = self._open.pop(key)
            timing.__exit__(type(exc), exc, exc.__traceback__)

    def record(self, name: str, seconds: float, label: str | None, started_at: float) -> None:
        """One run measured between hooks that cannot hold a stage open (``time.time()``)."""
        self.recorder.record(
            name, max(seconds, 0.0), run_idx=self._fit_run_idx, label=label,
            started_at=started_at,
        )

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


def _check_policy(recorder: Any) -> None:
    if isinstance(recorder, Recorder) and recorder.policy != "upsert":
        raise InvalidSettingError(
            "a callback records each epoch as a label of one run, which needs "
            f"Recorder(..., policy='upsert'); this recorder's policy is {recorder.policy!r}",
            recorder,
        )
