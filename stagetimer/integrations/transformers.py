"""``StageTimerCallback`` for the Hugging Face ``Trainer`` (``transformers``).

>>> from stagetimer.integrations.transformers import StageTimerCallback
>>> trainer = transformers.Trainer(..., callbacks=[StageTimerCallback("runs/bert")])

Hooks to stages (each run under the fit's run index, each rank with its rank):

====================================================  =====================================
hooks                                                 stage (label)
====================================================  =====================================
``on_train_begin`` … ``on_train_end``                 ``fit_train``; ``fit_train_auto_resume``
                                                      when ``train(resume_from_checkpoint=…)``
                                                      resumes
``on_epoch_begin`` … ``on_epoch_end``                 ``train_epoch`` (``epoch<N>``)
the hook before the evaluation … ``on_evaluate``      ``validate`` (``step<N>``), evaluations
                                                      inside ``train()``
the hook before the save … ``on_save``                ``checkpoint_save`` (``step<N>``;
                                                      ``…_auto_resume`` in a resumed fit)
``on_step_end`` … next ``on_step_begin``              ``data_wait`` (``epoch<N>``), summed per
                                                      epoch; only with ``data_wait=True``
====================================================  =====================================

The ``Trainer`` has no hook before an evaluation or a save, so both are timed from the
hook just before them (``on_step_end``, ``on_log`` or ``on_evaluate`` of the same step)
and recorded at ``on_evaluate``/``on_save``. It has none before ``evaluate()`` or
``predict()`` called outside ``train()`` either: testing is not timed (wrap it in
``stagetimer.stage("test")``). A ``train()`` that raises has no hook at all: the next
``train()`` with this callback settles its open stages as failed, up to the last step
seen, and is their continuation (``fit_train_auto_resume``); in a process that ends
first, they are settled at exit.

The run index is ``run_idx`` when given, else ``TrainingArguments.seed``.
"""

from __future__ import annotations

import os
import time
from typing import Any

import transformers
from transformers import TrainerCallback

from stagetimer._record.recorder import Recorder
from stagetimer.integrations._core import (
    CHECKPOINT,
    EPOCH,
    VALIDATE,
    FitTimer,
    check_version,
)

__all__ = ["SUPPORTED", "StageTimerCallback"]

#: the transformers releases this callback supports: ``>= low, < high``
SUPPORTED = ("4.40", "6.0")


class StageTimerCallback(TrainerCallback):  # type: ignore[misc]
    """Times a ``Trainer.train()``'s stages into ``directory`` (or ``recorder``, or the
    active one); the arguments are those of the Lightning callback."""

    def __init__(
        self,
        directory: str | os.PathLike[str] | None = None,
        *,
        recorder: Recorder | None = None,
        run_idx: int | None = None,
        train_stage: str = "fit_train",
        data_wait: bool = False,
    ) -> None:
        check_version("transformers", transformers.__version__, *SUPPORTED)
        self._timer = FitTimer(directory, recorder, run_idx, train_stage, data_wait)
        # perf_counter and wall clock of the hook before a pending evaluation or save
        self._before: tuple[float, float] | None = None
        self._log_pending = False
        self._epoch = "epoch0"  # the label of the epoch running

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._before = None
        self._timer.start_fit(
            args.seed, resumed=state.global_step > 0,
            rank=args.process_index, world_size=args.world_size,
        )

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._timer.end_fit()

    def on_epoch_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._epoch = self._timer.label("epoch", int(state.epoch or 0))
        self._timer.begin("epoch", EPOCH, self._epoch)
        if self._timer.data_wait:
            self._timer.epoch_started()

    def on_epoch_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._timer.data_wait:
            self._timer.epoch_ended(self._epoch)
        self._timer.end("epoch")
        self._mark(control)

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._timer.data_wait:
            self._timer.batch_started()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._timer.seen()  # the last sign of life of a train() that raises
        if self._timer.data_wait:
            self._timer.batch_ended()
        self._mark(control)

    def on_log(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        # The training loss logged before the evaluation restarts the clock; the
        # evaluation's own metrics, logged inside it, do not.
        if self._before is not None and self._log_pending:
            self._mark(control)

    def on_evaluate(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._before is not None and self._timer.is_open("fit"):
            self._since_before(VALIDATE, state)
        self._mark(control)

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._before is not None and self._timer.is_open("fit"):
            self._since_before(self._timer.continued(CHECKPOINT), state)
        self._before = None

    def _mark(self, control: Any) -> None:
        """Start the clock when an evaluation or a save comes next (a few flag reads)."""
        if control.should_evaluate or control.should_save:
            self._before = (time.perf_counter(), time.time())
            self._log_pending = bool(control.should_log)
        else:
            self._before = None

    def _since_before(self, name: str, state: Any) -> None:
        assert self._before is not None
        started, wall = self._before
        label = self._timer.label("step", state.global_step)
        self._timer.record(name, time.perf_counter() - started, label, wall)
        self._before = None
