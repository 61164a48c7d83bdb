"""A tiny Keras 3 fit on the JAX backend (CPU), timed by StageTimerCallback.

    python keras_fit.py OUT [MODE]

MODE: ``hooks`` (the default: a fit with validation, a checkpoint and data_wait, an
evaluation, and a fit resumed from the checkpoint), ``seeds`` (under the default
recorder: seeds 0 and 1, then seed 0 again with fewer epochs), ``wall`` (under the
default recorder: one fit of a few seconds with its epochs, validation, checkpoints and
data_wait; prints the wall time measured around it, as JSON).
"""

import json
import os
import sys
import time

os.environ["KERAS_BACKEND"] = "jax"

import keras
import numpy as np

from stagetimer import Recorder
from stagetimer.integrations.keras import StageTimerCallback

out = sys.argv[1]
mode = sys.argv[2] if len(sys.argv) > 2 else "hooks"
keras.utils.set_random_seed(3)
rng = np.random.default_rng(0)


def model_of(width):
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(width), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    return model


if mode == "seeds":
    x = rng.random((64, 4), dtype="float32")
    y = rng.random((64, 1), dtype="float32")
    with Recorder(out):  # the default policy, "sequential"
        for seed, epochs in ((0, 3), (1, 3), (0, 2)):
            model_of(8).fit(
                x, y, epochs=epochs, batch_size=16, validation_split=0.25, verbose=0,
                callbacks=[StageTimerCallback(run_idx=seed)],
            )
    sys.exit(0)

if mode == "wall":
    x = rng.random((4096, 4), dtype="float32")
    y = rng.random((4096, 1), dtype="float32")
    model = model_of(256)
    # Checkpoints and the data-loading wait are runs measured between hooks, each inside
    # the stage open around it.
    saving = keras.callbacks.ModelCheckpoint(os.path.join(out, "wall.keras"))
    with Recorder(out):  # the default policy, "sequential"
        started = time.perf_counter()
        model.fit(
            x, y, epochs=20, batch_size=16, validation_split=0.25, verbose=0,
            callbacks=[StageTimerCallback(checkpoint=saving, data_wait=True)],
        )
        wall = time.perf_counter() - started
    print(json.dumps({"wall": wall}))
    sys.exit(0)

x = rng.random((64, 4), dtype="float32")
y = rng.random((64, 1), dtype="float32")
model = model_of(8)
checkpoint = keras.callbacks.ModelCheckpoint(os.path.join(out, "model.keras"))
timer = StageTimerCallback(out, run_idx=3, checkpoint=checkpoint, data_wait=True)
model.fit(x, y, epochs=2, batch_size=16, validation_split=0.25, callbacks=[timer], verbose=0)
model.evaluate(x, y, callbacks=[timer], verbose=0)
# Resumed from its checkpoint: Keras starts at epoch 2.
model = keras.models.load_model(os.path.join(out, "model.keras"))
model.fit(x, y, epochs=3, initial_epoch=2, batch_size=16, callbacks=[timer], verbose=0)
