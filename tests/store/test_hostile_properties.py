"""Property: whatever a sidecar holds, only StageTimerErrors and clean exit codes come out.

Hypothesis builds hostile ``timings.json`` and ``timings_hardware.json`` texts: valid
files with a value anywhere replaced by a wrong type, deep nesting, a huge number or
NaN, keys given twice, and whole-file damage (truncation, a BOM, a byte that is not
UTF-8, UTF-16, a lone surrogate escape). The loaders, the report and saves run over
each; a refusal leaves the bytes as they were, an acceptance leaves a loadable file.
"""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from stagetimer import (
    InvalidRecordError,
    Recorder,
    StageTimerError,
    StageTimerWarning,
    load_hardware,
    load_timings,
    record_timing,
    stage,
)
from stagetimer._cli import main

# -- JSON texts, built as text so that duplicates, NaN and huge literals can be written --


def big_int(digits: int) -> str:
    return "1" + "0" * digits


def deep(depth: int, bracket: str, closed: bool) -> str:
    opening, closing = ("[", "]") if bracket == "[" else ('{"k": ', "}")
    inner = "1" if bracket == "{" else ""
    return opening * depth + inner + (closing * depth if closed else "")


scalar_text = st.one_of(
    st.none().map(lambda _: "null"),
    st.booleans().map(lambda b: "true" if b else "false"),
    st.integers().map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(json.dumps),  # NaN, Infinity too
    st.text(max_size=6).map(json.dumps),
    st.integers(300, 450).map(big_int),  # beyond a float
    st.integers(4290, 4400).map(big_int),  # around sys.get_int_max_str_digits()
    st.sampled_from(['"\\ud800"', '"\\udfff x"', '"\\ud83d\\ude00"', '"a\\"]]\\\\"']),
)
value_text = st.recursive(
    scalar_text,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
        st.lists(st.tuples(st.sampled_from(["a", "b", "seconds"]), inner), max_size=3).map(
            lambda kvs: "{" + ", ".join(f"{json.dumps(k)}: {v}" for k, v in kvs) + "}"
        ),
    ),
    max_leaves=6,
)
hostile_value = value_text
deep_value = st.builds(deep, st.integers(90, 3000), st.sampled_from(["[", "{"]), st.booleans())


def obj(pairs: list[tuple[str, str]]) -> str:
    return "{" + ", ".join(f"{json.dumps(k)}: {v}" for k, v in pairs) + "}"


@st.composite
def run_text(draw: st.DrawFn) -> str:
    pairs = [
        ("seconds", draw(st.sampled_from(["1.5", "0", "2"]) | hostile_value)),
        ("hardware_id", draw(st.just('"hw-0123456789abcdef"') | hostile_value)),
    ]
    for key in draw(st.lists(st.sampled_from(["run_idx", "label", "started_at", "job", "m"]),
                             max_size=3, unique=True)):
        pairs.append((key, draw(hostile_value)))
    if draw(st.booleans()):
        pairs.append(draw(st.sampled_from(pairs)))  # a key twice
    return obj(draw(st.permutations(pairs)))


@st.composite
def timings_text(draw: st.DrawFn) -> str:
    stages = []
    for name in draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3)):
        runs = draw(st.lists(run_text() | hostile_value, max_size=3))
        pairs = [("total_seconds", draw(st.just("1.0") | hostile_value))]
        pairs.append(("runs", "[" + ", ".join(runs) + "]" if draw(st.booleans()) else
                      draw(hostile_value)))
        if draw(st.booleans()):
            pairs.append(("expected_runs", draw(st.just("3") | hostile_value)))
        stages.append((name, obj(pairs) if draw(st.integers(0, 9)) else draw(hostile_value)))
    return obj(stages)  # the names may repeat: a stage key twice


@st.composite
def hardware_text(draw: st.DrawFn) -> str:
    entries = [
        (name, draw(st.just('{"host": "n1", "cpu": {"logical_cpus": 2}}') | hostile_value))
        for name in draw(st.lists(st.sampled_from(["hw-1", "hw-2"]), max_size=3))
    ]
    pairs = [
        ("schema_version", draw(st.just("1") | hostile_value)),
        ("hardware", obj(entries) if draw(st.integers(0, 5)) else draw(hostile_value)),
    ]
    return obj(pairs)


