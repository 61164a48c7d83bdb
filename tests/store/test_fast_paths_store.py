"""Differential tests of the sidecar protocol's fast paths against plain definitions.

Each fast path of ``stagetimer._store`` (a first test that decides the usual input, a
check done in C, a cache of encoded text) is compared, on random input from fixed seeds
and on the boundary cases its first test decides, with a plain reference written here
or with the module's own general path:

- parse: the bracket scan and nesting test against a JSON tokenizer, duplicate keys,
  the lone-surrogate pre-test, ``is_utf8``, the test of a read cut short against every
  cut of a text, ``read_all`` against a plain read;
- shape and load: ``_runs_fit`` against ``run_problem`` run by run, the loader's runs
  against a key-by-key reading, the description checks against the loader (cattrs),
  ``schema_version``'s type;
- rules: ``is_stage`` against the format's definition, ``valid_durations`` and
  ``is_valid_seconds`` against filters of exact arithmetic;
- encode and sidecar: the cached runs text, and a writer's cached parse, against a
  plain encoding of the same data by a writer without a cache;
- validate: the scalar fast path of metadata copies and the nesting walk.
"""

from __future__ import annotations

import fractions
import json
import math
import os
import random
import sys
import threading
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from stagetimer._errors import InvalidRecordError, SidecarCorruptError
from stagetimer._format import LEGACY_KEYS, RESOURCE_FIELDS, RUN_FIELDS
from stagetimer._store import encode, parse, rules, shape, sidecar, validate
from stagetimer._store.load import as_float, structure_hardware, structure_timings
from stagetimer._store.records import RunTiming, StageTiming
from stagetimer.hardware import Hardware
from stagetimer.software import Software

FLOAT_MAX = sys.float_info.max

# -- parse: the bracket scan and the nesting test ------------------------------------------

# Characters that stress the scan inside strings: brackets, quotes, backslashes, non-ASCII.
_STRING_CHARS = '[]{}"\\ a\u00e9\u20ac\U0001f600/\n'


def _random_string(rng: random.Random) -> str:
    return "".join(rng.choice(_STRING_CHARS) for _ in range(rng.randrange(6)))


def _random_json(rng: random.Random, depth: int) -> Any:
    """A JSON value nesting at most ``depth`` levels, strings full of brackets and escapes."""
    kind = rng.randrange(6 if depth > 0 else 3)
    if kind == 0:
        return _random_string(rng)
    if kind == 1:
        return rng.choice([0, -1, 1.5, True, None, 10**30])
    if kind == 2:
        return ""
    if kind in (3, 4):
        return [_random_json(rng, depth - 1) for _ in range(rng.randrange(4))]
    return {_random_string(rng): _random_json(rng, depth - 1) for _ in range(rng.randrange(4))}


def _outside_strings(text: str) -> Iterator[str]:
    """The characters of ``text`` outside JSON strings, quotes left out: a tokenizer's view
    (a backslash escapes the next character inside a string only)."""
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        else:
            yield ch


def _reference_brackets(text: str) -> bytes:
    """The brackets outside strings of a JSON text, braces as brackets."""
    brackets = {"[": "[", "{": "[", "]": "]", "}": "]"}
    return "".join(brackets[ch] for ch in _outside_strings(text) if ch in brackets).encode()


def _depth(brackets: bytes) -> int:
    depth = deepest = 0
    for c in brackets:
        depth += 1 if c == ord("[") else -1
        deepest = max(deepest, depth)
    return deepest


def _json_texts(seed: int, count: int) -> list[bytes]:
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        value = _random_json(rng, rng.randrange(1, 9))
        text = json.dumps(value, ensure_ascii=rng.random() < 0.5, indent=rng.choice([None, 2]))
        texts.append(text.encode("utf-8"))
    return texts


def test_bracket_scan_is_a_json_tokenizers_view_of_the_text() -> None:
    # Both of _brackets' ways (no string holds a bracket, or some do) against a tokenizer.
    texts = [
        *_json_texts(1, 3000),
        b'""', b'["", "[", ""]', b'["\\\\", "]"]', b'["\\"[", "]"]', b'{"": {"\\\\\\"": []}}',
        b'["a\\\\\\\\"]', b'["", ""]', b'["\\u005b", []]',
    ]
    for raw in texts:
        assert parse._brackets(raw) == _reference_brackets(raw.decode()), raw


