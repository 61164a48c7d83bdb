"""The four ways to time a stage, which recorder they use, and what happens on errors."""

from __future__ import annotations

import asyncio
import re
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import read_json

import stagetimer
from stagetimer import (
    InvalidRecordError,
    NoActiveRecorderError,
    Recorder,
    load_timings,
    record_timing,
    stage,
    stages,
    timed_stage,
)


def stage_runs(art: Path, name: str) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = read_json(art / "timings.json")[name]["runs"]
    return runs


def test_stage_records_after_each_block_not_at_exit(rec: Recorder, art: Path) -> None:
    with rec:
        with stage("ippo_train", run_idx=0) as timing:
            pass
        assert [r["run_idx"] for r in stage_runs(art, "ippo_train")] == [0]
        with stage("ippo_train", run_idx=1):
            pass
        assert [r["run_idx"] for r in stage_runs(art, "ippo_train")] == [0, 1]
    assert timing.seconds is not None
    assert timing.seconds == stage_runs(art, "ippo_train")[0]["seconds"]


def test_stage_run_holds_hardware_started_at_label_and_metadata(rec: Recorder, art: Path) -> None:
    with stage("nashconv", run_idx=2, label="exact", recorder=rec, iterations=10, tag="a"):
        pass
    (run,) = stage_runs(art, "nashconv")
    assert list(run) == [
        "seconds", "hardware_id", "run_idx", "label", "started_at", "software_id", "cpus",
        "resources", "attempt_id", "iterations", "tag",
    ]
    assert run["hardware_id"] == stagetimer.hardware_id(stagetimer.capture_hardware())
    assert run["started_at"].endswith("Z") and run["started_at"][10] == "T"
    assert (run["run_idx"], run["label"], run["iterations"], run["tag"]) == (2, "exact", 10, "a")


def test_stage_object_holds_its_arguments_and_checks_them_on_entry(rec: Recorder) -> None:
    timing = stage("ippo_train", run_idx=2, label="seed-2", recorder=rec, lr=3e-4)
    assert (timing.name, timing.run_idx, timing.label, timing.metadata) == (
        "ippo_train", 2, "seed-2", {"lr": 3e-4}
    )
    assert timing.seconds is None
    with timing as entered:
        assert entered is timing
    assert timing.seconds is not None and timing.seconds >= 0.0
    bad = stage("", run_idx=-1, recorder=rec)  # built without complaint: checked on entry
    with pytest.raises(InvalidRecordError), bad:
        pytest.fail("the block ran")


def test_exception_in_stage_records_nothing_and_propagates_the_same_object(
    rec: Recorder, art: Path
) -> None:
    error = RuntimeError("diverged")
    with pytest.raises(RuntimeError) as info, rec, stage("ippo_train", run_idx=0) as timing:
        raise error
    assert info.value is error
    assert not (art / "timings.json").exists()
    assert timing.seconds is not None


def test_bare_timed_stage_uses_the_function_name(rec: Recorder, art: Path) -> None:
    @timed_stage
    def nashconv(policy: str) -> str:
        return policy * 2

    with rec:
        assert nashconv("x") == "xx"
    assert [r.run_idx for r in load_timings(art).stages["nashconv"].runs] == [None]


def test_timed_stage_with_empty_parentheses_uses_the_function_name(
    rec: Recorder, art: Path
) -> None:
    @timed_stage()
    def satisfaction() -> None:
        pass

    with rec:
        satisfaction()
    assert list(load_timings(art).stages) == ["satisfaction"]


def test_timed_stage_keeps_functools_wraps_metadata() -> None:
    def checkpoint_save(run_idx: int = 0) -> None:
        """Save the model."""

    wrapped = timed_stage("checkpoint_save", run_idx="run_idx")(checkpoint_save)
    assert wrapped.__name__ == "checkpoint_save"
    assert wrapped.__doc__ == "Save the model."
    assert wrapped.__wrapped__ is checkpoint_save  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("run_idx", "calls", "expected"),
    [
        (3, [((), {})], [3]),
        ("run_idx", [((1,), {}), ((), {"run_idx": 2})], [1, 2]),
        ("run_idx", [((), {})], [7]),  # the parameter's default
        (lambda args: args["run_idx"] + 10, [((1,), {})], [11]),
    ],
    ids=["int", "parameter", "parameter-default", "callable"],
)
def test_timed_stage_run_idx_forms(
    rec: Recorder, art: Path, run_idx: Any, calls: list[Any], expected: list[int]
) -> None:
    @timed_stage("checkpoint_save", run_idx=run_idx, recorder=rec)
    def save(run_idx: int = 7) -> int:
        return run_idx

    for args, kwargs in calls:
        save(*args, **kwargs)
    recorded = [r.run_idx for r in load_timings(art).stages["checkpoint_save"].runs]
    assert recorded == expected


def test_timed_stage_call_that_does_not_bind_raises_the_functions_type_error(
    rec: Recorder, art: Path
) -> None:
    @timed_stage("checkpoint_save", run_idx="run_idx", recorder=rec)
    def save(run_idx: int) -> None:
        pass

    with pytest.raises(TypeError, match="run_idx"):
        save()  # type: ignore[call-arg]
    assert not (art / "timings.json").exists()


