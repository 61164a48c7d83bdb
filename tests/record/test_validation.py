"""Every bad input (docs/format.md) raises InvalidRecordError and leaves the files untouched."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from stagetimer import (
    InvalidRecordError,
    NoActiveRecorderError,
    Recorder,
    load_timings,
    record_timing,
    stage,
    timed_stage,
)
from stagetimer._errors import short_repr
from stagetimer._store.validate import copy_metadata

BAD_NAMES = [
    "", None, 3, b"ippo_train", "ippo\ntrain", "ippo\x00", "tab\there", "del\x7f", "c1\x85"
]
BAD_SECONDS = [
    -1.0, -1e-9, math.nan, math.inf, -math.inf, True, False, "1.0", None, [1.0],
    10**400,  # finite in Python, beyond a float: float() would raise OverflowError
    -(10**400),
]
# Above 2**63 - 1 JSON readers in other languages overflow; 10**5000 has more digits
# than Python converts to text (sys.get_int_max_str_digits), so no save could write it.
BAD_RUN_IDX = [-1, 1.0, "0", True, False, [0], 2**63, 10**5000]
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


def ident(value: object) -> str:
    """A short test id: some values have no repr (10**5000) or a huge one."""
    return short_repr(value, 40)


def nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def holding_itself() -> dict[str, Any]:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    return loop


BAD_METADATA += [
    {"job": {"job_id": "4711"}},  # a run field since 0.2
    {"cfg": nested(100_000)},  # deep enough for RecursionError in json and repr
    {"cfg": nested(101)},  # one level beyond the limit
    {"cfg": holding_itself()},
    {"cfg": {1: "a", "1": "b"}},  # both keys are "1" in JSON: one would be lost
    {"big": 10**5000},  # more digits than json writes
    {"text": ["ok", "\udc80"]},  # a lone surrogate has no UTF-8 form
]


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


@pytest.mark.parametrize("seconds", BAD_SECONDS, ids=ident)
def test_bad_seconds(rec: Recorder, art: Path, existing: bytes, seconds: Any) -> None:
    with pytest.raises(InvalidRecordError, match="seconds"):
        record_timing("ippo_train", seconds, recorder=rec)
    _unchanged(art, existing)


@pytest.mark.parametrize("run_idx", BAD_RUN_IDX, ids=ident)
def test_bad_run_idx(rec: Recorder, art: Path, existing: bytes, run_idx: Any) -> None:
    with pytest.raises(InvalidRecordError, match="run_idx"):
        record_timing("ippo_train", 1.0, run_idx=run_idx, recorder=rec)
    _unchanged(art, existing)


@pytest.mark.parametrize("label", BAD_LABELS)
def test_bad_label(rec: Recorder, art: Path, existing: bytes, label: Any) -> None:
    with pytest.raises(InvalidRecordError, match="label"):
        record_timing("ippo_train", 1.0, label=label, recorder=rec)
    _unchanged(art, existing)


@pytest.mark.parametrize("metadata", BAD_METADATA, ids=ident)
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
    ids=ident,
)
def test_stage_checks_arguments_before_the_block_runs(
    rec: Recorder,
    art: Path,
    existing: bytes,
    kwargs: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A stage of the same name already ran (disabled, so nothing is written): the checks
    # must not depend on whether the name was seen before.
    monkeypatch.setenv("STAGETIMER_DISABLE", "1")
    with stage("ippo_train"):
        pass
    monkeypatch.delenv("STAGETIMER_DISABLE")
    ran = []
    name = kwargs.pop("name", "ippo_train")
    with pytest.raises(InvalidRecordError), stage(name, recorder=rec, **kwargs):
        ran.append(True)
    assert ran == []
    _unchanged(art, existing)


@pytest.mark.parametrize(
    ("kwargs", "shown"),
    [
        ({"seconds": 10**400}, "seconds 1000000000"),
        ({"run_idx": 10**5000}, "run_idx <an integer of 16610 bits>"),
        ({"cfg": nested(100_000)}, "metadata cfg=[[[[[...]]]]]"),
        ({"cfg": "x" * 10**6 + "\udc80"}, "metadata cfg='xxxxxxxx"),
        ({"label": ["y" * 10**6]}, "label ['yyyyyyy"),
    ],
    ids=["seconds", "run_idx", "deep metadata", "huge string", "huge label"],
)
def test_error_names_a_huge_value_in_a_short_message(
    rec: Recorder, art: Path, existing: bytes, kwargs: dict[str, Any], shown: str
) -> None:
    seconds = kwargs.pop("seconds", 1.0)

    with pytest.raises(InvalidRecordError) as info:
        record_timing("ippo_train", seconds, recorder=rec, **kwargs)

    message = str(info.value)
    assert (True, True) == (message.startswith(shown), len(message) < 300), message[:300]
    _unchanged(art, existing)


def test_refused_run_idx_does_not_poison_the_recorder(
    rec: Recorder, art: Path, existing: bytes
) -> None:
    with stage("ippo_train", run_idx=0, recorder=rec):
        pass  # the name is now known: the next stage may take a fast path
    with pytest.raises(InvalidRecordError), stage("ippo_train", run_idx=10**5000, recorder=rec):
        pass

    record_timing("ippo_train", 2.0, run_idx=1, recorder=rec)

    assert [0, 1] == [r.run_idx for r in load_timings(art).stages["ippo_train"].runs]


@pytest.mark.parametrize(
    "value",
    [nested(100), {"a": {"b": [1, 2, {"c": None}]}}, (1, 2), {1: "int key"}, 10**400, ""],
    ids=["100 levels", "mixed", "tuple", "int key", "400-digit int", "empty string"],
)
def test_valid_metadata_is_written_as_json_would_read_it(
    rec: Recorder, art: Path, value: Any
) -> None:
    record_timing("ippo_train", 1.0, recorder=rec, cfg=value)

    assert json.loads(json.dumps(value)) == load_timings(art).stages["ippo_train"].runs[0].metadata[
        "cfg"
    ]


def test_copy_metadata_is_deep_and_json_ready() -> None:
    original: dict[str, Any] = {"cfg": {"lr": [0.1]}, "seed": 3}

    copy = copy_metadata(original)
    original["cfg"]["lr"].append(0.5)

    assert {"cfg": {"lr": [0.1]}, "seed": 3} == copy


def test_expected_runs_is_a_stage_key_that_metadata_may_use(
    rec: Recorder, art: Path
) -> None:
    record_timing("ippo_train", 1.0, run_idx=0, recorder=rec, expected_runs=10)

    assert {"expected_runs": 10} == load_timings(art).stages["ippo_train"].runs[0].metadata


def test_stage_checks_arguments_even_when_disabled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STAGETIMER_DISABLE", "1")
    with pytest.raises(InvalidRecordError), stage("ippo_train", run_idx=-1):
        pass


def test_record_checks_arguments_even_when_disabled(
    rec: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STAGETIMER_DISABLE", "1")
    with pytest.raises(InvalidRecordError):
        record_timing("ippo_train", -1.0)
    with pytest.raises(InvalidRecordError):
        rec.record("ippo_train", 1.0, metadata=0)  # type: ignore[arg-type]
    with pytest.raises(InvalidRecordError):
        rec.record("ippo_train", 1.0, started_at=-5.0)


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


@pytest.mark.parametrize(
    ("value", "disabled"),
    [("1", True), ("true", True), (" Yes ", True), ("ON", True),
     ("0", False), ("", False), ("off", False), ("no", False), (None, False)],
)
def test_the_switch_is_read_at_each_stage(
    value: str | None, disabled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """STAGETIMER_DISABLE, set or changed at run time, takes effect at the next stage:
    disabled, a stage needs no recorder; otherwise it looks for one."""
    monkeypatch.delenv("STAGETIMER_DIR", raising=False)
    monkeypatch.setenv("STAGETIMER_DISABLE", "1")
    with stage("ippo_train"):
        pass
    if value is None:
        monkeypatch.delenv("STAGETIMER_DISABLE")
    else:
        monkeypatch.setenv("STAGETIMER_DISABLE", value)
    if disabled:
        with stage("ippo_train") as timing:
            pass
        assert timing.seconds is not None
    else:
        with pytest.raises(NoActiveRecorderError), stage("ippo_train"):
            pass
