"""``StageTimerCallback`` for Lightning 2.x (``lightning.pytorch``).

>>> from stagetimer.integrations.lightning import StageTimerCallback
>>> trainer = lightning.pytorch.Trainer(callbacks=[StageTimerCallback("runs/mlp")])

Hooks to stages (each run under the fit's run index, each rank with its rank):

=====================================================  ==================================
hooks                                                  stage (label)
=====================================================  ==================================
``on_fit_start`` … ``on_fit_end``                      ``fit_train``; ``fit_train_auto_resume``
                                                       when ``fit(ckpt_path=...)`` resumes
``on_train_epoch_start`` … ``on_train_epoch_end``      ``train_epoch`` (``epoch<N>``)
``on_validation_start`` … ``on_validation_end``        ``validate`` (``epoch<N>``); not the
                                                       sanity check
the strategy's ``CheckpointIO.save_checkpoint``        ``checkpoint_save`` (``step<N>``), on
                                                       the ranks that write (``…_auto_resume``
                                                       in a resumed fit)
``on_test_start`` … ``on_test_end``                    ``test``
``on_train_batch_end`` … next ``on_train_batch_start`` ``data_wait`` (``epoch<N>``), summed per
                                                       epoch; only with ``data_wait=True``
``on_exception``                                       open stages end unrecorded (failed)
=====================================================  ==================================

The run index is ``run_idx`` when given, else the seed ``lightning.seed_everything`` set
(``PL_GLOBAL_SEED``), else 0. A fit after one that raised (a caught exception, a
notebook) is that fit's continuation, as one resumed from a checkpoint is.
"""

from __future__ import annotations

import os
import time
from typing import Any

import lightning
from lightning.fabric.plugins import CheckpointIO
from lightning.pytorch import Callback

from stagetimer._record.recorder import Recorder
from stagetimer.integrations._core import (
    CHECKPOINT,
    EPOCH,
    TEST,
    VALIDATE,
    FitTimer,
    check_version,
)

__all__ = ["SUPPORTED", "StageTimerCallback"]

#: the Lightning releases this callback supports: ``>= low, < high``
SUPPORTED = ("2.0", "3.0")


class StageTimerCallback(Callback):  # type: ignore[misc]
    """Times a Lightning fit's stages into ``directory`` (or ``recorder``, or the active one).

    ``directory``: an artifact directory; or ``recorder``: a ``Recorder`` of yours, any
    policy; neither: the active recorder.
    ``run_idx``: the run's index (default: the seed). ``train_stage``: the fit's stage
    name, ending in ``_train``. ``data_wait=True`` sums the wait between batches.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str] | None = None,
        *,
        recorder: Recorder | None = None,
        run_idx: int | None = None,
        train_stage: str = "fit_train",
        data_wait: bool = False,
    ) -> None:
        check_version("lightning", lightning.__version__, *SUPPORTED)
        super().__init__()
        self._timer = FitTimer(directory, recorder, run_idx, train_stage, data_wait)
        self._io: _TimedCheckpointIO | None = None

    # -- the fit ---------------------------------------------------------------

    def on_fit_start(self, trainer: Any, pl_module: Any) -> None:
        # Lightning has read fit(ckpt_path=...)'s checkpoint path by now (not at setup).
        self._timer.start_fit(
            _seed(),
            resumed=trainer.ckpt_path is not None,
            rank=trainer.global_rank,
            world_size=trainer.world_size,
        )
        strategy = trainer.strategy
        self._io = _TimedCheckpointIO(strategy.checkpoint_io, self._timer, trainer)
        strategy.checkpoint_io = self._io

    def on_fit_end(self, trainer: Any, pl_module: Any) -> None:
        self._restore_io(trainer)
        self._timer.end_fit()

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self._restore_io(trainer)
        self._timer.fail_all(exception)

    def _restore_io(self, trainer: Any) -> None:
        if self._io is not None and trainer.strategy.checkpoint_io is self._io:
            trainer.strategy.checkpoint_io = self._io.inner
        self._io = None

    # -- epochs, validation, testing ---------------------------------------------

    def on_train_epoch_start(self, trainer: Any, pl_module: Any) -> None:
        self._timer.begin("epoch", EPOCH, self._timer.label("epoch", trainer.current_epoch))
        if self._timer.data_wait:
            self._timer.epoch_started()

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        if self._timer.data_wait:
            self._timer.epoch_ended(self._timer.label("epoch", trainer.current_epoch))
        self._timer.end("epoch")

    def on_validation_start(self, trainer: Any, pl_module: Any) -> None:
        if not trainer.sanity_checking and self._timer.is_open("fit"):
            label = self._timer.label("epoch", trainer.current_epoch)
            self._timer.begin("validate", VALIDATE, label)

    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        self._timer.end("validate")

    def on_test_start(self, trainer: Any, pl_module: Any) -> None:
        self._timer.begin_test(_seed(), TEST)

    def on_test_end(self, trainer: Any, pl_module: Any) -> None:
        self._timer.end("test")

    # -- per batch: only when the data-loading wait is asked for -----------------

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, idx: int) -> None:
        if self._timer.data_wait:
            self._timer.batch_started()

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, idx: int
    ) -> None:
        if self._timer.data_wait:
            self._timer.batch_ended()


def _seed() -> int | None:
    """The seed ``seed_everything`` set, as Lightning publishes it to its workers."""
    seed = os.environ.get("PL_GLOBAL_SEED", "")
    return int(seed) if seed.isdigit() else None


class _TimedCheckpointIO(CheckpointIO):  # type: ignore[misc]
    """The strategy's own checkpoint writer, each save timed as ``checkpoint_save``."""

    def __init__(self, inner: Any, timer: FitTimer, trainer: Any) -> None:
        self.inner = inner
        self._timer = timer
        self._trainer = trainer

    def save_checkpoint(
        self, checkpoint: dict[str, Any], path: Any, storage_options: Any | None = None
    ) -> None:
        timer = self._timer
        started, wall = time.perf_counter(), time.time()
        self.inner.save_checkpoint(checkpoint, path, storage_options=storage_options)
        timer.record(
            timer.continued(CHECKPOINT), time.perf_counter() - started,
            timer.label("step", self._trainer.global_step), wall,
        )

    def load_checkpoint(self, path: Any, *args: Any, **kwargs: Any) -> Any:
        return self.inner.load_checkpoint(path, *args, **kwargs)

    def remove_checkpoint(self, path: Any) -> None:
        self.inner.remove_checkpoint(path)

    def teardown(self) -> None:
        self.inner.teardown()