def test_async_with_stage_records(rec: Recorder, art: Path) -> None:
    async def main() -> None:
        async with stage("iql_train", run_idx=0, recorder=rec):
            await asyncio.sleep(0.01)

    asyncio.run(main())
    (run,) = load_timings(art).stages["iql_train"].runs
    assert run.seconds >= 0.01


def test_timed_stage_on_async_function(rec: Recorder, art: Path) -> None:
    @timed_stage("nashconv", run_idx="seed")
    async def nashconv(seed: int) -> int:
        await asyncio.sleep(0)
        return seed

    async def main() -> list[int]:
        with rec:
            return list(await asyncio.gather(nashconv(0), nashconv(1)))

    assert asyncio.run(main()) == [0, 1]
    assert asyncio.iscoroutinefunction(nashconv)
    runs = load_timings(art).stages["nashconv"].runs
    assert sorted(r.run_idx for r in runs) == [0, 1]  # type: ignore[type-var]


def test_async_tasks_see_their_own_active_recorder(tmp_path: Path) -> None:
    async def job(directory: Path) -> None:
        with Recorder(directory):
            await asyncio.sleep(0.01)
            async with stage("ippo_train"):
                await asyncio.sleep(0)

    async def main() -> None:
        await asyncio.gather(job(tmp_path / "a"), job(tmp_path / "b"))

    asyncio.run(main())
    assert list(load_timings(tmp_path / "a").stages) == ["ippo_train"]
    assert list(load_timings(tmp_path / "b").stages) == ["ippo_train"]


def test_active_recorder_does_not_leak_into_other_threads(rec: Recorder) -> None:
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            with stage("ippo_train"):
                pass
        except NoActiveRecorderError as exc:
            errors.append(exc)

    with rec:
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
    assert len(errors) == 1


def test_nested_recorders_restore_the_outer_one(tmp_path: Path) -> None:
    outer, inner = Recorder(tmp_path / "outer"), Recorder(tmp_path / "inner")
    with outer:
        with inner, stage("a"):
            pass
        with stage("b"):
            pass
    assert list(load_timings(tmp_path / "inner").stages) == ["a"]
    assert list(load_timings(tmp_path / "outer").stages) == ["b"]


def test_explicit_recorder_beats_the_active_one(tmp_path: Path) -> None:
    active, explicit = Recorder(tmp_path / "active"), Recorder(tmp_path / "explicit")
    with active:
        record_timing("alpharank", 1.0, recorder=explicit)
    assert list(load_timings(tmp_path / "explicit").stages) == ["alpharank"]
    assert not (tmp_path / "active").exists()


def test_stagetimer_dir_environment_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STAGETIMER_DIR", str(tmp_path / "env"))
    with stage("ippo_train", run_idx=0):
        pass
    record_timing("alpharank", 2.0)
    assert list(load_timings(tmp_path / "env").stages) == ["ippo_train", "alpharank"]


def test_no_recorder_raises_before_the_block_runs() -> None:
    ran = []
    with pytest.raises(NoActiveRecorderError, match="STAGETIMER_DIR"), stage("ippo_train"):
        ran.append(True)
    assert ran == []


def test_disable_records_nothing_but_measures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STAGETIMER_DISABLE", "1")
    rec = Recorder(tmp_path / "off")
    with rec, stage("ippo_train", run_idx=0) as timing:
        pass
    record_timing("alpharank", 1.0, recorder=rec)
    rec.record("nashconv", 2.0, run_idx=0, metadata={"steps": 1})  # docs/api.md: nothing
    assert timing.seconds is not None
    assert not (tmp_path / "off").exists()
    assert 0 == rec.pending


def test_disable_needs_no_recorder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STAGETIMER_DISABLE", "1")
    with stage("ippo_train") as timing:
        pass
    assert timing.seconds is not None


def test_recorder_creates_missing_directories(rec: Recorder, art: Path) -> None:
    assert not art.exists()
    record_timing("alpharank", 1.0, recorder=rec)
    assert (art / "timings.json").is_file()


@pytest.mark.parametrize("name", [*stages.TRAINING_STAGES, "checkpoint_save", "nashconv"])
def test_auto_resume_names(name: str) -> None:
    assert stages.auto_resume(name) == name + "_auto_resume"
    assert stages.is_known(stages.auto_resume(name))


@pytest.mark.parametrize("name", ["cfr_train", "my_new_algo_train", "ppo-lstm_train"])
def test_auto_resume_accepts_any_valid_name_ending_in_train(name: str) -> None:
    assert (name + "_auto_resume", True) == (stages.auto_resume(name), stages.is_training(name))


@pytest.mark.parametrize(
    "name",
    ["alpharank", "satisfaction", "ippo_train_auto_resume", "x", "_train", "bad\x00_train",
     "cfr_trainer"],
)
def test_auto_resume_refuses_other_names(name: str) -> None:
    with pytest.raises(ValueError, match=re.escape(repr(name))):
        stages.auto_resume(name)


def test_catalogue_has_the_spec_names() -> None:
    assert len(stages.TRAINING_STAGES) == 15
    assert stages.OTHER_STAGES == ("checkpoint_save", "nashconv", "satisfaction", "alpharank")
