"""The replacement rules (docs/format.md), each on its own, against the file on disk."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from conftest import read_json

from stagetimer import Recorder, StageTimerWarning, load_timings, record_timing
from stagetimer._store.rules import add_seconds, valid_seconds


def repr_id(value: object) -> str:
    return repr(value) if not isinstance(value, int) or abs(value) < 10**20 else "huge int"


def runs_of(art: Path, name: str) -> list[tuple[int | None, float]]:
    return [(r.run_idx, r.seconds) for r in load_timings(art).stages[name].runs]


def test_run_idx_zero_resets_the_stage(rec: Recorder, art: Path) -> None:
    for i in range(3):
        record_timing("ippo_train", 1.0 + i, run_idx=i, recorder=rec)
    record_timing("ippo_train", 9.0, run_idx=0, recorder=rec)
    assert runs_of(art, "ippo_train") == [(0, 9.0)]


def test_run_idx_zero_clears_the_auto_resume_companion(rec: Recorder, art: Path) -> None:
    record_timing("ippo_train", 1.0, run_idx=0, recorder=rec)
    record_timing("ippo_train_auto_resume", 2.0, run_idx=0, recorder=rec)
    record_timing("nashconv", 3.0, run_idx=0, recorder=rec)
    record_timing("ippo_train", 4.0, run_idx=0, recorder=rec)
    assert list(load_timings(art).stages) == ["ippo_train", "nashconv"]


def test_reset_of_another_stage_keeps_a_foreign_auto_resume(rec: Recorder, art: Path) -> None:
    record_timing("nashconv_auto_resume", 2.0, run_idx=0, recorder=rec)
    record_timing("ippo_train", 1.0, run_idx=0, recorder=rec)
    assert "nashconv_auto_resume" in load_timings(art).stages


def test_later_indices_append(rec: Recorder, art: Path) -> None:
    record_timing("ippo_train", 1.0, run_idx=0, recorder=rec)
    record_timing("ippo_train", 2.0, run_idx=1, recorder=rec)
    record_timing("ippo_train", 3.0, run_idx=2, recorder=rec)
    assert runs_of(art, "ippo_train") == [(0, 1.0), (1, 2.0), (2, 3.0)]
    assert load_timings(art).stages["ippo_train"].total_seconds == 6.0


def test_unindexed_stage_replaces(rec: Recorder, art: Path) -> None:
    record_timing("alpharank", 5.0, recorder=rec)
    with pytest.warns(StageTimerWarning, match="recorded again without run_idx"):
        record_timing("alpharank", 7.0, recorder=rec)
    assert runs_of(art, "alpharank") == [(None, 7.0)]


def test_resume_keeps_validated_prefix_and_unindexed_stages(tmp_path: Path) -> None:
    art = tmp_path / "a"
    first = Recorder(art)
    for i in range(4):
        record_timing("ippo_train", 1.0, run_idx=i, recorder=first)
        record_timing("checkpoint_save", 0.5, run_idx=i, recorder=first)
    record_timing("alpharank", 3.0, recorder=first)
    resumed = Recorder(art, resume_partial_runs=True, completed_runs=2)
    record_timing("ippo_train", 2.0, run_idx=2, recorder=resumed)
    timings = load_timings(art)
    assert runs_of(art, "ippo_train") == [(0, 1.0), (1, 1.0), (2, 2.0)]
    assert runs_of(art, "checkpoint_save") == [(0, 0.5), (1, 0.5)]
    assert timings.stages["checkpoint_save"].total_seconds == 1.0
    assert runs_of(art, "alpharank") == [(None, 3.0)]


def test_resume_truncates_only_once(tmp_path: Path) -> None:
    art = tmp_path / "a"
    first = Recorder(art)
    for i in range(3):
        record_timing("ippo_train", 1.0, run_idx=i, recorder=first)
    resumed = Recorder(art, resume_partial_runs=True, completed_runs=1)
    record_timing("ippo_train", 2.0, run_idx=1, recorder=resumed)
    record_timing("ippo_train", 3.0, run_idx=2, recorder=resumed)
    assert runs_of(art, "ippo_train") == [(0, 1.0), (1, 2.0), (2, 3.0)]


def test_resume_with_zero_completed_drops_indexed_stages(tmp_path: Path) -> None:
    art = tmp_path / "a"
    first = Recorder(art)
    record_timing("nashconv", 1.0, run_idx=0, recorder=first)
    record_timing("alpharank", 1.0, recorder=first)
    resumed = Recorder(art, resume_partial_runs=True, completed_runs=0)
    record_timing("ippo_train", 2.0, run_idx=0, recorder=resumed)
    assert list(load_timings(art).stages) == ["alpharank", "ippo_train"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"resume_partial_runs": True}, "needs completed_runs"),
        ({"resume_partial_runs": True, "completed_runs": -1}, "completed_runs -1"),
        ({"resume_partial_runs": True, "completed_runs": True}, "completed_runs True"),
        ({"completed_runs": 3}, "only meaningful"),
        ({"policy": "append"}, "policy 'append'"),
        ({"lock_timeout": -1}, "lock_timeout -1"),
    ],
)
def test_recorder_rejects_bad_settings(
    tmp_path: Path, kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        Recorder(tmp_path, **kwargs)  # type: ignore[arg-type]


def test_upsert_replaces_same_index_and_keeps_others_sorted(tmp_path: Path) -> None:
    art = tmp_path / "a"
    rec = Recorder(art, policy="upsert")
    for i, s in [(2, 1.0), (0, 2.0), (1, 3.0), (0, 4.0)]:
        record_timing("ippo_train", s, run_idx=i, recorder=rec)
    record_timing("ippo_train", 5.0, recorder=rec)
    assert runs_of(art, "ippo_train") == [(None, 5.0), (0, 4.0), (1, 3.0), (2, 1.0)]
    assert load_timings(art).stages["ippo_train"].total_seconds == 13.0


def test_upsert_distinguishes_labels(tmp_path: Path) -> None:
    art = tmp_path / "a"
    rec = Recorder(art, policy="upsert")
    record_timing("nashconv", 1.0, run_idx=0, label="exact", recorder=rec)
    record_timing("nashconv", 2.0, run_idx=0, label="approx", recorder=rec)
    record_timing("nashconv", 3.0, run_idx=0, label="exact", recorder=rec)
    runs = load_timings(art).stages["nashconv"].runs
    assert sorted((r.label, r.seconds) for r in runs) == [("approx", 2.0), ("exact", 3.0)]


def test_upsert_never_clears_auto_resume(tmp_path: Path) -> None:
    art = tmp_path / "a"
    rec = Recorder(art, policy="upsert")
    record_timing("ippo_train_auto_resume", 1.0, run_idx=0, recorder=rec)
    record_timing("ippo_train", 1.0, run_idx=0, recorder=rec)
    assert "ippo_train_auto_resume" in load_timings(art).stages


def test_stages_keep_first_recorded_order(rec: Recorder, art: Path) -> None:
    for name in ["ippo_train", "checkpoint_save", "nashconv"]:
        record_timing(name, 1.0, run_idx=0, recorder=rec)
    record_timing("ippo_train", 1.0, run_idx=0, recorder=rec)
    assert list(read_json(art / "timings.json")) == ["ippo_train", "checkpoint_save", "nashconv"]


def test_recording_into_other_data_is_refused_strictly(art: Path) -> None:
    art.mkdir(parents=True)
    (art / "timings.json").write_text('{"system_ram_gb": 64}\n')
    before = (art / "timings.json").read_bytes()
    from stagetimer import InvalidRecordError

    with pytest.raises(InvalidRecordError, match="system_ram_gb"):
        record_timing("system_ram_gb", 1.0, recorder=Recorder(art, strict=True))
    assert (art / "timings.json").read_bytes() == before


def test_recording_into_other_data_raises_after_rescuing_when_lenient(art: Path) -> None:
    from stagetimer import InvalidRecordError, StageTimerWarning

    art.mkdir(parents=True)
    (art / "timings.json").write_text('{"system_ram_gb": 64}\n')
    before = (art / "timings.json").read_bytes()
    with pytest.warns(StageTimerWarning, match="rescue"), pytest.raises(
        InvalidRecordError, match="system_ram_gb"
    ):
        record_timing("system_ram_gb", 1.5, recorder=Recorder(art))
    assert (art / "timings.json").read_bytes() == before
    (rescue,) = art.glob("timings.rescue-*.json")
    assert read_json(rescue)["records"][0]["run"]["seconds"] == 1.5


@pytest.mark.parametrize(
    "stored", ["null", "{}", '{"total_seconds": 1}', "[]", '"text"', "0"],
)
def test_other_data_of_any_value_is_never_replaced_by_a_stage(art: Path, stored: str) -> None:
    from stagetimer import InvalidRecordError

    art.mkdir(parents=True)
    (art / "timings.json").write_text(f'{{"nashconv": {stored}}}\n')
    before = (art / "timings.json").read_bytes()

    with pytest.raises(InvalidRecordError, match="holds other data"):
        record_timing("nashconv", 1.0, recorder=Recorder(art, strict=True))

    assert before == (art / "timings.json").read_bytes()


@pytest.mark.parametrize(
    ("seconds", "counted"),
    [
        (1.5, 1.5),
        (0, 0.0),
        (10**300, 1e300),
        (-5, None),
        (math.nan, None),
        (math.inf, None),
        (-math.inf, None),
        (10**400, None),  # float() would raise OverflowError
        ("2", None),
        (True, None),
        (None, None),
    ],
    ids=repr_id,
)
def test_valid_seconds_are_what_a_writer_could_have_written(
    seconds: object, counted: float | None
) -> None:
    assert counted == valid_seconds({"seconds": seconds})


def test_add_seconds_skips_what_no_writer_could_have_written() -> None:
    runs = [{"seconds": 1.5}, {"seconds": math.nan}, {"seconds": 10**400}, 7, {"seconds": 2}]

    assert 3.5 == add_seconds(0.0, runs)


# A stored run whose seconds no writer could have written, and the total a new record
# of the same stage gets: only the seconds a writer could have written are summed.
@pytest.mark.parametrize(
    ("stored", "total"),
    [
        ("1.5", 3.5),
        ("-5", 2.0),
        ("NaN", 2.0),
        ("Infinity", 2.0),
        ("1e999", 2.0),
        ("1" + "0" * 400, 2.0),
        ("1e308", 1e308 + 2.0),
    ],
)
@pytest.mark.parametrize("policy", ["sequential", "upsert"])
def test_total_sums_only_seconds_a_writer_could_have_written(
    art: Path, stored: str, total: float, policy: str
) -> None:
    art.mkdir(parents=True)
    (art / "timings.json").write_text(
        f'{{"ippo_train": {{"total_seconds": 0, "runs": [{{"seconds": {stored}, "run_idx": 0}}]}}}}'
    )

    record_timing("ippo_train", 2.0, run_idx=1, recorder=Recorder(art, strict=True, policy=policy))

    assert total == read_json(art / "timings.json")["ippo_train"]["total_seconds"]


def test_durations_that_overflow_together_are_refused(art: Path) -> None:
    from stagetimer import InvalidRecordError

    rec = Recorder(art, strict=True)
    record_timing("ippo_train", 1.7e308, run_idx=0, recorder=rec)
    before = (art / "timings.json").read_bytes()

    with pytest.raises(InvalidRecordError, match="overflow"):
        record_timing("ippo_train", 1.7e308, run_idx=1, recorder=rec)

    assert before == (art / "timings.json").read_bytes()
