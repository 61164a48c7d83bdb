"""A tiny Hugging Face Trainer fit on CPU, timed by StageTimerCallback.

    python transformers_fit.py OUT MODE [EPOCHS]     (ddp: under torchrun)

MODE: ``plain`` (seed 5, evaluation and a save each epoch, data_wait), ``ddp``,
``kill`` (SIGKILL itself when epoch ``KILL_AT`` starts), ``raise`` (a callback raises
when that epoch starts), ``resume``, ``again`` (under the default recorder: Ctrl-C
(a real SIGINT) at step ``CTRL_C_AT``, caught; idle ``IDLE`` s; ``train()`` again with
the same callback; prints the times and the attempts as the process sees them, as JSON).
"""

import json
import os
import signal
import sys
import time

import torch
from torch.utils.data import Dataset
from transformers import Trainer, TrainerCallback, TrainingArguments

from stagetimer.integrations.transformers import StageTimerCallback

out, mode = sys.argv[1], sys.argv[2]
epochs = int(sys.argv[3]) if len(sys.argv) > 3 else 2
KILL_AT = 2
CTRL_C_AT = 10  # the third epoch's second step: 32 samples, batches of 8
IDLE = 1.5


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
class CtrlC(TrainerCallback):
    at = None

    def on_step_end(self, args, state, control, **kwargs):
        if self.at is None and state.global_step == CTRL_C_AT:
            self.at = time.time()
            os.kill(os.getpid(), signal.SIGINT)  # Python's own handler: KeyboardInterrupt


if mode == "again":
    from stagetimer import Recorder, attempts

    ctrl_c = CtrlC()
    with Recorder(out):  # the default policy, "sequential"
        trainer = Trainer(
            model=Model(), args=args, train_dataset=Data(), eval_dataset=Data(),
            callbacks=[StageTimerCallback(), ctrl_c],
        )
        t0 = time.time()
        try:
            trainer.train()
        except KeyboardInterrupt:  # caught, as a notebook's Ctrl-C: the process goes on
            print("interrupted", file=sys.stderr)
        time.sleep(IDLE)
        t1 = time.time()
        trainer.train()
        t2 = time.time()
        seen = [
            [a.stage, a.label, a.state, a.cause, a.exception, a.seconds,
             a.started_at.timestamp() if a.started_at else None]
            for a in attempts(out)
        ]
        print(json.dumps({"t0": t0, "at": ctrl_c.at, "t1": t1, "t2": t2, "attempts": seen}))
    sys.exit(0)

callbacks = [StageTimerCallback(out, data_wait=mode == "plain")]
if mode in ("kill", "raise"):
    callbacks.append(KillAt())
trainer = Trainer(
    model=Model(), args=args, train_dataset=Data(), eval_dataset=Data(), callbacks=callbacks
)
trainer.train(resume_from_checkpoint=True if mode == "resume" else None)
