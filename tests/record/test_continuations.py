"""One rule for continuations: the catalogue, ``@timed_stage``, ``to_records``, the report's
picture and the replacement rules agree on which stages have an ``_auto_resume`` companion."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stagetimer import InvalidRecordError, Recorder, record_timing, stages, timed_stage, to_records
from stagetimer._analysis.compute import family
from stagetimer._analysis.report import build_report
from stagetimer._format import can_continue, continued_stage, is_training_name
from stagetimer._render import report_plot

# name -> whether it may have a continuation
TABLE = {
    "ippo_train": True,  # in the catalogue
    "cfr_train": True,  # a training stage of the user's own algorithm
    "checkpoint_save": True,
    "nashconv": True,
    "evaluate": False,
    "alpharank": False,
}
NAMES = list(TABLE)


@pytest.mark.parametrize("name", NAMES)
def test_the_catalogue_follows_the_rule(name: str) -> None:
    assert can_continue(name) is TABLE[name]
    assert continued_stage(name + "_auto_resume") == (name if TABLE[name] else None)
    if TABLE[name]:
        assert stages.auto_resume(name) == name + "_auto_resume"
    else:
        with pytest.raises(InvalidRecordError, match="has no auto-resume companion"):
            stages.auto_resume(name)


@pytest.mark.parametrize(
    ("name", "training"),
    [("ippo_train", True), ("cfr_train", True), ("_train", False), ("train", False),
     ("checkpoint_save", False), ("nashconv", False)],
)
def test_one_rule_says_which_stages_are_training_stages(name: str, training: bool) -> None:
    assert training is is_training_name(name)
    assert training is stages.is_training(name)
    assert training is (family(name) == "training")
    if training:
        assert can_continue(name)


@pytest.mark.parametrize("name", NAMES)
def test_the_decorator_follows_the_catalogue(tmp_path: Path, name: str) -> None:
    rec = Recorder(tmp_path)
    calls: list[int] = []

    @timed_stage(name, run_idx="i", recorder=rec)
    def work(i: int) -> int:
        calls.append(i)
        return i

    if TABLE[name]:
        assert work.auto_resume(3) == 3
        stored = json.loads(Path(rec.timings_path).read_text(encoding="utf-8"))
        assert list(stored) == [name + "_auto_resume"]
        assert calls == [3]
    else:
        with pytest.raises(InvalidRecordError) as by_decorator:
            work.auto_resume(3)
        with pytest.raises(InvalidRecordError) as by_catalogue:
            stages.auto_resume(name)
        assert str(by_decorator.value) == str(by_catalogue.value)
        assert calls == []  # refused before the function runs
        assert not Path(rec.timings_path).exists()


def _suite(tmp_path: Path, name: str) -> Recorder:
    """A directory with stage ``name`` and a stage ``<name>_auto_resume`` (any name can be
    recorded: ``evaluate_auto_resume`` is then a stage of its own)."""
    rec = Recorder(tmp_path / name)
    record_timing(name, 2.0, run_idx=0, recorder=rec)
    record_timing(name + "_auto_resume", 1.0, run_idx=0, recorder=rec)
    return rec


@pytest.mark.parametrize("name", NAMES)
def test_to_records_follows_the_catalogue(tmp_path: Path, name: str) -> None:
    _suite(tmp_path, name)
    row = next(r for r in to_records(tmp_path) if r["stage"] == name + "_auto_resume")
    assert row["auto_resume"] is TABLE[name]
    assert row["base_stage"] == (name if TABLE[name] else name + "_auto_resume")


@pytest.mark.parametrize("name", NAMES)
def test_the_picture_follows_the_catalogue(tmp_path: Path, name: str) -> None:
    _suite(tmp_path, name)
    reports, problems = build_report([tmp_path])
    assert not problems
    (row,) = report_plot._rows(reports)
    drawn_apart = name + "_auto_resume" in row.others
    assert drawn_apart is not TABLE[name]
    if TABLE[name]:  # the hatched end of its stage's bar
        (bar,) = row.bars.values()
        assert (bar.base, bar.resumed) == (2.0, 1.0)


@pytest.mark.parametrize("name", NAMES)
def test_run_0_clears_exactly_a_continuation(tmp_path: Path, name: str) -> None:
    rec = _suite(tmp_path, name)
    record_timing(name, 4.0, run_idx=0, recorder=rec)
    stored = json.loads(Path(rec.timings_path).read_text(encoding="utf-8"))
    assert (name + "_auto_resume" in stored) is not TABLE[name]


def test_expected_runs_is_written_into_stages_every_seed_runs_not_into_continuations(
    tmp_path: Path,
) -> None:
    rec = Recorder(tmp_path, policy="upsert", expected_runs=4)
    for seed in range(4):
        record_timing("mlp_train", 2.0, run_idx=seed, recorder=rec)
    record_timing("mlp_train_auto_resume", 1.0, run_idx=1, recorder=rec)  # only seed 1 resumed
    record_timing("evaluate_auto_resume", 1.0, run_idx=0, recorder=rec)  # a stage of its own

    data = json.loads((tmp_path / "timings.json").read_text())

    assert (4, None, 4) == (
        data["mlp_train"].get("expected_runs"),
        data["mlp_train_auto_resume"].get("expected_runs"),
        data["evaluate_auto_resume"].get("expected_runs"),
    )