@st.composite
def damaged(draw: st.DrawFn, text: st.SearchStrategy[str]) -> bytes:
    raw = draw(text).encode("utf-8", "surrogatepass")
    damage = draw(st.sampled_from(
        ["none", "none", "none", "deep", "truncate", "bom", "byte", "utf-16", "nul"]
    ))
    if damage == "deep":  # deep nesting somewhere: in a run, or beside the stages
        nest = draw(deep_value).encode()
        at = raw.find(b'"seconds": ') if draw(st.booleans()) else -1
        raw = raw[: at + 11] + nest + b", " + raw[at + 11 :] if at >= 0 else (
            b'{"x": ' + nest + b", " + raw[1:]
        )
    if damage == "truncate" and raw:
        raw = raw[: draw(st.integers(0, len(raw) - 1))]
    elif damage == "bom":
        raw = b"\xef\xbb\xbf" + raw
    elif damage == "byte":
        at = draw(st.integers(0, len(raw)))
        raw = raw[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80"])) + raw[at:]
    elif damage == "utf-16":
        raw = raw.decode("utf-8", "surrogatepass").encode("utf-16", "surrogatepass")
    elif damage == "nul":
        raw = raw.replace(b" ", b"\x00", 1)
    return raw


sidecar = st.one_of(
    st.tuples(st.just("timings.json"), damaged(timings_text())),
    st.tuples(st.just("timings_hardware.json"), damaged(hardware_text())),
)


# -- the property ----------------------------------------------------------------------


@contextlib.contextmanager
def artifact(name: str, content: bytes) -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "art"
        directory.mkdir()
        (directory / name).write_bytes(content)
        yield directory


def loads(directory: Path, name: str) -> bool:
    """Whether the loader of ``name`` accepts it; anything but a StageTimerError fails."""
    try:
        (load_timings if name == "timings.json" else load_hardware)(directory)
    except StageTimerError:
        return False
    return True


def report(directory: Path) -> tuple[int, list[str]]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["report", str(directory)])
    return status, err.getvalue().splitlines()


SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@SETTINGS
@given(sidecar)
@example(("timings.json", b"[" * 200_000))
@example(("timings.json", b'{"a": {"total_seconds": 1.0, "runs": [{"seconds": 1' +
          b"0" * 400 + b"}]}}"))
@example(("timings_hardware.json", b'{"a":' * 200_000))
def test_loaders_and_report_give_only_stagetimer_errors_and_leave_the_bytes(
    case: tuple[str, bytes],
) -> None:
    name, content = case
    with artifact(name, content) as directory:
        loads(directory, name)
        status, lines = report(directory)

        assert status in (0, 1)
        assert status == 0 or len(lines) == 1, lines
        assert content == (directory / name).read_bytes()


def other_data(directory: Path, name: str) -> set[str]:
    """Top-level names of an accepted ``timings.json`` that hold other data (not stages)."""
    if name != "timings.json":
        return set()
    try:
        timings = load_timings(directory)
    except StageTimerError:
        return set()
    return {*timings.other, *timings.legacy_metadata}


@SETTINGS
@given(sidecar)
@example(("timings.json", b'{"a": {"total_seconds": 1.0, "runs": [{"seconds": NaN}]}}'))
@example(("timings.json", b'{"a": {"runs": [1]}, "a": {"runs": []}}'))
@example(("timings.json", b'{"a": []}'))
def test_lenient_stage_never_raises_and_refuses_what_the_loader_refuses(
    case: tuple[str, bytes],
) -> None:
    name, content = case
    with artifact(name, content) as directory:
        accepted = loads(directory, name)
        taken = other_data(directory, name)
        rec = Recorder(directory)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for stage_name in ("a", "new"):
                if stage_name in taken:
                    # Bad input, not a bad file: recording into other data is refused.
                    with (
                        pytest.raises(InvalidRecordError, match="holds other data"),
                        stage(stage_name, run_idx=1, recorder=rec),
                    ):
                        pass
                    continue
                with stage(stage_name, run_idx=1, recorder=rec):
                    pass

        if accepted:
            assert 0 == rec.pending
            assert {"a", "new"} - taken <= set(load_timings(directory).stages)
        else:
            assert 2 == rec.pending
            assert any(issubclass(w.category, StageTimerWarning) for w in caught)
            assert content == (directory / name).read_bytes()


@SETTINGS
@given(sidecar)
def test_strict_save_raises_only_stagetimer_errors(case: tuple[str, bytes]) -> None:
    name, content = case
    with artifact(name, content) as directory:
        accepted = loads(directory, name)
        try:
            record_timing("new", 1.0, recorder=Recorder(directory, strict=True))
        except StageTimerError:
            assert not accepted
            assert content == (directory / name).read_bytes()
        else:
            assert accepted
            assert "new" in load_timings(directory).stages
