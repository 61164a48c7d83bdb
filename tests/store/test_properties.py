"""Property-based tests: bad input never touches the files (docs/format.md), and random
sequences of valid records give exactly what a small model of the replacement rules
(docs/format.md) predicts.

The model below is written from the documented rules alone; it does not use
``stagetimer._store.rules``.
"""

from __future__ import annotations

import contextlib
import math
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from stagetimer import (
    InvalidRecordError,
    Recorder,
    StageTimerWarning,
    load_timings,
    record_timing,
    stage,
)
from stagetimer._errors import short_repr

# -- bad input ---------------------------------------------------------------------

CONTROL = [chr(c) for c in [*range(0x20), *range(0x7F, 0xA0)]]
RESERVED_METADATA = ["hardware_id", "started_at", "total_seconds", "runs"]

bad_names = st.one_of(
    st.just(""),
    st.none(),
    st.integers(),
    st.floats(),
    st.binary(max_size=4),
    st.lists(st.text(max_size=2), max_size=2),
    st.builds(
        lambda a, c, b: a + c + b,
        st.text(max_size=3),
        st.sampled_from(CONTROL),
        st.text(max_size=3),
    ),
)
bad_seconds = st.one_of(
    st.floats(max_value=-1e-300, allow_infinity=True),
    st.integers(max_value=-1),
    st.sampled_from([math.nan, math.inf, -math.inf, -5e-324, True, False]),
    st.none(),
    st.text(max_size=3),
    st.lists(st.floats(0, 1), max_size=2),
    st.complex_numbers(max_magnitude=10),
)
bad_run_idx = st.one_of(
    st.integers(max_value=-1),
    st.booleans(),
    st.floats(),
    st.text(max_size=3),
    st.lists(st.integers(0, 3), max_size=2),
)
bad_labels = st.one_of(
    st.integers(),
    st.booleans(),
    st.floats(),
    st.binary(max_size=3),
    st.lists(st.text(max_size=2), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)
unserialisable = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf]),
    st.builds(object),
    st.builds(set, st.lists(st.integers(), max_size=2)),
    st.binary(max_size=3),
    st.complex_numbers(max_magnitude=10),
    st.builds(lambda v: {"nested": [v]}, st.sampled_from([math.nan, math.inf])),
    st.builds(lambda v: [1, {"deep": v}], st.builds(object)),
)
bad_metadata = st.one_of(
    st.builds(lambda k, v: ({k: v}, k), st.sampled_from(RESERVED_METADATA), st.integers()),
    st.builds(lambda k, v: ({k: v}, v), st.sampled_from(["lr", "note", "x y"]), unserialisable),
)


@st.composite
def bad_records(draw: st.DrawFn) -> tuple[str, dict[str, Any], object]:
    """A record with exactly one invalid argument: (field, kwargs, offending value)."""
    kwargs: dict[str, Any] = {
        "name": "ippo_train",
        "seconds": 1.5,
        "run_idx": draw(st.none() | st.integers(0, 5)),
        "label": draw(st.none() | st.just("seed")),
        "metadata": {"games": 4},
    }
    field = draw(st.sampled_from(["name", "seconds", "run_idx", "label", "metadata"]))
    if field == "metadata":
        metadata, offending = draw(bad_metadata)
        kwargs["metadata"] = {**kwargs["metadata"], **metadata}
    else:
        offending = draw(
            {
                "name": bad_names,
                "seconds": bad_seconds,
                "run_idx": bad_run_idx,
                "label": bad_labels,
            }[field]
        )
        kwargs[field] = offending
    return field, kwargs, offending


@pytest.fixture(scope="module")
def populated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("populated")
    rec = Recorder(directory, strict=True)
    record_timing("ippo_train", 3.0, run_idx=0, recorder=rec)
    record_timing("ippo_train_auto_resume", 1.0, run_idx=1, recorder=rec)
    record_timing("alpharank", 2.0, recorder=rec, note="kept")
    return directory


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def _named(offending: object, message: str) -> bool:
    """Whether ``message`` names ``offending``: as itself, its repr, or (a value of more
    than 80 characters) the shortened repr every error message shows."""
    text = offending if isinstance(offending, str) else repr(offending)
    return text in message or repr(offending) in message or short_repr(offending) in message


