"""``StageTimerCallback`` for Keras 3 (any backend).

>>> from stagetimer.integrations.keras import StageTimerCallback
>>> model.fit(x, y, epochs=5, callbacks=[StageTimerCallback("runs/cnn", run_idx=seed)])

Hooks to stages (each run under the fit's run index, each rank with its rank):

================================================  =========================================
hooks                                             stage (label)
================================================  =========================================
first ``on_epoch_begin`` … ``on_train_end``       ``fit_train``; ``fit_train_auto_resume``
                                                  when the first epoch is not 0
                                                  (``initial_epoch=``, ``BackupAndRestore``)
``on_epoch_begin`` … ``on_epoch_end``             ``train_epoch`` (``epoch<N>``)
``on_test_begin`` … ``on_test_end`` in ``fit``    ``validate`` (``epoch<N>``)
``on_test_begin`` … ``on_test_end`` otherwise     ``test`` (``model.evaluate``)
``checkpoint=``'s ``on_epoch_end``                ``checkpoint_save`` (``epoch<N>``; not when
                                                  ``save_best_only`` saved nothing;
                                                  ``…_auto_resume`` in a resumed fit)
``on_train_batch_end`` … next ``…_batch_begin``   ``data_wait`` (``epoch<N>``), summed per
                                                  epoch; only with ``data_wait=True``
================================================  =========================================

Keras has no public way to read the seed ``keras.utils.set_random_seed`` set: pass
``run_idx=seed`` (default 0). The fit's stage opens at its first epoch, where Keras tells
whether it resumed. Keras calls no hook when ``fit`` raises: the next fit (or
``evaluate``, ``predict``) with this callback settles its open stages as failed, up to
the last hook seen; the next fit is their
continuation (``fit_train_auto_resume``, epochs labelled on after the last finished);
in a process that ends first, they are settled at exit. The rank is the environment's
(``RANK``/``WORLD_SIZE``, Slurm, MPI) or, on the JAX backend with several processes,
``jax.process_index()``.
"""

from __future__ import annotations

import os
import time
from typing import Any

import keras

from stagetimer._errors import InvalidSettingError
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

#: the Keras releases this callback supports: ``>= low, < high``
SUPPORTED = ("3.0", "4.0")


class StageTimerCallback(keras.callbacks.Callback):  # type: ignore[misc]
    """Times a ``model.fit``'s stages into ``directory`` (or ``recorder``, or the active
    one). ``checkpoint``: a ``keras.callbacks.ModelCheckpoint`` (``save_freq="epoch"``)
    this callback drives and times; do not also pass it to ``fit``. The other arguments
    are those of the Lightning callback."""

    def __init__(
        self,
        directory: str | os.PathLike[str] | None = None,
        *,
        recorder: Recorder | None = None,
        run_idx: int | None = None,
        train_stage: str = "fit_train",
        data_wait: bool = False,
        checkpoint: Any = None,
    ) -> None:
        check_version("keras", keras.__version__, *SUPPORTED)
        if checkpoint is not None and (
            not isinstance(checkpoint, keras.callbacks.ModelCheckpoint)
            or checkpoint.save_freq != "epoch"
        ):
            raise InvalidSettingError(
                f"checkpoint {checkpoint!r} is not valid: expected a "
                "keras.callbacks.ModelCheckpoint with save_freq='epoch'",
                checkpoint,
            )
        super().__init__()
        self._timer = FitTimer(directory, recorder, run_idx, train_stage, data_wait)
        self._checkpoint = checkpoint
        self._in_fit = False
        self._epoch = "epoch0"  # the label of the epoch running
        if data_wait:  # per-batch hooks only when asked: Keras calls them every step
            self.on_train_batch_begin = self._batch_begin
            self.on_train_batch_end = self._batch_end

    # -- the checkpoint callback this one drives ----------------------------------

    def set_model(self, model: Any) -> None:
        # Each fit, evaluate or predict makes a new callback list, which sets the model
        # (a fit's own validation reuses the fit's): a fit still open here was cut short.
        if self._in_fit:
            self._in_fit = False
            self._timer.settle()
        super().set_model(model)
        if self._checkpoint is not None:
            self._checkpoint.set_model(model)

    def set_params(self, params: Any) -> None:
        super().set_params(params)
        if self._checkpoint is not None:
            self._checkpoint.set_params(params)

    # -- the fit and its epochs ---------------------------------------------------

    def on_train_begin(self, logs: Any = None) -> None:
        self._timer.settle()  # what a fit that raised left open: not this fit's time
        self._in_fit = True
        if self._checkpoint is not None:
            self._checkpoint.on_train_begin(logs)

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        if not self._timer.is_open("fit"):
            self._timer.start_fit(None, resumed=epoch > 0, **_rank())
        self._epoch = self._timer.label("epoch", epoch)
        self._timer.begin("epoch", EPOCH, self._epoch)
        if self._timer.data_wait:
            self._timer.epoch_started()
        if self._checkpoint is not None:
            self._checkpoint.on_epoch_begin(epoch, logs)

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        if self._timer.data_wait:
            self._timer.epoch_ended(self._epoch)
        self._timer.end("epoch")
        if self._checkpoint is not None:
            self._save(epoch, logs)

    def on_train_end(self, logs: Any = None) -> None:
        self._in_fit = False
        if self._checkpoint is not None:
            self._checkpoint.on_train_end(logs)
        self._timer.end_fit()

    def _save(self, epoch: int, logs: Any) -> None:
        checkpoint: Any = self._checkpoint
        best = getattr(checkpoint, "best", None)
        started, wall = time.perf_counter(), time.time()
        checkpoint.on_epoch_end(epoch, logs)
        seconds = time.perf_counter() - started
        if not checkpoint.save_best_only or getattr(checkpoint, "best", None) != best:
            self._timer.record(self._timer.continued(CHECKPOINT), seconds, self._epoch, wall)

    # -- validation inside fit, testing outside -----------------------------------

    def on_test_begin(self, logs: Any = None) -> None:
        if self._in_fit:
            self._timer.begin("validate", VALIDATE, self._epoch)
        else:
            self._timer.begin_test(None, TEST)

    def on_test_end(self, logs: Any = None) -> None:
        self._timer.end("validate" if self._in_fit else "test")

    # -- per batch: only when the data-loading wait is asked for -------------------

    def _batch_begin(self, batch: int, logs: Any = None) -> None:
        self._timer.batch_started()

    def _batch_end(self, batch: int, logs: Any = None) -> None:
        self._timer.batch_ended()


def _rank() -> dict[str, int | None]:
    """The rank on JAX's multi-process runtime; else the environment's (no override)."""
    if keras.backend.backend() == "jax":
        import jax

        if jax.process_count() > 1:
            return {"rank": jax.process_index(), "world_size": jax.process_count()}
    return {"rank": None, "world_size": None}
