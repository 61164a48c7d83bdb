"""What a recorder writes stays readable by its own readers, and in one place: a marker
bounds every text it holds (a 70,000-character label or stage name, an exception's type
name), and a recorder's directory is fixed, absolute, when it is made (a later
``os.chdir`` moves nothing)."""

from __future__ import annotations

import signal
import warnings
from pathlib import Path

import pytest
from helpers.process_life import run_script, stage_runs

from stagetimer import StageTimerWarning, attempts
from stagetimer._format import MARKER_MAX_BYTES

LONG = 70_000

#: argv[2] says which text is long: the label, the stage name, the exception's type
#: name; the block raises, so its marker is what tells the attempt.
LONG_TEXT = """
import sys
from stagetimer import Recorder, stage
n, which = int(sys.argv[3]), sys.argv[2]
label = "λ" * n if which == "label" else "lr"
name = "s" * n if which == "stage" else "train"
error = type("E" * n if which == "exception" else "Boom", (Exception,), {})
try:
    with stage(name, run_idx=0, label=label, recorder=Recorder(sys.argv[1])):
        raise error()
except Exception:
    pass
"""


@pytest.mark.parametrize("which", ["label", "stage", "exception"])
def test_a_failed_attempt_with_a_very_long_text_is_read_and_counted(
    tmp_path: Path, which: str
) -> None:
    run_script(LONG_TEXT, tmp_path, which, LONG)

    (path,) = (tmp_path / "timings.attempts").glob("*.json")
    with warnings.catch_warnings():
        warnings.simplefilter("error", StageTimerWarning)  # no marker refused
        (found,) = attempts(tmp_path)

    assert path.stat().st_size < MARKER_MAX_BYTES
    assert ("failed", "raised") == (found.state, found.cause)
    shown = {"label": found.label, "stage": found.stage, "exception": found.exception}[which]
    assert shown is not None and shown.endswith(" characters, truncated]")


#: A recorder made with a relative path, then ``chdir`` inside its block; argv[1]: the
#: working directory to start in, argv[2]: the one to move to. Killed in its last stage.
CHDIR = """
import os, signal, sys
from stagetimer import Recorder, stage
os.chdir(sys.argv[1])
rec = Recorder("exp")
with rec:
    with stage("before", run_idx=0):
        pass
    with stage("train", run_idx=0):
        os.chdir(sys.argv[2])
    with stage("after", run_idx=0):
        pass
    with stage("killed", run_idx=0):
        os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_chdir_inside_the_block_changes_no_directory(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()

    done = run_script(CHDIR, first, second, check=False)

    assert -signal.SIGKILL == done.returncode, done.stderr
    assert not (second / "exp").exists()
    exp = first / "exp"
    assert [1, 1, 1] == [len(stage_runs(exp, n)) for n in ("before", "train", "after")]
    states = {a.stage: a.state for a in attempts(exp)}
    assert {"before": "finished", "train": "finished", "after": "finished",
            "killed": "killed"} == states


def test_a_recorder_names_its_directory_absolute(tmp_path: Path) -> None:
    from stagetimer import Recorder

    assert Recorder(tmp_path / "x").directory == str(tmp_path / "x")
    assert Path(Recorder("rel/x").directory).is_absolute()
