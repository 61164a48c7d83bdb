"""The Hugging Face Trainer's StageTimerCallback on real fits (CPU, real torch)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integrations.conftest import FITS, free_port, require, run_python, runs_of, stages

pytestmark = pytest.mark.slow

FIT = FITS / "transformers_fit.py"


@pytest.fixture(autouse=True)
def _transformers() -> None:
    require("torch", "transformers", "accelerate")


def test_a_fit_records_the_hook_table_under_the_seed(tmp_path: Path) -> None:
    run_python(FIT, tmp_path, "plain", 2)
    found = stages(tmp_path)
    epochs = [(5, "epoch0", None), (5, "epoch1", None)]
    assert [(5, None, None)] == runs_of(found, "fit_train")
    assert epochs == runs_of(found, "train_epoch")
    assert epochs == runs_of(found, "data_wait")
    # 32 samples, batches of 8: an evaluation and a save after steps 4 and 8
    steps = [(5, "step4", None), (5, "step8", None)]
    assert steps == runs_of(found, "validate")
    assert steps == runs_of(found, "checkpoint_save")
    fit = found["fit_train"][0]["seconds"]
    assert all(0 < r["seconds"] < fit for r in found["validate"] + found["checkpoint_save"])


def test_a_two_process_ddp_fit_records_both_ranks(tmp_path: Path) -> None:
    run_python(
        "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-port", str(free_port()),
        FIT, tmp_path, "ddp", 1, timeout=120, env={"OMP_NUM_THREADS": "1"},
    )
    found = stages(tmp_path)
    assert [(5, None, 0), (5, None, 1)] == runs_of(found, "fit_train")
    assert [(5, "epoch0", 0), (5, "epoch0", 1)] == runs_of(found, "train_epoch")
    assert {2} == {r["world_size"] for r in found["fit_train"]}


def test_a_killed_fit_resumed_from_its_checkpoint_is_the_continuation(tmp_path: Path) -> None:
    killed = run_python(FIT, tmp_path, "kill", 4, check=False)
    assert -9 == killed.returncode, killed.stderr[-2000:]
    found = stages(tmp_path)
    assert "fit_train" not in found
    assert [(5, "epoch0", None), (5, "epoch1", None)] == runs_of(found, "train_epoch")

    run_python(FIT, tmp_path, "resume", 4)
    found = stages(tmp_path)
    assert "fit_train" not in found
    assert [(5, None, None)] == runs_of(found, "fit_train_auto_resume")
    assert [(5, f"epoch{i}", None) for i in range(4)] == runs_of(found, "train_epoch")
    assert {"step4", "step8"} == {r["label"] for r in found["checkpoint_save"]}
    assert {"step12", "step16"} == {r["label"] for r in found["checkpoint_save_auto_resume"]}


def test_a_version_outside_the_range_is_refused_at_construction(tmp_path: Path) -> None:
    done = run_python("-c", (
        "import transformers; transformers.__version__ = '4.30.2'\n"
        "from stagetimer.integrations.transformers import StageTimerCallback\n"
        "try:\n"
        f"    StageTimerCallback({str(tmp_path)!r})\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    ))
    assert (
        "UnsupportedVersionError stagetimer's transformers callback supports transformers "
        ">=4.40,<6.0; transformers 4.30.2 is installed\n"
    ) == done.stdout




def test_a_fit_that_raises_leaves_failed_attempts_naming_the_exception(tmp_path: Path) -> None:
    """The Trainer calls no hook when train() raises: the stages its callback opened are
    settled when the interpreter exits, as failed with the exception that ended it."""
    from stagetimer import attempts

    done = run_python(FIT, tmp_path, "raise", 4, check=False)
    assert 1 == done.returncode and "OverflowError" in done.stderr, done.stderr[-3000:]

    failed = sorted((a.stage, a.label, a.cause, a.exception)
                    for a in attempts(tmp_path) if a.state == "failed")
    assert [
        ("fit_train", None, "raised", "OverflowError"),
        ("train_epoch", "epoch2", "raised", "OverflowError"),
    ] == failed
    assert {"finished"} == {a.state for a in attempts(tmp_path) if a.stage == "train_epoch"
                            and a.label != "epoch2"}
    assert "step the marker" not in "".join(
        p.read_text() for p in (tmp_path / "timings.attempts").iterdir()
    )


def test_a_train_cut_short_by_ctrl_c_in_a_living_process_is_failed_and_continued(
    tmp_path: Path,
) -> None:
    """Under the default recorder ("sequential"), with no directory given: a real
    Ctrl-C at step 10, caught; 1.5 s idle; ``train()`` again with the same callback.
    As the process sees it before it ends: the cut-short fit is failed (interrupted),
    ending at its last step, not a finished run holding the idle time; the second
    ``train()`` is the continuation, timed from its own start, its parts labelled on
    after the last one finished, so no finished part is replaced."""
    done = run_python(FIT, tmp_path, "again", 4)
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    got = sorted((a[0], a[1], a[2], a[3], a[4]) for a in seen["attempts"])
    cut = {(a[0], a[1]): a for a in seen["attempts"] if a[2] == "failed"}
    assert {("fit_train", None), ("train_epoch", "epoch2")} == set(cut)
    assert all(a[2:5] == ("failed", "interrupted", None) for a in got if a[2] == "failed")
    assert {"finished", "failed"} == {a[2] for a in got}
    fit = cut["fit_train", None]
    # up to its last step (the two finished epochs are inside it), never past the Ctrl-C
    done_epochs = [
        a[5] for a in seen["attempts"]
        if a[0] == "train_epoch" and a[2] == "finished" and a[6] < seen["at"]
    ]
    assert 2 == len(done_epochs) and sum(done_epochs) <= fit[5], seen
    assert fit[6] + fit[5] <= seen["at"] + 0.05, seen
    resumed = [a for a in seen["attempts"] if a[0] == "fit_train_auto_resume"]
    assert 1 == len(resumed) and resumed[0][2] == "finished"
    assert seen["t1"] - 0.01 <= resumed[0][6]
    assert resumed[0][5] <= seen["t2"] - seen["t1"]

    found = stages(tmp_path)
    assert "fit_train" not in found  # the fit cut short never finished
    assert [(5, None, None)] == runs_of(found, "fit_train_auto_resume")
    assert [(5, f"epoch{i}", None) for i in range(6)] == runs_of(found, "train_epoch")
    steps = [(5, f"step{s}", None) for s in (4, 8, 12, 16, 20, 24)]
    assert sorted(steps, key=repr) == runs_of(found, "validate")
    assert [(5, "step4", None), (5, "step8", None)] == runs_of(found, "checkpoint_save")
    assert sorted(steps[2:], key=repr) == runs_of(found, "checkpoint_save_auto_resume")
