"""Every bad input of SPEC section 2 raises InvalidRecordError and leaves the files untouched."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from stagetimer import InvalidRecordError, Recorder, record_timing, stage, timed_stage

BAD_NAMES = [
    "", None, 3, b"ippo_train", "ippo\ntrain", "ippo\x00", "tab\there", "del\x7f", "c1\x85"
]
BAD_SECONDS = [-1.0, -1e-9, math.nan, math.inf, -math.inf, True, False, "1.0", None, [1.0]]
BAD_RUN_IDX = [-1, 1.0, "0", True, False, [0]]
BAD_LABELS = [1, b"x", ["a"], {"a": 1}]
BAD_METADATA: list[dict[str, Any]] = [
    {"hardware_id": "hw-x"},
    {"started_at": "now"},
    {"total_seconds": 1.0},
    {"runs": []},
    {"obj": object()},
    {"nan": math.nan},
    {"inf": [math.inf]},
    {"setval": {1, 2}},
    {"bytes": b"x"},
]
STAGE_ONLY_RESERVED: list[dict[str, Any]] = [{"seconds": 1.0}]


@pytest.fixture
def existing(rec: Recorder, art: Path) -> bytes:
    """The artifact directory already holds a recorded stage; returns the file's bytes."""
    record_timing("ippo_train", 1.0, run_idx=0, recorder=rec)
    return (art / "timings.json").read_bytes()


def _unchanged(art: Path, before: bytes) -> None:
    assert (art / "timings.json").read_bytes() == before
    assert sorted(p.name for p in art.iterdir()) == [
        "timings.json",
        "timings.json.lock",
        "timings_hardware.json",
        "timings_hardware.json.lock",
    ]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_bad_name(rec: Recorder, art: Path, existing: bytes, name: Any) -> None:
    with pytest.raises(InvalidRecordError, match="stage name") as info:
        record_timing(name, 1.0, recorder=rec)
    assert info.value.value == name
    _unchanged(art, existing)


@pytest.mark.parametrize("seconds", BAD_SECONDS)
def test_bad_seconds(rec: Recorder, art: Path, existing: bytes, seconds: Any) -> None:
    with pytest.raises(InvalidRecordError, match="seconds"):
        record_timing("ippo_train", seconds, recorder=rec)
    _unchanged(art, existing)


@pytest.mark.parametrize("run_idx", BAD_RUN_IDX)
def test_bad_run_idx(rec: Recorder, art: Path, existing: bytes, run_idx: Any) -> None:
    with pytest.raises(InvalidRecordError, match="run_idx"):
        record_timing("ippo_train", 1.0, run_idx=run_idx, recorder=rec)
    _unchanged(art, existing)


@pytest.mark.parametrize("label", BAD_LABELS)
def test_bad_label(rec: Recorder, art: Path, existing: bytes, label: Any) -> None:
    with pytest.raises(InvalidRecordError, match="label"):
        record_timing("ippo_train", 1.0, label=label, recorder=rec)
    _unchanged(art, existing)


@pytest.mark.parametrize("metadata", BAD_METADATA)
def test_bad_metadata(rec: Recorder, art: Path, existing: bytes, metadata: dict[str, Any]) -> None:
    with pytest.raises(InvalidRecordError, match="metadata"):
        record_timing("ippo_train", 1.0, recorder=rec, **metadata)
    _unchanged(art, existing)


@pytest.mark.parametrize(
    "kwargs",
    [
        *({"name": n} for n in BAD_NAMES),
        *({"run_idx": i} for i in BAD_RUN_IDX),
        *({"label": label} for label in BAD_LABELS),
        *BAD_METADATA,
        *STAGE_ONLY_RESERVED,
    ],
    ids=repr,
)
def test_stage_checks_arguments_before_the_block_runs(
    rec: Recorder, art: Path, existing: bytes, kwargs: dict[str, Any]
) -> None:
    ran = []
    name = kwargs.pop("name", "ippo_train")
    with pytest.raises(InvalidRecordError), stage(name, recorder=rec, **kwargs):
        ran.append(True)
    assert ran == []
    _unchanged(art, existing)


def test_stage_checks_arguments_even_when_disabled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STAGETIMER_DISABLE", "1")
    with pytest.raises(InvalidRecordError), stage("ippo_train", run_idx=-1):
        pass


@pytest.mark.parametrize(
    ("decorator_kwargs", "match"),
    [
        ({"run_idx": "seed"}, "not a parameter"),
        ({"run_idx": True}, "run_idx True"),
        ({"run_idx": 2.5}, "run_idx 2.5"),
        ({"label": 3}, "label 3"),
        ({"hardware_id": "x"}, "reserved"),
    ],
)
def test_timed_stage_checks_its_arguments_when_decorating(
    decorator_kwargs: dict[str, Any], match: str
) -> None:
    with pytest.raises(InvalidRecordError, match=match):

        @timed_stage("checkpoint_save", **decorator_kwargs)
        def save(run_idx: int) -> None:
            pass


def test_timed_stage_rejects_an_empty_name() -> None:
    with pytest.raises(InvalidRecordError, match="stage name ''"):

        @timed_stage("")
        def save() -> None:
            pass


def test_run_idx_from_a_parameter_is_checked_before_the_call(
    rec: Recorder, art: Path, existing: bytes
) -> None:
    calls = []

    @timed_stage("checkpoint_save", run_idx="run_idx", recorder=rec)
    def save(run_idx: Any) -> None:
        calls.append(run_idx)

    with pytest.raises(InvalidRecordError, match="run_idx '3'"):
        save("3")
    assert calls == []
    _unchanged(art, existing)


def test_recorder_argument_must_be_a_recorder(art: Path) -> None:
    with pytest.raises(InvalidRecordError, match="recorder"):
        record_timing("ippo_train", 1.0, recorder=str(art))  # type: ignore[arg-type]
