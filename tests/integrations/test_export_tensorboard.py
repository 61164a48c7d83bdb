"""``stagetimer export tensorboard``: event files read back by TensorBoard's own reader."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from stagetimer import Recorder
from tests.helpers.cli import run_cli
from tests.integrations.conftest import require
from tests.integrations.trees import T0, record_suite


@pytest.fixture(autouse=True)
def _tensorboard() -> None:
    require("tensorboard")


def _scalars(run: Path) -> dict[str, list[tuple[float, int, float]]]:
    """tag -> (wall time, step, value) as TensorBoard's EventAccumulator reads them."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    reader: Any = EventAccumulator(str(run), size_guidance={"scalars": 0},
                                   purge_orphaned_data=False)
    reader.Reload()
    return {
        tag: sorted((e.wall_time, e.step, e.value) for e in reader.Scalars(tag))
        for tag in reader.Tags()["scalars"]
    }


def _event_files(root: Path) -> list[Path]:
    return sorted(root.rglob("*tfevents*"))


def test_one_scalar_per_stage_and_run_at_the_recorded_wall_time_its_step_the_epoch(
    tmp_path: Path,
) -> None:
    record_suite(tmp_path)
    logs = tmp_path / "logs"
    ran = run_cli("export", "tensorboard", tmp_path / "suite", "--to", logs)
    assert 0 == ran.returncode, ran.stderr
    assert f"8 new scalars from 8 recorded runs to {logs}\n" == ran.stdout
    # a TensorBoard run per directory, run index and rank; the epoch on the x-axis
    for seed in (0, 1):
        start = T0 + 100 * seed
        assert {
            "fit_train": [(start, 0, 10.0 + seed)],
            "train_epoch": [(start, 0, 4.0), (start + 5, 1, 5.0)],
        } == _scalars(logs / "mlp" / f"run{seed}")
    assert {"fit_train": [(T0 + 1000, 0, 8.25)]} == _scalars(logs / "cnn" / "run0" / "rank1")
    assert {"fit_train": [(T0 + 1000, 0, 7.25)]} == _scalars(logs / "cnn" / "run0" / "rank0")
    assert 4 == len(_event_files(logs))


def test_tensorboard_and_mlflow_give_each_point_the_same_step(tmp_path: Path) -> None:
    """One meaning of the step in both: the number the run's label ends with."""
    require("mlflow")
    from mlflow.tracking import MlflowClient

    record_suite(tmp_path)
    logs, uri = tmp_path / "logs", f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert 0 == run_cli("export", "tensorboard", tmp_path / "suite", "--to", logs).returncode
    assert 0 == run_cli("export", "mlflow", tmp_path / "suite", "--to", uri).returncode
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("stagetimer").experiment_id
    from_mlflow = {
        (run.data.tags["stagetimer.directory"], run.data.tags.get("stagetimer.run_idx"),
         run.data.tags.get("stagetimer.rank"), key, m.step, m.value)
        for run in client.search_runs([experiment]) for key in run.data.metrics
        for m in client.get_metric_history(run.info.run_id, key)
    }
    from_tensorboard = set()
    for run in {path.parent for path in _event_files(logs)}:
        parts = run.relative_to(logs).parts
        rank = parts[2][len("rank"):] if len(parts) > 2 else None
        for tag, points in _scalars(run).items():
            for _, step, value in points:
                from_tensorboard.add((str(tmp_path / "suite" / parts[0]),
                                      parts[1][len("run"):], rank, tag, step, value))
    assert 8 == len(from_mlflow)
    assert from_mlflow == from_tensorboard


def test_a_second_export_adds_nothing_and_a_later_one_exactly_the_new_runs(
    tmp_path: Path,
) -> None:
    mlp, _ = record_suite(tmp_path)
    logs = tmp_path / "logs"
    assert 0 == run_cli("export", "tensorboard", tmp_path / "suite", "--to", logs).returncode
    files = _event_files(logs)
    again = run_cli("export", "tensorboard", tmp_path / "suite", "--to", logs)
    assert f"0 new scalars from 8 recorded runs to {logs}\n" == again.stdout
    assert files == _event_files(logs)  # not even an empty event file
    Recorder(mlp, policy="upsert").record("fit_train", 12.0, run_idx=2, started_at=T0 + 200)
    later = run_cli("export", "tensorboard", tmp_path / "suite", "--to", logs)
    assert f"1 new scalars from 9 recorded runs to {logs}\n" == later.stdout
    assert {"fit_train": [(T0 + 200, 0, 12.0)]} == _scalars(logs / "mlp" / "run2")
    assert [(T0, 0, 10.0)] == _scalars(logs / "mlp" / "run0")["fit_train"]


def test_an_unwritable_destination_is_one_line_and_exit_1(tmp_path: Path) -> None:
    record_suite(tmp_path)
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory\n")
    ran = run_cli("export", "tensorboard", tmp_path / "suite", "--to", blocked / "logs")
    assert 1 == ran.returncode
    assert "" == ran.stdout
    assert 1 == len(ran.stderr.splitlines()), ran.stderr
    assert "stagetimer export tensorboard: cannot write TensorBoard events into " in ran.stderr
    assert "Not a directory" in ran.stderr


def test_a_directory_name_that_is_not_utf8_is_renamed_as_documented(tmp_path: Path) -> None:
    odd = tmp_path / "suite" / os.fsdecode(b"caf\xe9")
    Recorder(odd, policy="upsert").record("fit_train", 1.0, run_idx=0, started_at=T0)
    logs = tmp_path / "logs"
    ran = run_cli("export", "tensorboard", tmp_path / "suite", "--to", logs)
    assert 0 == ran.returncode, ran.stderr
    assert {"fit_train": [(T0, 0, 1.0)]} == _scalars(logs / "caf\\xe9" / "run0")
