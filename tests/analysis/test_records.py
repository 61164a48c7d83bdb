"""``to_records`` / ``to_frame``: one row per run with the documented columns, on the example
suite and on hand-made directories."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from stagetimer import Recorder, load_timings, record_timing, to_frame, to_records
from stagetimer._analysis.rows import HARDWARE_COLUMNS, RECORD_COLUMNS
from stagetimer.hardware import capture_hardware, hardware_id

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "temporal_game_experiment.py"


@pytest.fixture(scope="module")
def example_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    exports = tmp_path_factory.mktemp("example") / "exports"
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--exports", str(exports), "--train-steps", "200"],
        capture_output=True, text=True, timeout=120,
    )
    assert 0 == done.returncode, done.stderr
    return exports


def test_records_have_the_documented_columns_in_order() -> None:
    assert (
        "artifact", "stage", "base_stage", "auto_resume", "run_idx", "label", "seconds",
        "started_at", "hardware_id", "software_id", "commit", "dirty", "rank", "world_size",
        "cpus", "job_id", "cpu_model", "logical_cpus", "physical_cores",
        "memory_limit_bytes", "gpu_count", "gpu_name", "gpu_peak_bandwidth_bytes_per_s",
        "cpu_seconds", "children_cpu_seconds", "memory_peak_bytes", "gpu_energy_joules",
    ) == RECORD_COLUMNS


def test_example_suite_records_are_one_row_per_stored_run(example_suite: Path) -> None:
    rows = to_records(example_suite)

    expected = []
    for directory in sorted({r["artifact"] for r in rows}):
        for name, stage in load_timings(directory).stages.items():
            expected += [(directory, name, run.run_idx, run.seconds) for run in stage.runs]
    assert sorted(expected, key=repr) == sorted(
        ((r["artifact"], r["stage"], r["run_idx"], r["seconds"]) for r in rows), key=repr
    )
    assert [list(RECORD_COLUMNS)] == [list(c) for c in {tuple(r) for r in rows}]


def test_example_suite_auto_resume_rows_name_their_base_stage(example_suite: Path) -> None:
    rows = to_records(example_suite)

    resumed = {(r["stage"], r["base_stage"], r["auto_resume"]) for r in rows if r["auto_resume"]}
    plain = {(r["stage"], r["base_stage"]) for r in rows if not r["auto_resume"]}
    assert {("iql_cer_train_auto_resume", "iql_cer_train", True)} <= resumed
    assert all(stage == base for stage, base in plain)
    assert all(stage == base + "_auto_resume" for stage, base, _ in resumed)


def test_example_suite_hardware_summary_is_this_machine(example_suite: Path) -> None:
    here = capture_hardware()
    rows = to_records(example_suite)

    assert {
        (hardware_id(here), here.cpu.model_name, here.cpu.logical_cpus, here.cpu.physical_cores,
         here.memory.limit_bytes, len(here.gpus))
    } == {
        (r["hardware_id"], r["cpu_model"], r["logical_cpus"], r["physical_cores"],
         r["memory_limit_bytes"], r["gpu_count"])
        for r in rows
    }


def test_metadata_keys_become_meta_columns_present_in_every_row(tmp_path: Path) -> None:
    rec = Recorder(tmp_path)
    record_timing("ippo_train", 1.0, run_idx=0, recorder=rec, steps=10000)
    record_timing("ippo_train", 2.0, run_idx=1, recorder=rec, lr=0.1)

    rows = to_records(tmp_path)

    assert [(10000, None), (None, 0.1)] == [(r["meta.steps"], r["meta.lr"]) for r in rows]


def test_job_id_comes_from_the_runs_job(tmp_path: Path) -> None:
    record_timing("ippo_train", 1.0, run_idx=0, recorder=Recorder(tmp_path))
    path = tmp_path / "timings.json"
    data = json.loads(path.read_text())
    data["ippo_train"]["runs"][0]["job"] = {"scheduler": "slurm", "job_id": "4711"}
    path.write_text(json.dumps(data))

    [row] = to_records(tmp_path)

    assert ("4711", False) == (row["job_id"], any(k.startswith("meta.job") for k in row))


def test_an_undescribed_hardware_id_gives_empty_hardware_columns(tmp_path: Path) -> None:
    record_timing("nashconv", 1.0, recorder=Recorder(tmp_path))
    (tmp_path / "timings_hardware.json").unlink()

    [row] = to_records(tmp_path)

    # the software description went with the file: its commit is unknown too
    assert [None] * 9 == [row[c] for c in ("commit", "dirty", *HARDWARE_COLUMNS)]


def _plain(value: Any) -> Any:
    import pandas

    if value is None or value is pandas.NA or value is pandas.NaT:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, pandas.Timestamp):
        return value.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return value.item() if hasattr(value, "item") else value


def test_to_frame_equals_the_records(example_suite: Path) -> None:
    pytest.importorskip("pandas")
    rows = to_records(example_suite)

    frame = to_frame(example_suite)

    assert list(rows[0]) == list(frame.columns)
    as_rows = [{k: _plain(v) for k, v in r.items()} for r in frame.to_dict("records")]
    assert [{k: _plain(v) for k, v in r.items()} for r in rows] == as_rows


def test_to_frame_has_nullable_integers_and_utc_datetimes(tmp_path: Path) -> None:
    pytest.importorskip("pandas")
    rec = Recorder(tmp_path)
    record_timing("nashconv", 1.0, run_idx=3, recorder=rec, steps=10, lr=0.1)
    record_timing("nashconv", 2.0, run_idx=4, recorder=rec, lr=0.2)  # no steps
    record_timing("checkpoint_save", 2.0, recorder=rec, lr=0.2)  # no run_idx, no steps

    frame = to_frame(tmp_path)

    assert ("Int64", "Int64", "float64", "datetime64[ns, UTC]", [3, 4, None],
            [10, None, None]) == (
        str(frame["run_idx"].dtype), str(frame["meta.steps"].dtype), str(frame["meta.lr"].dtype),
        str(frame["started_at"].dtype), [_plain(v) for v in frame["run_idx"]],
        [_plain(v) for v in frame["meta.steps"]],
    )


def test_to_frame_without_pandas_says_how_to_install_it(tmp_path: Path) -> None:
    blocker = tmp_path / "no_pandas" / "pandas"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('No module named pandas')\n")
    record_timing("nashconv", 1.0, recorder=Recorder(tmp_path / "d"))
    script = (
        "import sys, stagetimer\n"
        "try:\n    stagetimer.to_frame(sys.argv[1])\n"
        "except ImportError as exc:\n    print(exc)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(blocker.parent)}

    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "d")],
                          capture_output=True, text=True, timeout=60, env=env)

    assert "pip install 'stagetimer[pandas]'" in done.stdout, done.stderr


def test_records_of_a_missing_path_raise_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        to_records(tmp_path / "missing")