def _assert_refused(
    directory: Path, strict: bool, field: str, kwargs: dict[str, Any], offending: object
) -> None:
    """record_timing (and stage(), which takes no seconds) refuse the record, name the
    offending value, and leave every file of ``directory`` byte-identical."""
    rec = Recorder(directory, strict=strict)
    before = _snapshot(directory)

    with pytest.raises(InvalidRecordError) as info:
        record_timing(
            kwargs["name"],
            kwargs["seconds"],
            run_idx=kwargs["run_idx"],
            label=kwargs["label"],
            recorder=rec,
            **kwargs["metadata"],
        )

    assert isinstance(info.value, ValueError)
    assert _named(offending, str(info.value)), (offending, str(info.value))
    assert before == _snapshot(directory)
    assert rec.pending == 0

    if field != "seconds":  # stage() checks the same arguments on entry, before the block
        ran = []
        with (
            pytest.raises(InvalidRecordError),
            stage(
                kwargs["name"],
                run_idx=kwargs["run_idx"],
                label=kwargs["label"],
                recorder=rec,
                **kwargs["metadata"],
            ),
        ):
            ran.append(True)
        assert ran == []
        assert before == _snapshot(directory)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=bad_records(), strict=st.booleans())
@example(  # a label whose repr is longer than a message shows: named in short (found in CI)
    case=("label", {"name": "ippo_train", "seconds": 1.5, "run_idx": None,
                    "label": {"": -10**27, "0\U0001dab0": -10**27}, "metadata": {"games": 4}},
          {"": -10**27, "0\U0001dab0": -10**27}),
    strict=False,
)
def test_invalid_record_raises_and_leaves_the_files_unchanged(
    populated: Path, case: tuple[str, dict[str, Any], object], strict: bool
) -> None:
    _assert_refused(populated, strict, *case)


class Opaque:
    """Not JSON-serialisable; a stable repr keeps the test ids stable."""

    def __repr__(self) -> str:
        return "Opaque()"


EDGE_CASES: list[tuple[str, Any]] = [
    ("name", ""),
    ("name", "a\x00b"),
    ("name", "tab\there"),
    ("name", "del\x7f"),
    ("name", "nel\x85"),
    ("name", "c1\x9f"),
    ("name", None),
    ("name", b"ippo_train"),
    ("seconds", True),
    ("seconds", False),
    ("seconds", -1),
    ("seconds", -5e-324),
    ("seconds", math.nan),
    ("seconds", math.inf),
    ("seconds", "1.0"),
    ("seconds", None),
    ("run_idx", True),
    ("run_idx", False),
    ("run_idx", -1),
    ("run_idx", 1.0),
    ("run_idx", "0"),
    ("label", 1),
    ("label", True),
    ("label", b"seed"),
    ("metadata", ("hardware_id", "hw-0")),
    ("metadata", ("started_at", "2024-01-01T00:00:00Z")),
    ("metadata", ("total_seconds", 1.0)),
    ("metadata", ("runs", [])),
    ("metadata", ("note", math.nan)),
    ("metadata", ("note", -math.inf)),
    ("metadata", ("note", Opaque())),
    ("metadata", ("note", {"deep": [math.nan]})),
    ("metadata", ("note", b"bytes")),
]


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize(("field", "value"), EDGE_CASES, ids=repr)
def test_invalid_edge_case_raises_and_leaves_the_files_unchanged(
    populated: Path, field: str, value: Any, strict: bool
) -> None:
    kwargs: dict[str, Any] = {
        "name": "ippo_train",
        "seconds": 1.5,
        "run_idx": 1,
        "label": None,
        "metadata": {"games": 4},
    }
    if field == "metadata":
        key, offending = value
        kwargs["metadata"] = {**kwargs["metadata"], key: offending}
        if key in RESERVED_METADATA:
            offending = key
    else:
        kwargs[field] = offending = value
    _assert_refused(populated, strict, field, kwargs, offending)


def test_recording_into_a_name_that_holds_other_data_leaves_the_file_unchanged(
    tmp_path: Path,
) -> None:
    (tmp_path / "timings.json").write_text(
        '{"notes": "hello", "config": {"lr": 0.1},\n "a": {"total_seconds": 1.0, "runs": '
        '[{"seconds": 1.0, "hardware_id": "hw-0"}]}}'
    )
    before = (tmp_path / "timings.json").read_bytes()
    for name in ("notes", "config"):
        with pytest.raises(InvalidRecordError, match=name):
            record_timing(name, 1.0, recorder=Recorder(tmp_path, strict=True))
        assert before == (tmp_path / "timings.json").read_bytes()


# -- the replacement rules against a model -------------------------------------------

