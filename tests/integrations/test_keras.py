"""Keras 3's StageTimerCallback on a real fit, on the JAX backend (CPU)."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.integrations.conftest import FITS, Session, require, run_python, runs_of, stages

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


def test_fits_under_the_default_recorder_record_each_seed_as_one_run_of_epochs(
    tmp_path: Path,
) -> None:
    """``with Recorder(d): model.fit(..., callbacks=[StageTimerCallback()])``: the
    default policy, "sequential", is the callback's too. Seeds 0 and 1 each leave one
    fit and all their epochs; seed 0 fitted again starts the stages over, as a run 0
    does under "sequential"."""
    done = run_python(FITS / "keras_fit.py", tmp_path, "seeds")
    assert "StageTimerWarning" not in done.stderr, done.stderr[-3000:]
    found = stages(tmp_path)
    assert [(0, None, None)] == runs_of(found, "fit_train")
    assert [(0, "epoch0", None), (0, "epoch1", None)] == runs_of(found, "train_epoch")
    assert [(0, "epoch0", None), (0, "epoch1", None)] == runs_of(found, "validate")

    # the same two seeds without the third fit: both kept, every epoch of each
    again = tmp_path / "two"
    run_python("-c", (
        "import runpy, sys\n"
        f"sys.argv = ['keras_fit.py', {str(again)!r}, 'seeds']\n"
        "import stagetimer.integrations.keras as k\n"
        "fit = k.keras.Model.fit\n"
        "calls = []\n"
        "def two_fits(self, *a, **kw):\n"
        "    calls.append(1)\n"
        "    if len(calls) <= 2:\n"
        "        return fit(self, *a, **kw)\n"
        "k.keras.Model.fit = two_fits\n"
        f"runpy.run_path({str(FITS / 'keras_fit.py')!r}, run_name='__main__')\n"
    ))
    found = stages(again)
    assert [(0, None, None), (1, None, None)] == runs_of(found, "fit_train")
    assert [(s, f"epoch{e}", None) for s in (0, 1) for e in range(3)] == runs_of(
        found, "train_epoch"
    )


NOTEBOOK = [
    "exec(open(HELPERS).read())",
    "times['t0'] = time.time(); model.fit(x, y, epochs=4, batch_size=8, verbose=0, "
    "callbacks=[timer, CtrlC()])",
    "time.sleep(1.5)",
    "model.evaluate(x, y, verbose=0, callbacks=[timer])",
    "times['t1'] = time.time(); model.fit(x, y, epochs=2, batch_size=8, verbose=0, "
    "callbacks=[timer]); times['t2'] = time.time()",
    "seen()",
]


def test_a_fit_cut_short_by_ctrl_c_in_a_living_session_is_failed_and_continued(
    tmp_path: Path,
) -> None:
    """The notebook case: a real Ctrl-C in the second epoch, the prompt shows the
    ``KeyboardInterrupt`` and the session goes on; 1.5 s later the same callback fits
    again (after an evaluation with it, a test). While the session still lives, the
    cut-short fit and epoch are failed (interrupted by ``KeyboardInterrupt``), ending no
    later than the interrupt; the next fit is the continuation, timed from its own start
    (the idle time is nobody's), its epochs labelled on after the last one finished."""
    from stagetimer import attempts

    helpers = FITS / "keras_notebook.py"
    lines = [line.replace("HELPERS", repr(str(helpers))) for line in NOTEBOOK]
    with Session(lines, {"OUT": str(tmp_path)}, tmp_path.parent / "session.err") as session:
        seen = json.loads(session.until("SEEN "))
        assert session.process.poll() is None  # read while the session lives on
        here = sorted(
            (a.stage, a.label, a.state, a.cause, a.exception) for a in attempts(tmp_path)
        )
    found = {(a[0], a[1], a[2]): a for a in seen["attempts"]}
    assert sorted((a[0], a[1], a[2], a[3], a[4]) for a in seen["attempts"]) == here
    assert [
        ("fit_train", None, "failed", "interrupted", "KeyboardInterrupt"),
        ("fit_train_auto_resume", None, "finished", None, None),
        ("test", None, "finished", None, None),
        ("train_epoch", "epoch0", "finished", None, None),
        ("train_epoch", "epoch1", "failed", "interrupted", "KeyboardInterrupt"),
        ("train_epoch", "epoch1", "finished", None, None),
        ("train_epoch", "epoch2", "finished", None, None),
    ] == here

    fit = found["fit_train", None, "failed"]
    # up to its last sign of life (the second epoch's start: the whole first epoch is
    # inside), never past the Ctrl-C (started_at + seconds)
    assert found["train_epoch", "epoch0", "finished"][5] <= fit[5], (seen, fit)
    assert fit[6] + fit[5] <= seen["at"] + 0.05, (seen, fit)
    resumed = found["fit_train_auto_resume", None, "finished"]
    assert seen["t1"] - 0.01 <= resumed[6]
    assert resumed[5] <= seen["t2"] - seen["t1"]
    data = stages(tmp_path)
    assert "fit_train" not in data  # the fit cut short never finished
    assert "validate" not in data  # the evaluation after it is a test, not its validation
    assert [(2, None, None)] == runs_of(data, "test")
    assert [(2, None, None)] == runs_of(data, "fit_train_auto_resume")
    assert [(2, f"epoch{e}", None) for e in range(3)] == runs_of(data, "train_epoch")


def _seconds(text: str) -> float:
    value, unit = text.split()
    return float(value) * {"ms": 1e-3, "s": 1.0, "min": 60.0}[unit]


def _cli(*args: str | Path) -> str:
    return run_python("-m", "stagetimer", *args).stdout


def test_every_summary_of_a_fit_with_its_epochs_totals_its_wall_time(tmp_path: Path) -> None:
    """A Keras fit with its epochs, validations, checkpoints and data-loading waits,
    recorded by the callback under the default recorder: the report's total, the table's,
    ``compute``'s wall time and ``lost``'s productive time each equal the wall time
    measured around ``fit`` (5 %). Each moment counts once: an epoch inside its fit, a
    validation, a checkpoint or a wait inside the stage open around it (their ``parent``).
    """
    done = run_python(FITS / "keras_fit.py", tmp_path, "wall")
    wall = json.loads(done.stdout.strip().splitlines()[-1])["wall"]

    report = re.search(r"(\d+(?:\.\d+)? (?:ms|s|min)) in all", _cli("report", tmp_path))
    assert report is not None
    rows = list(csv.DictReader(io.StringIO(_cli("table", "--csv", tmp_path))))
    compute: Any = json.loads(_cli("compute", "--json", tmp_path))
    lost: Any = json.loads(_cli("lost", "--json", tmp_path))
    totals = {
        "report": _seconds(report.group(1)),
        "table": sum(float(row["total_seconds"]) for row in rows),
        "compute": sum(h["total"]["wall_seconds"] for h in compute["hardware"]),
        "lost": lost["total"]["productive_seconds"],
    }
    wrong = {k: v for k, v in totals.items() if abs(v - wall) > 0.05 * wall}
    assert not wrong, f"wall time around fit {wall:.3f} s; totals {totals}"
