"""A tiny Hugging Face Trainer fit on CPU, timed by StageTimerCallback.

    python transformers_fit.py OUT MODE [EPOCHS]     (ddp: under torchrun)

MODE: ``plain`` (seed 5, evaluation and a save each epoch, data_wait), ``ddp``,
``kill`` (SIGKILL itself when epoch ``KILL_AT`` starts), ``raise`` (a callback raises
when that epoch starts), ``resume``.
"""

import os
import signal
import sys

import torch
from torch.utils.data import Dataset
from transformers import Trainer, TrainerCallback, TrainingArguments

from stagetimer.integrations.transformers import StageTimerCallback

out, mode = sys.argv[1], sys.argv[2]
epochs = int(sys.argv[3]) if len(sys.argv) > 3 else 2
KILL_AT = 2


class Data(Dataset):
    def __init__(self):
        g = torch.Generator().manual_seed(0)
        self.x, self.y = torch.randn(32, 4, generator=g), torch.randn(32, 1, generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"x": self.x[i], "labels": self.y[i]}


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def forward(self, x, labels=None):
        out = self.layer(x)
        return {"loss": torch.nn.functional.mse_loss(out, labels), "logits": out}


class KillAt(TrainerCallback):
    def on_epoch_begin(self, args, state, control, **kwargs):
        if round(state.epoch or 0) == KILL_AT:
            if mode == "raise":
                raise OverflowError("the loss diverged at a step the marker must not name")
            os.kill(os.getpid(), signal.SIGKILL)


args = TrainingArguments(
    output_dir=os.path.join(out, "ckpt"), num_train_epochs=epochs,
    per_device_train_batch_size=8, eval_strategy="epoch", save_strategy="epoch",
    logging_strategy="epoch", report_to=[], use_cpu=True, seed=5, disable_tqdm=True,
    ddp_backend="gloo" if mode == "ddp" else None,
)
callbacks = [StageTimerCallback(out, data_wait=mode == "plain")]
if mode in ("kill", "raise"):
    callbacks.append(KillAt())
trainer = Trainer(
    model=Model(), args=args, train_dataset=Data(), eval_dataset=Data(), callbacks=callbacks
)
trainer.train(resume_from_checkpoint=True if mode == "resume" else None)
