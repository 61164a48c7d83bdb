"""Keras 3's StageTimerCallback on a real fit, on the JAX backend (CPU)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integrations.conftest import FITS, require, run_python, runs_of, stages

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _keras() -> None:
    require("jax", "keras")


def test_a_fit_an_evaluation_and_a_resumed_fit_record_the_hook_table(tmp_path: Path) -> None:
    run_python(FITS / "keras_fit.py", tmp_path)
    found = stages(tmp_path)
    first = [(3, "epoch0", None), (3, "epoch1", None)]
    assert [(3, None, None)] == runs_of(found, "fit_train")
    assert [*first, (3, "epoch2", None)] == runs_of(found, "train_epoch")
    assert first == runs_of(found, "validate")
    assert first == runs_of(found, "checkpoint_save")
    assert [(3, None, None)] == runs_of(found, "test")  # model.evaluate outside fit
    assert [*first, (3, "epoch2", None)] == runs_of(found, "data_wait")
    # fit(initial_epoch=2) resumes: the continuation stages
    assert [(3, None, None)] == runs_of(found, "fit_train_auto_resume")
    assert [(3, "epoch2", None)] == runs_of(found, "checkpoint_save_auto_resume")


def test_a_version_outside_the_range_is_refused_at_construction(tmp_path: Path) -> None:
    done = run_python("-c", (
        "import keras; keras.__version__ = '2.15.0'\n"
        "from stagetimer.integrations.keras import StageTimerCallback\n"
        "try:\n"
        f"    StageTimerCallback({str(tmp_path)!r})\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    ))
    assert (
        "UnsupportedVersionError stagetimer's keras callback supports keras "
        ">=3.0,<4.0; keras 2.15.0 is installed\n"
    ) == done.stdout


def test_a_checkpoint_callback_that_saves_per_batch_is_refused(tmp_path: Path) -> None:
    done = run_python("-c", (
        "import keras\n"
        "from stagetimer.integrations.keras import StageTimerCallback\n"
        f"c = keras.callbacks.ModelCheckpoint({str(tmp_path / 'm.keras')!r}, save_freq=5)\n"
        "try:\n"
        f"    StageTimerCallback({str(tmp_path)!r}, checkpoint=c)\n"
        "except ValueError as exc:\n"
        "    print(type(exc).__name__)\n"
    ))
    assert "InvalidSettingError\n" == done.stdout


RAISING_FIT = """
import os, sys
os.environ["KERAS_BACKEND"] = "jax"
import keras
import numpy as np
from stagetimer.integrations.keras import StageTimerCallback

class Diverged(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        if batch == 2:
            raise FloatingPointError("loss is nan at a step the marker must not name")

x = np.zeros((32, 4), dtype="float32")
y = np.zeros((32, 1), dtype="float32")
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
model.compile("sgd", "mse")
model.fit(x, y, epochs=2, batch_size=8, verbose=0,
          callbacks=[StageTimerCallback(sys.argv[1], run_idx=5), Diverged()])
"""


def test_a_fit_that_raises_leaves_failed_attempts_naming_the_exception(tmp_path: Path) -> None:
    """Keras calls no hook when fit raises: the stages its callback opened are settled
    when the interpreter exits, as failed with the exception that ended the program."""
    from stagetimer import attempts

    done = run_python("-c", RAISING_FIT, tmp_path, check=False)
    assert 1 == done.returncode and "FloatingPointError" in done.stderr, done.stderr[-3000:]

    found = sorted((a.stage, a.label, a.state, a.cause, a.exception) for a in attempts(tmp_path))
    assert [
        ("fit_train", None, "failed", "raised", "FloatingPointError"),
        ("train_epoch", "epoch0", "failed", "raised", "FloatingPointError"),
    ] == found
    assert "step the marker" not in "".join(
        p.read_text() for p in (tmp_path / "timings.attempts").iterdir()
    )
