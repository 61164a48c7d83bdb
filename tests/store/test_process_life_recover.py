"""Rescue files kept in step with what is pending, and ``recover`` folding them back."""

from __future__ import annotations

import json
import logging
import multiprocessing
import pickle
import pydoc
import warnings
from pathlib import Path

import pytest
from helpers.process_life import rescued_records, stage_runs, temp_files
from helpers.rescue import orphan

from stagetimer import Recorder, StageTimerWarning, record_timing, recover
from stagetimer._cli import main


def _fail_saves(directory: Path) -> bytes:
    """Make ``timings.json`` unparsable; return what it held."""
    path = directory / "timings.json"
    good = path.read_bytes() if path.exists() else b""
    directory.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"{broken")
    return good


def _restore(directory: Path, good: bytes) -> None:
    path = directory / "timings.json"
    if good:
        path.write_bytes(good)
    else:
        path.unlink()


def test_a_failed_save_is_in_the_rescue_file_before_the_stage_returns(art: Path) -> None:
    rec = Recorder(art)
    record_timing("train", 1.0, run_idx=0, recorder=rec)
    _fail_saves(art)
    with pytest.warns(StageTimerWarning, match="stagetimer recover"):
        record_timing("train", 2.0, run_idx=1, recorder=rec)

    assert [("train", 2.0, 1)] == [
        (r["stage"], r["run"]["seconds"], r["run"]["run_idx"]) for r in rescued_records(art)
    ]


def test_a_later_save_that_stores_the_record_removes_the_rescue_file(art: Path) -> None:
    rec = Recorder(art)
    record_timing("train", 1.0, run_idx=0, recorder=rec)
    good = _fail_saves(art)
    with pytest.warns(StageTimerWarning):
        record_timing("train", 2.0, run_idx=1, recorder=rec)
    _restore(art, good)

    record_timing("train", 3.0, run_idx=2, recorder=rec)

    assert [1.0, 2.0, 3.0] == [r["seconds"] for r in stage_runs(art, "train")]
    assert [] == rescued_records(art)
    assert [] == temp_files(art)


def test_one_recorder_keeps_one_rescue_file_with_all_its_pending_records(art: Path) -> None:
    rec = Recorder(art)
    record_timing("train", 1.0, run_idx=0, recorder=rec)
    _fail_saves(art)
    with pytest.warns(StageTimerWarning):
        record_timing("train", 2.0, run_idx=1, recorder=rec)
    with pytest.warns(StageTimerWarning):
        record_timing("train", 3.0, run_idx=2, recorder=rec)

    assert 1 == len(list(art.glob("timings.rescue-*.json")))
    assert [1, 2] == [r["run"]["run_idx"] for r in rescued_records(art)]


def test_recover_folds_the_rescue_file_back_and_removes_it(art: Path) -> None:
    rec = Recorder(art, expected_runs=5)
    record_timing("train", 1.0, run_idx=0, recorder=rec)
    good = _fail_saves(art)
    with pytest.warns(StageTimerWarning):
        record_timing("train", 2.0, run_idx=1, recorder=rec)
    with pytest.warns(StageTimerWarning):
        record_timing("alpharank", 9.0, recorder=rec)
    rec._saver.pending.clear()  # the process died: only the rescue file is left
    orphan(art)
    _restore(art, good)

    (done,) = recover(art)

    assert (2, 0) == (done.stored, done.already)
    assert [1.0, 2.0] == [r["seconds"] for r in stage_runs(art, "train")]
    assert [9.0] == [r["seconds"] for r in stage_runs(art, "alpharank")]
    assert 5 == json.loads((art / "timings.json").read_text())["train"]["expected_runs"]
    assert [] == rescued_records(art)


def test_recover_twice_changes_nothing(art: Path) -> None:
    rec = Recorder(art)
    record_timing("train", 1.0, run_idx=0, recorder=rec)
    good = _fail_saves(art)
    with pytest.warns(StageTimerWarning):
        record_timing("train", 2.0, run_idx=1, recorder=rec)
    rec._saver.pending.clear()
    orphan(art)
    _restore(art, good)
    recover(art)
    before = (art / "timings.json").read_bytes()

    assert [] == recover(art)
    assert before == (art / "timings.json").read_bytes()


def test_recover_does_not_store_a_record_again_that_a_save_already_stored(art: Path) -> None:
    # The process stored the record but died before it could remove the rescue file.
    rec = Recorder(art)
    record_timing("train", 1.0, run_idx=0, recorder=rec)
    good = _fail_saves(art)
    with pytest.warns(StageTimerWarning):
        record_timing("train", 2.0, run_idx=1, recorder=rec)
    (rescue,) = art.glob("timings.rescue-*.json")
    kept = rescue.read_bytes()
    _restore(art, good)
    rec.close()
    rescue.write_bytes(kept)
    orphan(art)

    (done,) = recover(art)

    assert (0, 1) == (done.stored, done.already)
    assert [0, 1] == [r["run_idx"] for r in stage_runs(art, "train")]


