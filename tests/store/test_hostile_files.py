"""Hostile sidecar content: a clear SidecarCorruptError everywhere, never a crash or a hang.

Each corrupt content is read by the loaders, the report and a save (strict and
lenient); each must name the file and what is wrong, and leave the bytes alone. Values
that parse but no writer could have written are kept and never break a new record.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import warnings
from pathlib import Path

import pytest

from stagetimer import (
    Recorder,
    SidecarCorruptError,
    StageTimerWarning,
    load_hardware,
    load_timings,
    record_timing,
    stage,
)
from stagetimer._cli import main

RUN = '{"seconds": 1.0, "hardware_id": "hw-0123456789abcdef", "run_idx": 0}'


def stage_text(run: str = RUN, extra: str = "") -> str:
    return f'{{"ippo_train": {{"total_seconds": 1.0, "runs": [{run}]{extra}}}}}'


def nested(depth: int, inner: str = "1") -> str:
    return '{"a": ' * depth + inner + "}" * depth


# content of timings.json -> a fragment of the problem the error must name
CORRUPT_TIMINGS: dict[str, tuple[bytes, str]] = {
    "200,000 nested [": (b"[" * 200_000, "deeper than 104 levels"),
    "200,000 nested [ closed": (b"[" * 200_000 + b"]" * 200_000, "deeper than 104 levels"),
    "10,000 nested objects": (nested(10_000).encode(), "deeper than 104 levels"),
    "metadata nested 150 deep": (
        stage_text('{"seconds": 1.0, "cfg": ' + nested(150) + "}").encode(),
        "deeper than 104 levels",
    ),
    "brackets inside strings do not hide depth": (
        ('[{"x": "]]]]"}, ' * 1 + "[" * 300 + "]" * 300 + "]").encode(),
        "deeper than 104 levels",
    ),
    "5000-digit integer": (('{"x": 1' + "0" * 5000 + "}").encode(), "number Python refuses"),
    "5000-digit seconds": (
        stage_text('{"seconds": 1' + "0" * 5000 + "}").encode(), "number Python refuses"
    ),
    "runs not a list": (b'{"ippo_train": {"total_seconds": 1.0, "runs": 5}}', "'runs' a number"),
    "runs an object": (
        b'{"ippo_train": {"total_seconds": 1.0, "runs": {"0": {}}}}', "'runs' an object"
    ),
    "run not an object": (stage_text("1").encode(), "run 0 is a number, expected an object"),
    "run a string": (stage_text('"x"').encode(), "run 0 is a string"),
    "run without seconds": (stage_text('{"run_idx": 0}').encode(), "has no 'seconds'"),
    "seconds a string": (stage_text('{"seconds": "1.0"}').encode(), "'seconds' a string"),
    "seconds a boolean": (stage_text('{"seconds": true}').encode(), "'seconds' a boolean"),
    "seconds null": (stage_text('{"seconds": null}').encode(), "'seconds' null"),
    "run_idx a string": (stage_text('{"seconds": 1, "run_idx": "0"}').encode(), "'run_idx'"),
    "run_idx a float": (stage_text('{"seconds": 1, "run_idx": 1.5}').encode(), "'run_idx'"),
    "run_idx a boolean": (stage_text('{"seconds": 1, "run_idx": true}').encode(), "'run_idx'"),
    "hardware_id a number": (
        stage_text('{"seconds": 1, "hardware_id": 7}').encode(), "'hardware_id' a number"
    ),
    "label a list": (stage_text('{"seconds": 1, "label": ["a"]}').encode(), "'label' an array"),
    "started_at a number": (
        stage_text('{"seconds": 1, "started_at": 0}').encode(), "'started_at' a number"
    ),
    "job a string": (stage_text('{"seconds": 1, "job": "4711"}').encode(), "'job' a string"),
    "total_seconds a string": (
        b'{"ippo_train": {"total_seconds": "1", "runs": []}}', "'total_seconds' a string"
    ),
    "expected_runs a float": (
        stage_text(extra=', "expected_runs": 2.5').encode(), "'expected_runs' a number"
    ),
    "duplicate stage keys": (
        (stage_text()[:-1] + ", " + stage_text()[1:]).encode(), "key 'ippo_train' twice"
    ),
    "duplicate keys in a run": (
        stage_text('{"seconds": 1.0, "seconds": 2.0}').encode(), "key 'seconds' twice"
    ),
    "duplicate keys in metadata": (
        stage_text('{"seconds": 1.0, "cfg": {"lr": 1, "lr": 2}}').encode(), "key 'lr' twice"
    ),
    "not UTF-8": (b'{"caf\xe9": 1}', "not UTF-8 (byte 0xe9 at offset 5)"),
    "UTF-16": ('{"a": 1}'.encode("utf-16"), "not UTF-8"),
    "lone surrogate escape": (b'{"\\ud800x": 1}', "lone surrogate"),
    "truncated": (stage_text().encode()[:40], "does not parse as JSON"),
    "empty": (b"", "does not parse as JSON"),
    "NUL bytes": (b"\x00" * 16, "does not parse as JSON"),
    "top level an array": (b"[]", "top level is an array"),
    "top level a number": (b"3", "top level is a number"),
}

HW_ENTRY = '{"host": "n1", "cpu": {"logical_cpus": 2}}'
CORRUPT_HARDWARE: dict[str, tuple[bytes, str]] = {
    "200,000 nested {": (b'{"a":' * 200_000, "deeper than 104 levels"),
    "5000-digit integer": (
        ('{"schema_version": 1, "hardware": {}, "x": 1' + "0" * 5000 + "}").encode(),
        "number Python refuses",
    ),
    "duplicate hardware ids": (
        f'{{"schema_version": 1, "hardware": {{"hw-1": {HW_ENTRY}, "hw-1": {HW_ENTRY}}}}}'
        .encode(),
        "key 'hw-1' twice",
    ),
    "hardware not an object": (b'{"schema_version": 1, "hardware": []}', "'hardware' is an array"),
    "hardware missing": (b'{"schema_version": 1}', "'hardware' is missing"),
    "a description not an object": (
        b'{"schema_version": 1, "hardware": {"hw-1": 5}}', "hardware 'hw-1' is a number"
    ),
    "schema_version a string": (
        b'{"schema_version": "1", "hardware": {}}', "schema_version is '1'"
    ),
    "not UTF-8": (b'{"schema_version": 1, "hardware": {"\xff": {}}}', "not UTF-8"),
    "truncated": (b'{"schema_version": 1, "hardw', "does not parse as JSON"),
}


def write(art: Path, name: str, content: bytes) -> Path:
    art.mkdir(parents=True, exist_ok=True)
    path = art / name
    path.write_bytes(content)
    return path


@pytest.fixture(params=list(CORRUPT_TIMINGS), ids=list(CORRUPT_TIMINGS))
def corrupt_timings(request: pytest.FixtureRequest, art: Path) -> tuple[Path, bytes, str]:
    content, problem = CORRUPT_TIMINGS[request.param]
    return write(art, "timings.json", content), content, problem


@pytest.fixture(params=list(CORRUPT_HARDWARE), ids=list(CORRUPT_HARDWARE))
def corrupt_hardware(request: pytest.FixtureRequest, art: Path) -> tuple[Path, bytes, str]:
    content, problem = CORRUPT_HARDWARE[request.param]
    return write(art, "timings_hardware.json", content), content, problem


def report(directory: Path) -> tuple[int, list[str]]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["report", str(directory)])
    return status, err.getvalue().splitlines()


# -- corrupt content: timings.json ------------------------------------------------------


def test_loader_names_the_file_and_what_is_wrong(
    art: Path, corrupt_timings: tuple[Path, bytes, str]
) -> None:
    path, _, problem = corrupt_timings

    with pytest.raises(SidecarCorruptError) as info:
        load_timings(art)

    assert (str(path), True) == (info.value.path, problem in info.value.problem), info.value


def test_report_exits_1_with_one_line_naming_the_file(
    art: Path, corrupt_timings: tuple[Path, bytes, str]
) -> None:
    path, content, _ = corrupt_timings

    status, lines = report(art)

    assert (1, 1, True) == (status, len(lines), str(path) in lines[0]), lines
    assert content == path.read_bytes()


def test_strict_save_refuses_and_leaves_the_bytes(
    art: Path, corrupt_timings: tuple[Path, bytes, str]
) -> None:
    path, content, _ = corrupt_timings

    with pytest.raises(SidecarCorruptError) as info:
        record_timing("alpharank", 1.0, recorder=Recorder(art, strict=True))

    assert (str(path), content) == (info.value.path, path.read_bytes())


def test_lenient_stage_keeps_its_record_until_the_file_is_moved_aside(
    art: Path, corrupt_timings: tuple[Path, bytes, str]
) -> None:
    path, content, _ = corrupt_timings
    rec = Recorder(art)

    with pytest.warns(StageTimerWarning), stage("alpharank", recorder=rec):
        pass

    assert (1, content) == (rec.pending, path.read_bytes())
    path.rename(art / "timings.json.broken")
    rec.close()
    assert ["alpharank"] == list(load_timings(art).stages)


# -- corrupt content: timings_hardware.json ---------------------------------------------


def test_hardware_loader_names_the_file_and_what_is_wrong(
    art: Path, corrupt_hardware: tuple[Path, bytes, str]
) -> None:
    path, _, problem = corrupt_hardware

    with pytest.raises(SidecarCorruptError) as info:
        load_hardware(art)

    assert (str(path), True) == (info.value.path, problem in info.value.problem), info.value


def test_lenient_stage_keeps_its_record_when_the_hardware_file_is_corrupt(
    art: Path, corrupt_hardware: tuple[Path, bytes, str]
) -> None:
    path, content, _ = corrupt_hardware
    rec = Recorder(art)

    with pytest.warns(StageTimerWarning), stage("alpharank", recorder=rec):
        pass

    assert (1, content) == (rec.pending, path.read_bytes())
    assert not (art / "timings.json").exists()


def test_strict_save_refuses_a_corrupt_hardware_file_and_leaves_the_bytes(
    art: Path, corrupt_hardware: tuple[Path, bytes, str]
) -> None:
    path, content, _ = corrupt_hardware

    with pytest.raises(SidecarCorruptError):
        record_timing("alpharank", 1.0, recorder=Recorder(art, strict=True))

    assert content == path.read_bytes()


def test_byte_order_mark_is_accepted_and_dropped_by_the_next_rewrite(art: Path) -> None:
    # RFC 8259 section 8.1 lets a parser ignore a BOM; editors on Windows add one.
    path = write(art, "timings.json", b"\xef\xbb\xbf" + stage_text().encode())

    assert [1.0] == [r.seconds for r in load_timings(art).stages["ippo_train"].runs]
    record_timing("alpharank", 2.0, recorder=Recorder(art, strict=True))
    assert not path.read_bytes().startswith(b"\xef\xbb\xbf")


def test_surrogate_pair_escape_is_not_a_lone_surrogate(art: Path) -> None:
    write(art, "timings.json", b'{"\\ud83d\\ude00": 1}')

    assert {"\U0001f600": 1} == load_timings(art).other


def test_escaped_quotes_and_backslashes_do_not_confuse_the_depth_scan(art: Path) -> None:
    label = 'a\\"]]]]\\\\'  # JSON text of the string a"]]]]\
    write(art, "timings.json", stage_text(f'{{"seconds": 1.0, "label": "{label}"}}').encode())

    assert 'a"]]]]\\' == load_timings(art).stages["ippo_train"].runs[0].label


@pytest.mark.parametrize(("depth", "refused"), [(104, False), (105, True)])
def test_file_nesting_limit_is_exactly_104_levels(art: Path, depth: int, refused: bool) -> None:
    write(art, "timings.json", ('{"x": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}").encode())

    try:
        load_timings(art)
    except SidecarCorruptError as exc:
        assert refused, exc
    else:
        assert not refused


@pytest.mark.parametrize("closed", [True, False], ids=["balanced", "unclosed"])
def test_nesting_just_past_the_limit_is_refused_before_parsing(art: Path, closed: bool) -> None:
    write(art, "timings.json", b"[" * 105 + (b"]" * 105 if closed else b""))

    with pytest.raises(SidecarCorruptError, match="deeper than 104 levels"):
        load_timings(art)


def test_metadata_nested_to_the_limit_is_written_and_read_back(art: Path) -> None:
    deep: object = 1
    for _ in range(100):
        deep = [deep]

    record_timing("alpharank", 1.0, recorder=Recorder(art, strict=True), cfg=deep)

    assert deep == load_timings(art).stages["alpharank"].runs[0].metadata["cfg"]


# -- values no writer could have written --------------------------------------------------

# a stored run -> (its seconds as the loader gives them)
IMPOSSIBLE_RUNS: dict[str, tuple[str, float]] = {
    "negative seconds": ('{"seconds": -5000000.0, "run_idx": 0}', -5000000.0),
    "NaN seconds": ('{"seconds": NaN, "run_idx": 0}', math.nan),
    "1e999 seconds": ('{"seconds": 1e999, "run_idx": 0}', math.inf),
    "-Infinity seconds": ('{"seconds": -Infinity, "run_idx": 0}', -math.inf),
    "400-digit seconds": ('{"seconds": 1' + "0" * 400 + ', "run_idx": 0}', math.inf),
    "negative run_idx": ('{"seconds": 1.0, "run_idx": -3}', 1.0),
    "run_idx beyond int64": ('{"seconds": 1.0, "run_idx": 1' + "0" * 30 + "}", 1.0),
}


@pytest.fixture(params=list(IMPOSSIBLE_RUNS), ids=list(IMPOSSIBLE_RUNS))
def impossible(request: pytest.FixtureRequest, art: Path) -> tuple[Path, str, float]:
    run, seconds = IMPOSSIBLE_RUNS[request.param]
    return write(art, "timings.json", stage_text(run).encode()), run, seconds


def same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def test_impossible_value_loads_as_stored(art: Path, impossible: tuple[Path, str, float]) -> None:
    _, _, seconds = impossible

    (run,) = load_timings(art).stages["ippo_train"].runs

    assert same(seconds, run.seconds), run.seconds


@pytest.mark.parametrize("policy", ["sequential", "upsert"])
def test_impossible_value_never_breaks_a_new_record_of_the_same_stage(
    art: Path, impossible: tuple[Path, str, float], policy: str
) -> None:
    path, run, _ = impossible

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not even a warning
        record_timing(
            "ippo_train", 2.0, run_idx=1, recorder=Recorder(art, strict=True, policy=policy)
        )

    stored = json.loads(path.read_text())["ippo_train"]
    kept = json.loads(run)
    (old,) = [r for r in stored["runs"] if r["run_idx"] == kept["run_idx"]]
    assert same(kept["seconds"], old["seconds"])  # kept verbatim
    valid = [s for s in (kept["seconds"], 2.0) if isinstance(s, float) and 0 <= s < math.inf]
    assert sum(valid) == stored["total_seconds"]


def test_impossible_value_never_breaks_a_record_of_another_stage(
    art: Path, impossible: tuple[Path, str, float]
) -> None:
    path, _run, _ = impossible
    before = json.loads(path.read_text())["ippo_train"]

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with stage("alpharank", recorder=Recorder(art)):
            pass

    data = json.loads(path.read_text())
    assert list(data) == ["ippo_train", "alpharank"]
    assert same(before["runs"][0]["seconds"], data["ippo_train"]["runs"][0]["seconds"])


def test_total_that_is_not_the_sum_is_kept_until_the_stage_is_written(art: Path) -> None:
    path = write(art, "timings.json", stage_text().replace('"total_seconds": 1.0',
                                                           '"total_seconds": 999').encode())

    assert 999.0 == load_timings(art).stages["ippo_train"].total_seconds
    record_timing("alpharank", 1.0, recorder=Recorder(art, strict=True))
    assert 999 == json.loads(path.read_text())["ippo_train"]["total_seconds"]
    record_timing("ippo_train", 2.0, run_idx=1, recorder=Recorder(art, strict=True))
    assert 3.0 == json.loads(path.read_text())["ippo_train"]["total_seconds"]


def test_missing_total_loads_as_the_sum_of_the_valid_runs(art: Path) -> None:
    write(art, "timings.json",
          b'{"s": {"runs": [{"seconds": 1.5}, {"seconds": NaN}, {"seconds": -1}]}}')

    assert 1.5 == load_timings(art).stages["s"].total_seconds


# -- where the loaders look ------------------------------------------------------------


def test_missing_directory_is_file_not_found_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "exprots" / "ippo"

    with pytest.raises(FileNotFoundError) as info:
        load_timings(missing)

    assert str(missing) == info.value.filename


def test_missing_directory_for_hardware_is_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_hardware(tmp_path / "nope")


def test_existing_directory_without_sidecars_reads_as_empty(tmp_path: Path) -> None:
    assert ({}, {}) == (load_timings(tmp_path).stages, load_hardware(tmp_path).hardware)


@pytest.mark.parametrize("name", ["timings.json", "timings_hardware.json"])
def test_path_of_a_sidecar_reads_its_directory(art: Path, name: str) -> None:
    record_timing("alpharank", 1.0, recorder=Recorder(art, strict=True))

    assert (["alpharank"], 1) == (
        list(load_timings(art / name).stages), len(load_hardware(art / name).hardware)
    )


def test_path_that_is_a_plain_file_is_not_a_directory(tmp_path: Path) -> None:
    script = tmp_path / "suite.py"
    script.write_text("print()\n")

    with pytest.raises(NotADirectoryError) as info:
        load_timings(script)

    assert str(script) == info.value.filename


def test_sidecar_that_is_a_directory_is_corrupt(art: Path) -> None:
    (art / "timings.json").mkdir(parents=True)

    with pytest.raises(SidecarCorruptError, match="is a directory, not a regular file"):
        load_timings(art)


def test_file_larger_than_the_limit_is_refused_before_it_is_read(
    art: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from stagetimer._store import parse as _parse

    path = write(art, "timings.json", stage_text().encode())
    monkeypatch.setattr(_parse, "MAX_BYTES", 16)

    with pytest.raises(SidecarCorruptError, match="larger than the 16-byte limit"):
        load_timings(art)
    assert os.path.getsize(path) > 16


def test_file_that_grows_past_the_limit_while_read_is_cut_and_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from stagetimer._store import parse as _parse

    monkeypatch.setattr(_parse, "MAX_BYTES", 16)
    read_end, write_end = os.pipe()  # stands in for a file still growing: fstat said 0 bytes
    os.write(write_end, b"x" * 100)
    os.close(write_end)
    try:
        raw = _parse.read_all(read_end, 0)
    finally:
        os.close(read_end)

    assert 17 == len(raw)
    with pytest.raises(SidecarCorruptError, match="is 17 bytes, larger than the 16-byte limit"):
        _parse.parse_timings("timings.json", raw)