def test_nesting_test_is_exact_on_json_texts_at_every_limit() -> None:
    for raw in _json_texts(2, 1500):
        depth = _depth(_reference_brackets(raw.decode()))
        for limit in range(depth + 2):
            assert parse._nesting_exceeds(raw, limit) is (depth > limit), (raw, limit)


@pytest.mark.parametrize("depth", [103, 104, 105, 106])
def test_nesting_test_is_exact_at_the_files_limit_with_strings_and_siblings(depth: int) -> None:
    # Deep chains beside shallow siblings and brackets in strings, at the real limit.
    for seed in range(20):
        rng = random.Random(seed)
        value: Any = rng.choice([[], {}, ["[[["], {"]": "{"}])
        for _ in range(depth - 1):
            value = rng.choice([[value], [1, [2], value, "]]"], {"[": value, "k": []}])
        raw = json.dumps(value).encode()
        assert _depth(_reference_brackets(raw.decode())) == depth
        assert parse._nesting_exceeds(raw, 104) is (depth > 104)


def _parser_reach(raw: bytes) -> int:
    """How deep a JSON parser can get in ``raw`` before its first error at the latest:
    it stops at a closer of nothing and at a backslash outside a string."""
    depth = deepest = 0
    for ch in _outside_strings(raw.decode("latin-1")):
        if ch == "\\":
            break
        if ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
            if depth < 0:
                break
    return deepest


def test_nesting_test_never_lets_through_text_a_parser_would_descend_too_deep() -> None:
    # Texts that are not JSON (unpaired brackets, stray quotes and backslashes): the scan
    # may refuse more, never less than the depth a parser could reach.
    rng = random.Random(3)
    for _ in range(20000):
        raw = bytes(rng.choice(b'[[[]]]{}"\\ a,') for _ in range(rng.randrange(1, 30)))
        reach = _parser_reach(raw)
        for limit in range(6):
            if reach > limit:
                assert parse._nesting_exceeds(raw, limit), (raw, limit)


# -- parse: keys twice, lone surrogates, UTF-8 ---------------------------------------------

_KEY_SPELLINGS = {"a": ['"a"', '"\\u0061"'], "b": ['"b"'], "é": ['"é"', '"\\u00e9"'], "": ['""']}


def _object_text(rng: random.Random, depth: int) -> str:
    if depth == 0 or rng.random() < 0.3:
        return rng.choice(["1", '"x"', "[]", "null"])
    if rng.random() < 0.3:
        return "[" + ", ".join(_object_text(rng, depth - 1) for _ in range(rng.randrange(3))) + "]"
    keys = [rng.choice(list(_KEY_SPELLINGS)) for _ in range(rng.randrange(4))]
    pairs = [f"{rng.choice(_KEY_SPELLINGS[k])}: {_object_text(rng, depth - 1)}" for k in keys]
    return "{" + ", ".join(pairs) + "}"


def _reference_duplicate(text: str) -> str | None:
    """The first key a decoder meets twice in one object (inner objects end first)."""
    found: list[str] = []

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in pairs]
        for i, key in enumerate(keys):
            if key in keys[:i] and not found:
                found.append(key)
        return dict(pairs)

    json.loads(text, object_pairs_hook=hook)
    return found[0] if found else None


def test_decode_unique_refuses_exactly_the_objects_with_a_key_twice() -> None:
    rng = random.Random(4)
    for _ in range(3000):
        text = _object_text(rng, 4)
        expected = _reference_duplicate(text)
        try:
            value = parse.decode_unique(text)
        except parse.DuplicateKey as exc:
            assert exc.key == expected, text
        else:
            assert expected is None, text
            assert value == json.loads(text)


# Pieces of a string's JSON text: lone and paired surrogate escapes in both cases, an
# escaped backslash before "ud800" (no escape at all), other escapes, non-ASCII.
_STRING_PIECES = [
    "a", "\\ud800", "\\uDBFF", "\\udc00", "\\uDFFF", "\\ud83d\\ude00", "\\uD83D\\uDE00",
    "\\\\ud800", "\\\\\\ud800", "\\u00e9", "\\ucfff", "\\ue000", "é", "\\\\", '\\"', "\\n",
]