STAGE_NAMES = [
    "ippo_train", "ippo_train_auto_resume", "evaluate", "evaluate_auto_resume", "alpharank"
]
# A training stage has a continuation <stage>_auto_resume; evaluate does not (docs/format.md):
# evaluate_auto_resume is a stage of its own, which a reset of evaluate leaves alone.
HAS_CONTINUATION = {"ippo_train"}

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**60), 2**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=4),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=6,
)


@attrs.frozen
class Rec:
    name: str
    seconds: float
    run_idx: int | None
    label: str | None
    metadata: dict[str, Any]


@attrs.frozen
class NewRecorder:
    policy: str
    completed_runs: int | None  # None: resume_partial_runs=False


records = st.builds(
    Rec,
    name=st.sampled_from(STAGE_NAMES),
    seconds=st.floats(0, 1e6, allow_nan=False, allow_infinity=False),
    run_idx=st.none() | st.integers(0, 4),
    label=st.none() | st.sampled_from(["x", "y"]),
    metadata=st.dictionaries(st.sampled_from(["lr", "note", "tags"]), json_values, max_size=2),
)
new_recorders = st.builds(
    NewRecorder,
    policy=st.sampled_from(["sequential", "upsert"]),
    completed_runs=st.none() | st.integers(0, 4),
)
scenarios = st.tuples(new_recorders, st.lists(records | new_recorders, max_size=14))

Run = tuple[int | None, str | None, float, dict[str, Any]]


class Model:
    """The replacement rules, on an insertion-ordered dict of stage name -> runs."""

    def __init__(self) -> None:
        self.stages: dict[str, list[Run]] = {}
        self.policy = "sequential"
        self.resume: int | None = None  # completed_runs still to apply at the next save

    def new_recorder(self, op: NewRecorder) -> None:
        self.policy = op.policy
        self.resume = op.completed_runs

    def record(self, op: Rec) -> None:
        if self.resume is not None:
            self._keep_completed_prefix(self.resume)
            self.resume = None
        new: Run = (op.run_idx, op.label, op.seconds, op.metadata)
        runs = self.stages.get(op.name, [])
        if self.policy == "sequential":
            if op.run_idx is None:
                self.stages[op.name] = [new]
            elif op.run_idx == 0:
                self.stages[op.name] = [new]
                if op.name in HAS_CONTINUATION:
                    self.stages.pop(op.name + "_auto_resume", None)
            else:
                self.stages[op.name] = [*runs, new]
        else:
            kept = [r for r in runs if (r[0], r[1]) != (op.run_idx, op.label)]
            kept.append(new)
            kept.sort(key=lambda r: (0, 0) if r[0] is None else (1, r[0]))  # stable
            self.stages[op.name] = kept

    def _keep_completed_prefix(self, n: int) -> None:
        for name, runs in list(self.stages.items()):
            if all(r[0] is None for r in runs):
                continue
            kept = [r for r in runs if r[0] is None or r[0] < n]
            if kept:
                self.stages[name] = kept
            else:
                del self.stages[name]


def _make_recorder(directory: Path, op: NewRecorder) -> Recorder:
    return Recorder(
        directory,
        policy=op.policy,
        resume_partial_runs=op.completed_runs is not None,
        completed_runs=op.completed_runs,
        strict=True,
    )


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("model")


