"""A tiny Keras 3 fit on the JAX backend (CPU), timed by StageTimerCallback.

    python keras_fit.py OUT
"""

import os
import sys

os.environ["KERAS_BACKEND"] = "jax"

import keras
import numpy as np

from stagetimer.integrations.keras import StageTimerCallback

out = sys.argv[1]
keras.utils.set_random_seed(3)
rng = np.random.default_rng(0)
x = rng.random((64, 4), dtype="float32")
y = rng.random((64, 1), dtype="float32")
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dense(1)])
model.compile("sgd", "mse")
checkpoint = keras.callbacks.ModelCheckpoint(os.path.join(out, "model.keras"))
timer = StageTimerCallback(out, run_idx=3, checkpoint=checkpoint, data_wait=True)
model.fit(x, y, epochs=2, batch_size=16, validation_split=0.25, callbacks=[timer], verbose=0)
model.evaluate(x, y, callbacks=[timer], verbose=0)
# Resumed from its checkpoint: Keras starts at epoch 2.
model = keras.models.load_model(os.path.join(out, "model.keras"))
model.fit(x, y, epochs=3, initial_epoch=2, batch_size=16, callbacks=[timer], verbose=0)