def _has_lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return any(0xD800 <= ord(c) <= 0xDFFF for c in value)
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(map(_has_lone_surrogate, value))
    return False


def test_lone_surrogate_pre_test_refuses_exactly_the_texts_holding_one() -> None:
    rng = random.Random(5)
    for _ in range(4000):
        strings = ['"' + "".join(rng.choices(_STRING_PIECES, k=rng.randrange(4))) + '"'
                   for _ in range(3)]
        text = f'{{{strings[0]}: [{strings[1]}, {{"k": {strings[2]}}}]}}'
        if rng.random() < 0.2:
            text = text.upper().replace("\\U", "\\u")  # upper-case hex digits
        try:
            expected = _has_lone_surrogate(json.loads(text))
        except ValueError:
            continue  # a key twice after upper-casing: not this test's subject
        try:
            parse.parse_json("f.json", text.encode("utf-8"))
        except SidecarCorruptError as exc:
            assert expected, text
            assert "lone surrogate" in str(exc)
        else:
            assert not expected, text


def test_is_utf8_is_no_surrogate_code_point() -> None:
    rng = random.Random(6)
    pool = ["a", "é", "\U0001f600", "\ud800", "\udfff", "\ud7ff", "\ue000", "\x00",
            os.fsdecode(b"\xff"), "\U0010ffff"]
    for _ in range(5000):
        text = "".join(rng.choices(pool, k=rng.randrange(5)))
        assert parse.is_utf8(text) is (not any(0xD800 <= ord(c) <= 0xDFFF for c in text))


# -- parse: a read cut short ---------------------------------------------------------------


def test_every_cut_of_a_sidecar_text_that_does_not_parse_is_seen_as_cut_short() -> None:
    # A network or FUSE client may show a file being replaced cut short: such a read is
    # tried again, any other corruption is final. Every proper prefix must be seen as a
    # cut, wherever it ends: in a number, a literal, a string, a \uXXXX escape, UTF-8.
    rng = random.Random(13)
    for _ in range(60):
        label = "\x1b\u00e9\U0001f600\"\\"  # escaped by every encoder, or not
        runs = [{"seconds": rng.choice([1.5, 1e-7, 12, -0.0]), "label": label,
                 "cfg": [True, None, False]} for _ in range(2)]
        data = {"st\u00e9": {"total_seconds": 1.5, "runs": runs}}
        text = json.dumps(data, indent=2, ensure_ascii=rng.random() < 0.5).encode()
        for end in range(len(text)):
            with pytest.raises(SidecarCorruptError) as refused:
                parse.parse_json("f.json", text[:end])
            assert refused.value.cut_short, text[:end]


@pytest.mark.parametrize(
    "raw",
    [b'{"a": 1} {', b'{"a": "\\u12G4"}', b'{"a": "\\u12G', b'{"a": tru}', b'{"a": 1,}',
     b'{"a" 1}', b'{"a": "\xff"}', b'{"a": -}'],
)
def test_text_damaged_before_its_end_is_not_cut_short(raw: bytes) -> None:
    with pytest.raises(SidecarCorruptError) as refused:
        parse.parse_json("f.json", raw)
    assert not refused.value.cut_short


# -- parse: read_all ---------------------------------------------------------------------