def test_the_recover_command_prints_one_line_per_rescue_file(
    art: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rec = Recorder(art)
    record_timing("train", 1.0, run_idx=0, recorder=rec)
    good = _fail_saves(art)
    with pytest.warns(StageTimerWarning):
        record_timing("train", 2.0, run_idx=1, recorder=rec)
    rec._saver.pending.clear()
    orphan(art)
    _restore(art, good)

    assert 0 == main(["recover", str(art)])
    (line,) = capsys.readouterr().out.splitlines()
    assert "1 record(s) stored" in line
    assert [0, 1] == [r["run_idx"] for r in stage_runs(art, "train")]


def test_the_recover_command_names_a_rescue_file_that_does_not_parse(
    art: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    art.mkdir(parents=True)
    (art / "timings.rescue-20261201T000000000000Z-1.json").write_text("{nope")

    assert 1 == main(["recover", str(art)])
    err = capsys.readouterr().err.splitlines()
    assert 1 == len(err)
    assert "timings.rescue-20261201T000000000000Z-1.json" in err[0]
    assert "does not parse" in err[0]
    assert not (art / "timings.json").exists()


def test_the_recover_command_refuses_a_path_that_is_not_a_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert 1 == main(["recover", str(tmp_path / "missing")])
    assert 1 == len(capsys.readouterr().err.splitlines())


def test_a_failed_save_is_reported_once_through_warnings_only(
    art: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rec = Recorder(art)
    record_timing("train", 1.0, run_idx=0, recorder=rec)
    _fail_saves(art)
    caplog.set_level(logging.DEBUG, logger="stagetimer")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        record_timing("train", 2.0, run_idx=1, recorder=rec)

    assert 1 == len([w for w in caught if issubclass(w.category, StageTimerWarning)])
    assert [] == [r for r in caplog.records if r.levelno > logging.DEBUG]


def test_any_exception_from_a_save_keeps_the_record(
    art: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = Recorder(art)
    record_timing("train", 1.0, run_idx=0, recorder=rec)

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug in a dependency")

    monkeypatch.setattr("stagetimer._record.saver.update_file", broken)
    with pytest.warns(StageTimerWarning, match="a bug in a dependency"):
        record_timing("train", 2.0, run_idx=1, recorder=rec)
    monkeypatch.undo()

    assert 1 == rec.pending
    rec.close()
    assert [1.0, 2.0] == [r["seconds"] for r in stage_runs(art, "train")]


@pytest.mark.parametrize("timeout", [float("inf"), 1e10])
def test_a_lock_timeout_of_infinity_or_a_huge_number_saves(art: Path, timeout: float) -> None:
    record_timing("train", 1.0, recorder=Recorder(art, lock_timeout=timeout, strict=True))

    assert [1.0] == [r["seconds"] for r in stage_runs(art, "train")]


@pytest.mark.parametrize("value", [float("nan"), -1.0, "60", True])
def test_a_lock_timeout_that_is_not_seconds_is_refused(art: Path, value: object) -> None:
    with pytest.raises(ValueError, match="lock_timeout"):
        Recorder(art, lock_timeout=value)  # type: ignore[arg-type]


def test_a_bytes_directory_is_refused_at_construction(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="bytes paths are not supported"):
        Recorder(bytes(tmp_path))  # type: ignore[arg-type]


def test_a_directory_that_is_a_file_is_refused_at_construction_naming_it(tmp_path: Path) -> None:
    script = tmp_path / "suite.py"
    script.write_text("print()")

    with pytest.raises(ValueError, match=r"suite\.py.*not a directory"):
        Recorder(script)


@pytest.mark.parametrize("value", [0, -2, 2.5, True, "4"])
def test_expected_runs_that_is_not_a_count_is_refused(art: Path, value: object) -> None:
    with pytest.raises(ValueError, match="expected_runs"):
        Recorder(art, expected_runs=value)  # type: ignore[arg-type]


def test_expected_runs_is_written_into_each_indexed_stage(art: Path) -> None:
    rec = Recorder(art, expected_runs=10)
    record_timing("train", 1.0, run_idx=0, recorder=rec)
    record_timing("train", 1.0, run_idx=1, recorder=rec)
    record_timing("alpharank", 1.0, recorder=rec)

    data = json.loads((art / "timings.json").read_text())
    assert 10 == data["train"]["expected_runs"]
    assert "expected_runs" not in data["alpharank"]


def _record_in_worker(rec: Recorder, seed: int) -> int:
    record_timing("train", float(seed), run_idx=seed, recorder=rec)
    return seed


def test_a_recorder_is_pickled_to_a_spawn_worker_and_saves_there(art: Path) -> None:
    rec = Recorder(art, policy="upsert", expected_runs=3)
    clone = pickle.loads(pickle.dumps(rec))
    assert (rec.directory, rec.policy, rec.expected_runs) == (
        clone.directory, clone.policy, clone.expected_runs
    )

    with multiprocessing.get_context("spawn").Pool(2) as pool:
        assert [0, 1, 2] == sorted(pool.starmap(_record_in_worker, [(rec, i) for i in range(3)]))

    assert [0, 1, 2] == [r["run_idx"] for r in stage_runs(art, "train")]


def test_help_of_recorder_documents_each_parameter() -> None:
    text = pydoc.render_doc(Recorder, renderer=pydoc.plaintext)

    for parameter in (
        "directory", "resume_partial_runs", "completed_runs", "policy", "strict",
        "lock_timeout", "expected_runs",
    ):
        assert f"\n    {parameter}" in text or f" {parameter}\n" in text, parameter
    assert "Method generated by attrs" not in text.split("Methods defined here")[0]