# Random sequences repeat run indices and un-indexed stages on purpose: the recorder's
# warnings about those are tested in test_recorder_warnings.py.
@pytest.mark.filterwarnings("ignore:.*recorded again without run_idx:stagetimer.StageTimerWarning")
@pytest.mark.filterwarnings("ignore:.*was already on disk:stagetimer.StageTimerWarning")
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario=scenarios)
@example(  # reset clears the companion; the re-added companion goes to the end
    scenario=(
        NewRecorder("sequential", None),
        [
            Rec("ippo_train", 1.0, 0, None, {}),
            Rec("ippo_train_auto_resume", 2.0, 1, None, {}),
            Rec("alpharank", 3.0, None, None, {}),
            Rec("ippo_train", 4.0, 1, None, {}),
            Rec("ippo_train", 5.0, 0, None, {}),
            Rec("ippo_train_auto_resume", 6.0, 1, None, {}),
        ],
    )
)
@example(  # resume keeps the prefix, drops an emptied stage, keeps unindexed stages
    scenario=(
        NewRecorder("sequential", None),
        [
            Rec("ippo_train", 1.0, 0, None, {}),
            Rec("ippo_train", 1.5, 1, None, {}),
            Rec("ippo_train", 1.7, 2, None, {}),
            Rec("evaluate", 0.5, 2, None, {}),
            Rec("alpharank", 3.0, None, None, {}),
            NewRecorder("sequential", 1),
            Rec("ippo_train", 2.0, 1, None, {}),
        ],
    )
)
@example(  # upsert replaces (run_idx, label), sorts with unindexed runs first
    scenario=(
        NewRecorder("upsert", None),
        [
            Rec("ippo_train", 1.0, 3, "x", {}),
            Rec("ippo_train", 2.0, 1, None, {}),
            Rec("ippo_train", 3.0, None, None, {}),
            Rec("ippo_train", 4.0, 3, "y", {}),
            Rec("ippo_train", 5.0, 3, "x", {}),
        ],
    )
)
def test_random_records_give_the_file_the_model_predicts(
    scratch: Path, scenario: tuple[NewRecorder, list[Rec | NewRecorder]]
) -> None:
    first, ops = scenario
    model = Model()
    model.new_recorder(first)
    with tempfile.TemporaryDirectory(dir=scratch) as tmp:
        directory = Path(tmp)
        rec = _make_recorder(directory, first)
        for op in ops:
            if isinstance(op, NewRecorder):
                rec = _make_recorder(directory, op)
                model.new_recorder(op)
                continue
            record_timing(
                op.name,
                op.seconds,
                run_idx=op.run_idx,
                label=op.label,
                recorder=rec,
                **op.metadata,
            )
            model.record(op)

        stages = load_timings(directory).stages

    assert list(model.stages) == list(stages)
    for name, expected_runs in model.stages.items():
        actual = stages[name]
        assert expected_runs == [
            (r.run_idx, r.label, r.seconds, dict(r.metadata)) for r in actual.runs
        ], name
        assert math.isclose(
            math.fsum(r[2] for r in expected_runs), actual.total_seconds, rel_tol=1e-9, abs_tol=1e-9
        )


# -- valid input the files cannot hold as given ---------------------------------------------


@pytest.fixture
def quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StageTimerWarning)
        yield


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seconds=st.lists(st.floats(0, allow_nan=False, allow_infinity=False), min_size=2, max_size=3)
)
@example(seconds=[1e308, 1e308])
def test_any_finite_durations_save_or_are_refused_without_breaking_the_recorder(
    scratch: Path, seconds: list[float]
) -> None:
    # docs/format.md: seconds is any finite number >= 0. A duration whose stage total
    # overflows may be refused (InvalidRecordError) but nothing else may escape, the
    # file must stay valid JSON, and later records must still be saved.
    with tempfile.TemporaryDirectory(dir=scratch) as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore", StageTimerWarning)
        rec = Recorder(tmp)
        for i, s in enumerate(seconds):
            with contextlib.suppress(InvalidRecordError):
                record_timing("train", s, run_idx=i, recorder=rec)
        record_timing("later", 1.0, recorder=rec)
        stages = load_timings(tmp).stages
        assert "later" in stages
        assert all(math.isfinite(s.total_seconds) for s in stages.values())
        assert rec.pending == 0


@pytest.mark.parametrize("field", ["name", "label", "metadata_value", "metadata_key"])
def test_lone_surrogates_are_saved_or_refused_without_breaking_the_recorder(
    tmp_path: Path, field: str, quiet: None
) -> None:
    # A str holding a lone surrogate has no control character, yet cannot be encoded
    # as UTF-8. It must be saved (escaped) or refused with InvalidRecordError before
    # anything is written; either way the recorder goes on saving.
    odd = "s\udc80"
    args: dict[str, Any] = {"name": "train", "label": None, "metadata": {}}
    if field == "name":
        args["name"] = odd
    elif field == "label":
        args["label"] = odd
    elif field == "metadata_value":
        args["metadata"] = {"note": odd}
    else:
        args["metadata"] = {odd: 1}
    rec = Recorder(tmp_path)
    record_timing("before", 1.0, recorder=rec)
    before = (tmp_path / "timings.json").read_bytes()

    try:
        record_timing(args["name"], 2.0, label=args["label"], recorder=rec, **args["metadata"])
    except InvalidRecordError:
        assert before == (tmp_path / "timings.json").read_bytes()
    else:
        assert args["name"] in load_timings(tmp_path).stages
    record_timing("after", 3.0, recorder=rec)

    assert rec.pending == 0
    assert "after" in load_timings(tmp_path).stages