@pytest.mark.parametrize("size", [0, 1, 65535, 65536, 65537, 200_001])
def test_read_all_of_a_file_is_its_rest_whatever_size_it_is_told(tmp_path: Path, size: int) -> None:
    content = random.Random(size).randbytes(size)
    path = tmp_path / "f"
    path.write_bytes(content)
    for offset in sorted({0, 1, size // 2, size}):
        for hint in {0, size - offset - 1, size - offset, size - offset + 1, 3 * size + 7}:
            fd = os.open(path, os.O_RDONLY)
            try:
                os.lseek(fd, offset, os.SEEK_SET)
                assert parse.read_all(fd, max(hint, 0)) == content[offset:]
            finally:
                os.close(fd)


def test_read_all_of_a_pipe_written_in_odd_pieces_is_everything_written() -> None:
    rng = random.Random(7)
    for size in (0, 10, 70_000, 300_000):
        content = rng.randbytes(size)
        read_end, write_end = os.pipe()

        def feed(data: bytes = content, fd: int = write_end, seed: int = size) -> None:
            pieces = random.Random(seed)
            at = 0
            while at < len(data):
                step = pieces.choice([1, 100, 4096, 65537])
                at += os.write(fd, data[at : at + step])
            os.close(fd)

        writer = threading.Thread(target=feed)
        writer.start()
        try:
            assert parse.read_all(read_end, rng.choice([0, size, size // 3])) == content
        finally:
            writer.join(timeout=10)
            os.close(read_end)


# -- shape: the runs' types ------------------------------------------------------------------

_VALUES: list[Any] = [
    None, True, False, 0, -1, 2**63, 10**400, 0.5, -0.0, math.nan, math.inf, "", "s", [], [1],
    {}, {"cpu_seconds": 1.0}, {"cpu_seconds": "x"}, {"memory_peak_bytes": True},
    {"gpu_energy_joules": None, "other": "kept"}, {"children_cpu_seconds": [1]},
]


def _random_run(rng: random.Random) -> Any:
    if rng.random() < 0.05:
        return rng.choice([None, 1, "run", [], [{"seconds": 1.0}]])
    run: dict[str, Any] = {}
    if rng.random() < 0.9:
        run["seconds"] = rng.choice([1.5, 0, 10**400, -1.0, *_VALUES])
    for key in rng.sample(RUN_FIELDS[1:], rng.randrange(4)):
        run[key] = rng.choice([*_VALUES, "hw-1", 3, {"scheduler": "slurm"}])
    if rng.random() < 0.3:
        run[rng.choice(["cfg", "system_ram_gb", "RUNS"])] = rng.choice(_VALUES)
    return run


def test_runs_fit_is_every_run_without_a_problem() -> None:
    rng = random.Random(8)
    for _ in range(5000):
        runs = [_random_run(rng) for _ in range(rng.randrange(4))]
        if rng.random() < 0.5:  # a valid run first: the loop must go on to the rest
            runs.insert(0, {"seconds": 1.0, "run_idx": 0, "resources": {"cpu_seconds": 0.5}})
        expected = all(shape.run_problem(run) is None for run in runs)
        assert shape._runs_fit(runs) is expected, runs
        data = {"st": {"total_seconds": 1.0, "runs": runs}}
        try:
            shape.check_timings_shape("t.json", data)
        except SidecarCorruptError:
            assert not expected
        else:
            assert expected


def test_run_problem_holds_to_the_field_table_on_each_field_alone() -> None:
    # run_problem itself against the format's table: each known field, each JSON type.
    allowed = {
        "seconds": {"a number"}, "run_idx": {"an integer"}, "rank": {"an integer"},
        "world_size": {"an integer"}, "job": {"an object"}, "resources": {"an object"},
        # any value: an older writer's metadata may hold the key
        "parent": {"a string", "a number", "an integer", "a boolean", "an array", "an object"},
    }
    for key in RUN_FIELDS:
        for value in _VALUES:
            run = {"seconds": 1.0, key: value}
            kind = (
                "an integer" if type(value) is int
                else "a number" if type(value) is float
                else shape.json_type(value)
            )
            ok_kinds = allowed.get(key, {"a string"})
            expected = kind in ok_kinds or (kind == "an integer" and "a number" in ok_kinds) or (
                value is None and key != "seconds"
            )
            if expected and key == "resources" and isinstance(value, dict):
                expected = all(
                    value.get(k) is None or type(value[k]) in (int, float) for k in RESOURCE_FIELDS
                )
            assert (shape.run_problem(run) is None) is expected, (key, value)
            assert shape._runs_fit([run]) is expected, (key, value)


def _reference_stage(stage: dict[str, Any]) -> StageTiming:
    """A parsed stage as the loader documents it, run by run and key by key."""
    runs = []
    for run in stage["runs"]:
        fields = {k: run[k] for k in RUN_FIELDS[1:] if k in run}
        legacy = {k: v for k, v in run.items() if k in LEGACY_KEYS}
        rest = {k: v for k, v in run.items() if k not in RUN_FIELDS and k not in LEGACY_KEYS}
        runs.append(RunTiming(seconds=as_float(run["seconds"]), **fields, metadata=rest,
                              legacy_metadata=legacy))
    total = stage.get("total_seconds", rules.add_seconds(0.0, stage["runs"]))
    extra = {k: v for k, v in stage.items() if k not in ("runs", "total_seconds")}
    return StageTiming(total_seconds=as_float(total), runs=tuple(runs), extra=extra)


def test_structured_runs_are_the_runs_read_key_by_key() -> None:
    # The loader's common case (a run without metadata) against its general split.
    rng = random.Random(15)
    for _ in range(3000):
        drawn = [_random_run(rng) for _ in range(4)]
        runs = [run for run in drawn if shape.run_problem(run) is None]
        stage: dict[str, Any] = {"runs": runs}
        if rng.random() < 0.5:
            stage["total_seconds"] = rng.choice([1.5, 10**400, -1])
        if rng.random() < 0.2:
            stage["expected_runs"] = 3
        timings = structure_timings({"st": stage, "gpu_ram_gb": 8})
        assert repr(timings.stages["st"]) == repr(_reference_stage(stage))


# -- shape: the descriptions against the loader ----------------------------------------------

_ODD: list[Any] = [None, True, 0, 7, 10**400, -(10**400), 1.5, math.nan, "s", [], [1, "a"], {},
                   {"a": 1}, {"a": "b"}]


def _value_of(hint: Any, rng: random.Random, odd: float) -> Any:
    """A JSON value of the type ``hint`` (a description's), or with chance ``odd`` any value."""
    if rng.random() < odd:
        return rng.choice(_ODD)
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return _value_of(rng.choice(typing.get_args(hint)), rng, odd)
    if hint is type(None):
        return None
    if hint is bool:
        return rng.random() < 0.5
    if hint is int:
        return rng.choice([0, 3, -1, 2**64, 10**400])
    if hint is float:  # a number: an int of any size is one in JSON
        return rng.choice([0.0, 2.5, 3, 1e308, 10**308, 10**400, -(10**400)])
    if hint is str:
        return rng.choice(["", "x", "é"])
    if origin in (tuple, list):
        return [_value_of(typing.get_args(hint)[0], rng, odd) for _ in range(rng.randrange(3))]
    if origin is dict:
        inner = typing.get_args(hint)[1]
        return {f"k{i}": _value_of(inner, rng, odd) for i in range(rng.randrange(3))}
    hints = typing.get_type_hints(hint)
    fields = attrs.fields(hint)
    return {f.name: _value_of(hints[f.name], rng, odd) for f in fields if rng.random() < 0.6}


def test_a_description_the_checks_accept_is_one_the_loader_reads() -> None:
    # docs/format.md: "a save refuses exactly what the loader refuses".
    rng = random.Random(9)
    for i in range(1500):
        odd = rng.choice([0.0, 0.02, 0.1])
        data = {
            "schema_version": 1,
            "hardware": {f"hw-{i}": _value_of(Hardware, rng, odd)},
            "software": {f"sw-{i}": _value_of(Software, rng, odd)},
        }
        try:
            parsed = parse.parse_hardware("h.json", json.dumps(data).encode())
        except SidecarCorruptError:
            continue
        structure_hardware("h.json", parsed)  # raises SidecarCorruptError on a refusal


@pytest.mark.parametrize(
    "value", [10**309, -(10**400), int(FLOAT_MAX) * 2], ids=["1e309", "-1e400", "2 max"]
)
def test_an_integer_beyond_a_float_in_a_number_field_is_refused_by_the_checks(value: int) -> None:
    raw = json.dumps({"schema_version": 1, "hardware": {"hw-1": {"cpu": {"quota_cpus": value}}}})
    with pytest.raises(SidecarCorruptError, match=r"quota_cpus is an integer too large"):
        parse.parse_hardware("h.json", raw.encode())
    assert shape.hardware_problem({"cpu": {"clock_max_mhz": value}}) is not None


@pytest.mark.parametrize(
    "value", [int(FLOAT_MAX), -int(FLOAT_MAX), 10**308, 3], ids=["max", "-max", "1e308", "3"]
)
def test_an_integer_a_float_holds_in_a_number_field_is_read(value: int) -> None:
    raw = json.dumps({"schema_version": 1, "hardware": {"hw-1": {"cpu": {"quota_cpus": value}}}})
    parsed = parse.parse_hardware("h.json", raw.encode())
    assert structure_hardware("h.json", parsed).hardware["hw-1"].cpu.quota_cpus == float(value)


@pytest.mark.parametrize("version", ["true", "1.0", "1e0", "false", "0", "2.0", '"1"', "null"])
def test_schema_version_is_the_integer_1_not_a_value_equal_to_it(version: str) -> None:
    raw = f'{{"schema_version": {version}, "hardware": {{}}}}'.encode()
    with pytest.raises(SidecarCorruptError, match="schema_version is"):
        parse.parse_hardware("h.json", raw)


# -- rules: stages, durations ------------------------------------------------------------------


def test_is_stage_is_the_format_definition_on_every_file_the_parser_accepts() -> None:
    # "A top-level value that is an object holding a runs list is a stage"; the parser
    # refuses an object whose runs is anything else, so is_stage is "an object with runs".
    rng = random.Random(10)
    values: list[Any] = [None, 1, "runs", [], [{"seconds": 1.0}], {}, {"runs": None},
                         {"runs": []}, {"runs": {}}, {"runs": "x"}, {"Runs": []},
                         {"runs": [{"seconds": 1}], "total_seconds": 1}, {"x": {"runs": []}}]
    for _ in range(2000):
        data = {f"s{i}": rng.choice(values) for i in range(rng.randrange(4))}
        try:
            parsed = parse.parse_timings("t.json", json.dumps(data).encode())
        except SidecarCorruptError:
            assert any(isinstance(v, dict) and "runs" in v and type(v["runs"]) is not list
                       for v in data.values())
            continue
        for value in parsed.values():
            assert rules.is_stage(value) is (type(value) is dict and "runs" in value)


def _exactly_valid(value: object) -> bool:
    """A duration a writer could have written, in exact arithmetic."""
    if type(value) not in (int, float) and not (
        isinstance(value, (int, float)) and not isinstance(value, bool)
    ):
        return False
    if isinstance(value, float) and not math.isfinite(value):
        return False
    exact = fractions.Fraction(value)  # type: ignore[arg-type]
    return 0 <= exact <= fractions.Fraction(FLOAT_MAX)


_DURATIONS = [0.0, -0.0, 1.0, 3.5, 5e-324, -5e-324, -1.0, 1e308, FLOAT_MAX, math.inf, -math.inf,
              math.nan, 1e-300]


def test_valid_durations_is_the_values_a_writer_could_store_and_itself_when_all_are() -> None:
    rng = random.Random(11)
    cases = [[], [FLOAT_MAX, FLOAT_MAX], [1e308] * 3, [math.inf, -math.inf], [-0.0], [math.nan]]
    cases += [rng.choices(_DURATIONS, k=rng.randrange(6)) for _ in range(5000)]
    for values in cases:
        expected = [v for v in values if _exactly_valid(v)]
        got = rules.valid_durations(values)
        assert [repr(v) for v in got] == [repr(v) for v in expected], values
        if len(expected) == len(values):
            assert got is values, values  # "values itself when all are valid"


class _Count(int):
    pass


def test_is_valid_seconds_is_a_number_from_0_to_the_largest_float_exactly() -> None:
    big = int(FLOAT_MAX)
    values: list[Any] = [*_DURATIONS, 0, 1, -1, True, False, big, big + 1, -big, 2**1024, 10**400,
                         _Count(3), _Count(-3), None, "1", [1.0], complex(1, 0),
                         fractions.Fraction(1, 2)]
    for value in values:
        assert rules.is_valid_seconds(value) is _exactly_valid(value), value
        assert (rules.valid_seconds({"seconds": value}) is not None) is _exactly_valid(value)


# -- encode and sidecar: the cached runs text against a plain encoding -------------------------


def _random_record(rng: random.Random) -> dict[str, Any]:
    run: dict[str, Any] = {"seconds": rng.choice([0.0, 1.5, 1e-9, 2.0, 1e300, 7])}
    if rng.random() < 0.8:
        run["run_idx"] = rng.choice([0, 1, 1, 2, 3, 5])
    if rng.random() < 0.3:
        run["label"] = rng.choice(["a", "b", "é\u2028", 'q"\\'])
    if rng.random() < 0.3:
        run["rank"] = rng.choice([0, 1])
    if rng.random() < 0.3:
        run["cfg"] = rng.choice([{"lr": 0.1, "nested": [1, [2, {}]]}, "\U0001f600", -0.0, None])
    return run


def _random_change(rng: random.Random) -> typing.Callable[[dict[str, Any], set[str]], None]:
    """One change of a parsed file, as a writer makes it; ``trusted``: the stages whose
    total this writer computed (a recorder's ``TimingsCache.trusted_totals``), or an
    empty set for a writer that recomputes every total."""
    name = rng.choice(["a_train", "a_train_auto_resume", "eval", "nashconv"])
    run = _random_record(rng)
    kind = rng.choice(["sequential"] * 5 + ["upsert", "insert", "prefix", "expected", "other"])
    completed = rng.randrange(4)

    def change(data: dict[str, Any], trusted: set[str]) -> None:
        fresh = json.loads(json.dumps(run))  # each writer gets its own run object
        if kind in ("sequential", "upsert"):
            rules.apply_run(data, name, fresh, kind, trusted_total=name in trusted)
            trusted.add(name)
        elif kind == "insert":
            rules.insert_run(data, name, fresh)
        elif kind == "prefix":
            rules.keep_completed_prefix(data, completed)
        elif kind == "expected" and rules.is_stage(data.get(name)):
            data[name]["expected_runs"] = 3
        elif kind == "other":
            data["note"] = {"by": "hand", "at": [1, 2]}

    return change


def _plain_text(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False)


def test_cached_runs_text_is_the_plain_encoding_after_any_changes() -> None:
    for seed in range(40):
        rng = random.Random(seed)
        data: dict[str, Any] = {}
        cache = encode.TimingsCache()
        for _ in range(40):
            _random_change(rng)(data, cache.trusted_totals)
            cached = encode.timings_bytes(data, cache)
            assert cached == encode.timings_bytes(data)
            assert _plain_text(json.loads(cached)) == _plain_text(data)
            runs = sum(len(v["runs"]) for v in data.values() if rules.is_stage(v))
            assert cached.count(b"\n      {") == runs  # one run per line


@pytest.mark.parametrize("value", [None, "é\u2028", "", 0, -0.0, 1e308, 10**200, True, math.nan])
def test_scalar_values_are_encoded_as_json_dumps_would(value: Any) -> None:
    assert encode._indented(value, 2) == json.dumps(value, indent=2, ensure_ascii=False)
    assert encode.timings_bytes({"k": value}) == (
        json.dumps({"k": value}, indent=2, ensure_ascii=False) + "\n"
    ).encode()


def _rewrite_same_size(path: Path, rng: random.Random) -> None:
    """Another writer's change that keeps the file's length: one digit of a seconds."""
    raw = path.read_bytes()
    at = raw.find(b'"seconds": ')
    if at < 0:
        return
    digit = at + len(b'"seconds": ')
    changed = raw[:digit] + str((raw[digit] - 48 + 1) % 10).encode() + raw[digit + 1 :]
    if rng.random() < 0.5:
        tmp = path.with_suffix(".other")
        tmp.write_bytes(changed)
        os.replace(tmp, path)  # a new file, as every writer publishes
    else:
        with open(path, "r+b") as f:  # the same file overwritten in place
            f.write(changed)


def test_a_writer_with_a_cache_writes_what_a_writer_without_one_writes(tmp_path: Path) -> None:
    for seed in range(12):
        rng = random.Random(100 + seed)
        cached_path, plain_path = tmp_path / f"c{seed}.json", tmp_path / f"p{seed}.json"
        cache = encode.TimingsCache()
        for _ in range(30):
            change = _random_change(rng)
            if rng.random() < 0.15:  # another writer between two saves
                for path in (cached_path, plain_path):
                    if path.exists():
                        _rewrite_same_size(path, random.Random(seed))

            def cached(data: dict[str, Any], change: Any = change, cache: Any = cache) -> bytes:
                change(data, cache.trusted_totals)  # as a recorder does: its totals trusted
                return encode.timings_bytes(data, cache)

            def plain(data: dict[str, Any], change: Any = change) -> bytes:
                change(data, set())
                return encode.timings_bytes(data)

            sidecar.update_file(str(cached_path), parse.parse_timings, cached, 5.0, cache)
            sidecar.update_file(str(plain_path), parse.parse_timings, plain, 5.0)
            assert cached_path.read_bytes() == plain_path.read_bytes()


def test_files_of_any_shape_are_encoded_as_a_plain_encoding_of_their_data() -> None:
    # Empty runs, stages beside other data, keys that look like a stage's: the general
    # pieces of the encoder against json.dumps, and the same bytes with a cache or without.
    rng = random.Random(14)
    values: list[Any] = [None, 1, -0.0, "runs", [], [{"seconds": 1}], {}, {"runs": []},
                         {"runs": [], "total_seconds": 0, "expected_runs": 2},
                         {"total_seconds": 1.0, "runs": [{"seconds": 1.0, "x": {"runs": []}}]},
                         {"x": {"runs": [{"seconds": 2}]}},
                         {"runs": [{"seconds": 1e-300}], "é": "\u2028"}]
    cache = encode.TimingsCache()
    for _ in range(2000):
        data = {rng.choice(["a", "b", "é", "runs"]): rng.choice(values) for _ in range(3)}
        data = json.loads(json.dumps(data))  # no value shared between stages
        cached = encode.timings_bytes(data, cache)
        assert cached == encode.timings_bytes(data)
        assert _plain_text(json.loads(cached)) == _plain_text(data)


# -- validate: the scalar fast path and the nesting walk -------------------------------------


def _general_copy(value: Any) -> Any:
    """A metadata value's copy by the general path: JSON out and in."""
    text = json.dumps(value, allow_nan=False, ensure_ascii=False)
    text.encode("utf-8")
    return parse.decode_unique(text)


@pytest.mark.parametrize(
    "value",
    [0, -0.0, 0.0, 1, True, False, None, "", "é\x00", "\ud800", "a\udfff", 1e308, FLOAT_MAX,
     -FLOAT_MAX, math.inf, -math.inf, math.nan, 5e-324, 10**300 - 1, 10**300, -(10**300) + 1,
     -(10**300), 10**4299, 10**4300, -(10**4300)],
    ids=lambda value: repr(value)[:24] if not isinstance(value, int) or abs(value) < 10**30
    else "int of 300 digits" if abs(value) < 10**4000 else "int of 4300 digits",
)
def test_a_scalar_metadata_copy_is_the_general_paths(value: Any) -> None:
    try:
        expected = _general_copy(value)
    except (TypeError, ValueError):
        with pytest.raises(InvalidRecordError):
            validate._copy_value("k", value)
        return
    got = validate._copy_value("k", value)
    assert (type(got), repr(got)) == (type(expected), repr(expected))


def _reference_depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_reference_depth, value.values()), default=0)
    if isinstance(value, (list, tuple)):
        return 1 + max(map(_reference_depth, value), default=0)
    return 0


def _nested(rng: random.Random, depth: int) -> Any:
    if depth == 0:
        return rng.choice([1, "s", None, [], {}, ()])
    inner = [_nested(rng, rng.randrange(depth)) for _ in range(rng.randrange(3))]
    inner.insert(rng.randrange(len(inner) + 1), _nested(rng, depth - 1))
    return rng.choice([list, tuple, lambda xs: {str(i): x for i, x in enumerate(xs)}])(inner)


def test_nesting_walk_of_metadata_is_the_recursive_depth() -> None:
    rng = random.Random(12)
    for _ in range(3000):
        value = _nested(rng, rng.randrange(8))
        depth = _reference_depth(value)
        for limit in range(depth + 2):
            assert validate._deeper_than(value, limit) is (depth > limit), (value, limit)
