"""What a notebook's first cell defines, for a Keras session that a real Ctrl-C cuts short.

Read into an interactive interpreter (``python -i``) with ``exec``; the session then
fits, is interrupted by a real SIGINT in its second epoch (Python's own handler raises
``KeyboardInterrupt``, which the prompt shows and the session survives), idles, fits
again with the same callback, and calls ``seen()``. Needs ``OUT`` in the environment.
"""

import json
import os
import signal
import time

os.environ["KERAS_BACKEND"] = "jax"

import keras
import numpy as np

from stagetimer import attempts
from stagetimer.integrations.keras import StageTimerCallback

OUT = os.environ["OUT"]
rng = np.random.default_rng(0)
x = rng.random((64, 4), dtype="float32")
y = rng.random((64, 1), dtype="float32")
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dense(1)])
model.compile("sgd", "mse")
timer = StageTimerCallback(OUT, run_idx=2)
times = {}


class CtrlC(keras.callbacks.Callback):
    """Sends this process a SIGINT at the third step of the second epoch."""

    epoch = 0

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if "at" not in times and self.epoch == 1 and batch == 2:
            times["at"] = time.time()
            os.kill(os.getpid(), signal.SIGINT)


def seen():
    """The times and this directory's attempts as this process sees them, as one line."""
    found = [
        [a.stage, a.label, a.state, a.cause, a.exception, a.seconds,
         a.started_at.timestamp() if a.started_at else None]
        for a in attempts(OUT)
    ]
    print("SEEN " + json.dumps({**times, "attempts": found}), flush=True)
