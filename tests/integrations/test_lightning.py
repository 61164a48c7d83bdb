"""Lightning's StageTimerCallback on real fits (CPU, real torch), each in a subprocess."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli
from tests.integrations.conftest import FITS, require, run_python, runs_of, stages
from tests.integrations.test_export_otlp import attributes, spans

pytestmark = pytest.mark.slow

FIT = FITS / "lightning_fit.py"


@pytest.fixture(autouse=True)
def _lightning() -> None:
    require("torch", "lightning")


def test_a_fit_records_the_hook_table_under_the_seed(tmp_path: Path) -> None:
    run_python(FIT, tmp_path, "plain", 2)
    found = stages(tmp_path)
    epochs = [(7, "epoch0", None), (7, "epoch1", None)]
    assert [(7, None, None)] == runs_of(found, "fit_train")
    assert epochs == runs_of(found, "train_epoch")
    assert epochs == runs_of(found, "validate")  # the sanity check is not a validation
    assert epochs == runs_of(found, "data_wait")
    assert [(7, "step4", None), (7, "step8", None)] == sorted(runs_of(found, "checkpoint_save"))
    assert [(7, None, None)] == runs_of(found, "test")
    fit = found["fit_train"][0]["seconds"]
    assert sum(r["seconds"] for r in found["train_epoch"]) <= fit
    assert all(r["seconds"] < fit for r in found["checkpoint_save"])


def test_a_two_process_ddp_fit_records_both_ranks(tmp_path: Path) -> None:
    run_python(FIT, tmp_path, "ddp", 1, timeout=150)
    found = stages(tmp_path)
    assert [(7, None, 0), (7, None, 1)] == runs_of(found, "fit_train")
    assert [(7, "epoch0", 0), (7, "epoch0", 1)] == runs_of(found, "train_epoch")
    assert {2} == {r["world_size"] for r in found["fit_train"]}
    # Only the rank that writes checkpoints times their saving.
    assert {0} == {r["rank"] for r in found["checkpoint_save"]}


def test_a_killed_fit_resumed_from_its_checkpoint_is_the_continuation(tmp_path: Path) -> None:
    killed = run_python(FIT, tmp_path, "kill", 4, check=False)
    assert -9 == killed.returncode, killed.stderr[-2000:]
    found = stages(tmp_path)
    assert "fit_train" not in found  # killed: never finished
    assert [(7, "epoch0", None), (7, "epoch1", None)] == runs_of(found, "train_epoch")
    # ... and its attempts say so: the fit and its third epoch were killed
    require("opentelemetry.proto")
    out = tmp_path / "spans.jsonl"
    assert 0 == run_cli("export", "otlp", tmp_path, "--to", out).returncode
    states = {
        (s.name, attributes(s).get("stagetimer.label")): s.status.message or "ok"
        for s in spans(out) if "stagetimer.stage" in attributes(s)
    }
    assert "killed" == states[("fit_train", None)]
    assert "killed" == states[("train_epoch", "epoch2")]
    assert "ok" == states[("train_epoch", "epoch1")]

    run_python(FIT, tmp_path, "resume", 4)
    found = stages(tmp_path)
    assert "fit_train" not in found
    assert [(7, None, None)] == runs_of(found, "fit_train_auto_resume")
    assert [(7, f"epoch{i}", None) for i in range(4)] == runs_of(found, "train_epoch")
    # 4 steps an epoch: the resumed fit saves after epochs 2 and 3, the killed one after 0, 1
    assert {"step12", "step16"} == {r["label"] for r in found["checkpoint_save_auto_resume"]}
    assert {"step4", "step8"} == {r["label"] for r in found["checkpoint_save"]}


def test_a_version_outside_the_range_is_refused_at_construction(tmp_path: Path) -> None:
    done = run_python("-c", (
        "import lightning; lightning.__version__ = '1.9.5'\n"
        "from stagetimer.integrations.lightning import StageTimerCallback\n"
        "try:\n"
        f"    StageTimerCallback({str(tmp_path)!r})\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    ))
    assert (
        "UnsupportedVersionError stagetimer's lightning callback supports lightning "
        ">=2.0,<3.0; lightning 1.9.5 is installed\n"
    ) == done.stdout
    assert not (tmp_path / "timings.json").exists()


def test_a_fit_after_one_that_raised_in_a_living_process_is_its_continuation(
    tmp_path: Path,
) -> None:
    """Under the default recorder ("sequential"), with no directory given: a fit that
    raises at its third epoch, caught; 1.5 s idle; a new ``Trainer`` fits again with
    the same callback from inside the ``except`` block. As the process sees it: the
    first fit failed (raised ``ArithmeticError``) when it raised; the second is the
    continuation, timed from its own start, its parts labelled on after the last one
    finished."""
    done = run_python(FIT, tmp_path, "again", 4)
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    failed = sorted((a[0], a[1], a[3], a[4]) for a in seen["attempts"] if a[2] == "failed")
    assert [
        ("fit_train", None, "raised", "ArithmeticError"),
        ("train_epoch", "epoch2", "raised", "ArithmeticError"),
    ] == failed
    fit = next(a for a in seen["attempts"] if a[0] == "fit_train")
    # up to the raise (the two finished epochs are inside it), never past it
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
    assert "fit_train" not in found
    assert [(7, None, None)] == runs_of(found, "fit_train_auto_resume")
    assert [(7, f"epoch{i}", None) for i in range(6)] == runs_of(found, "train_epoch")
    assert [(7, f"epoch{i}", None) for i in range(6)] == runs_of(found, "validate")
    assert [(7, "step4", None), (7, "step8", None)] == runs_of(found, "checkpoint_save")
    assert sorted(
        [(7, f"step{s}", None) for s in (12, 16, 20, 24)], key=repr
    ) == runs_of(found, "checkpoint_save_auto_resume")
