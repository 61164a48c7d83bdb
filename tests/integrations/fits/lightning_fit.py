"""A tiny Lightning fit on CPU, timed by StageTimerCallback.

    python lightning_fit.py OUT MODE [EPOCHS]

MODE: ``plain`` (seed 7, one device, validation, checkpoints, a test, data_wait),
``ddp`` (two processes, gloo), ``kill`` (SIGKILL itself when epoch ``KILL_AT`` starts),
``resume`` (fit again from the last checkpoint), ``again`` (under the default
recorder: a fit that raises when epoch ``KILL_AT`` starts, caught; idle ``IDLE`` s; a new
``Trainer`` fits again with the same callback, from inside the ``except`` block; prints
the times and the attempts as the process sees them, as JSON).
"""

import json
import os
import signal
import sys
import time

import lightning as L
import torch
from torch.utils.data import DataLoader, TensorDataset

from stagetimer.integrations.lightning import StageTimerCallback

out, mode = sys.argv[1], sys.argv[2]
epochs = int(sys.argv[3]) if len(sys.argv) > 3 else 2
KILL_AT = 2
IDLE = 1.5


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def _loss(self, batch):
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)

    def training_step(self, batch, idx):
        return self._loss(batch)

    def validation_step(self, batch, idx):
        self.log("val", self._loss(batch), sync_dist=True)

    def test_step(self, batch, idx):
        self.log("test", self._loss(batch), sync_dist=True)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


class KillAt(L.Callback):
    def on_train_epoch_start(self, trainer, module):
        if trainer.current_epoch == KILL_AT:
            os.kill(os.getpid(), signal.SIGKILL)


class RaiseAt(L.Callback):
    at = None

    def on_train_epoch_start(self, trainer, module):
        if self.at is None and trainer.current_epoch == KILL_AT:
            self.at = time.time()
            raise ArithmeticError("the loss diverged")


L.seed_everything(7)
data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
loader = DataLoader(data, batch_size=16)

if mode == "again":
    from stagetimer import Recorder, attempts

    def trainer_with(*callbacks):
        return L.Trainer(
            max_epochs=epochs, accelerator="cpu", devices=1, callbacks=list(callbacks),
            logger=False, enable_progress_bar=False, enable_model_summary=False,
            num_sanity_val_steps=0, default_root_dir=out,
        )

    timer, raising, model = StageTimerCallback(), RaiseAt(), Model()
    with Recorder(out):  # the default policy, "sequential"
        t0 = time.time()
        try:
            trainer_with(timer, raising).fit(model, loader, loader)
        except ArithmeticError:
            time.sleep(IDLE)
            t1 = time.time()
            trainer_with(timer).fit(model, loader, loader)
            t2 = time.time()
        seen = [
            [a.stage, a.label, a.state, a.cause, a.exception, a.seconds,
             a.started_at.timestamp() if a.started_at else None]
            for a in attempts(out)
        ]
        print(json.dumps({"t0": t0, "at": raising.at, "t1": t1, "t2": t2, "attempts": seen}))
    sys.exit(0)

checkpoints = L.pytorch.callbacks.ModelCheckpoint(
    dirpath=os.path.join(out, "ckpt"), save_last=True, every_n_epochs=1, save_top_k=-1
)
callbacks = [StageTimerCallback(out, data_wait=mode == "plain"), checkpoints]
if mode == "kill":
    callbacks.append(KillAt())
trainer = L.Trainer(
    max_epochs=epochs, accelerator="cpu", devices=2 if mode == "ddp" else 1,
    strategy="ddp" if mode == "ddp" else "auto", callbacks=callbacks, logger=False,
    enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=1,
    default_root_dir=out,
)
model = Model()
ckpt = os.path.join(out, "ckpt", "last.ckpt") if mode == "resume" else None
trainer.fit(model, loader, loader, ckpt_path=ckpt)
if mode == "plain":
    trainer.test(model, loader)
