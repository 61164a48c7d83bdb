"""One definition of a run and of a marker: the classes of ``stagetimer._format`` are the
schema, and the field tables, the shape checks, the writers, the report's JSON and the
docs' tables all say the same keys in the same order."""

from __future__ import annotations

import json
import re
from pathlib import Path

import attrs
import pytest

from stagetimer._format import (
    JSON_TYPES,
    MARKER_FIELDS,
    RESERVED_KEYS,
    RUN_FIELDS,
    MarkerContent,
    RunTiming,
    key_of,
    stored_fields,
)
from stagetimer._record.pending import Finished, Placement, build_run
from stagetimer._render import report_json
from stagetimer._store import marker_read, markers, shape

DOCS = Path(__file__).resolve().parent.parent / "docs" / "format.md"

#: A value of each JSON type, and one of another type.
_GOOD = {"number": 1.5, "integer": 3, "string": "x", "object": {"a": 1}, "any": [1]}
_BAD = {"number": "1.5", "integer": 1.5, "string": 7, "object": [1], "any": None}


def _class_keys(cls: type) -> list[str]:
    return [f.name for f in attrs.fields(cls) if key_of(f) is not None]


def _doc_table_keys(heading: str, tables: int = 1) -> list[str]:
    """The backquoted keys of the first column of the ``tables`` tables after ``heading``."""
    text = DOCS.read_text(encoding="utf-8")
    rest = text[text.index(heading):]
    keys: list[str] = []
    blocks = re.findall(r"\| key \| type \| meaning \|\n\|---\|---\|---\|\n((?:\|.*\n)+)", rest)
    for block in blocks[:tables]:
        for line in block.splitlines():
            keys += re.findall(r"`([a-z_]+)`", line.split("|")[1])
    return keys


def test_the_field_tables_are_the_classes_fields() -> None:
    assert list(RUN_FIELDS) == _class_keys(RunTiming)
    assert list(MARKER_FIELDS) == _class_keys(MarkerContent)
    assert RESERVED_KEYS == {*RUN_FIELDS, "total_seconds", "runs"}
    for cls in (RunTiming, MarkerContent):
        for _, key in stored_fields(cls):
            assert key.json in JSON_TYPES and key.meaning


def test_the_shape_check_accepts_the_classes_fields_and_their_types() -> None:
    assert [key for key, _, _ in shape._RUN_TYPES] == list(RUN_FIELDS)
    whole = {key: _GOOD[spec.json] for key, spec in stored_fields(RunTiming)}
    whole["resources"] = {"cpu_seconds": 1.0}
    assert shape.run_problem(whole) is None
    for key, spec in stored_fields(RunTiming):
        if spec.json == "any":
            continue
        problem = shape.run_problem({**whole, key: _BAD[spec.json]})
        assert problem is not None and repr(key) in problem
        absent = {k: v for k, v in whole.items() if k != key}
        assert (shape.run_problem(absent) is None) is spec.optional


def test_the_marker_check_is_the_classes_types() -> None:
    strict = [key for key, spec in stored_fields(MarkerContent) if spec.strict]
    assert [key for key, _ in marker_read._MARKER_TYPES] == strict
    assert set(strict) <= set(MARKER_FIELDS)


def test_the_run_writer_writes_the_classes_fields_in_order() -> None:
    finished = Finished("x_train", 1.5, 3, "a", "2026-11-29T22:28:02.123Z", {"reward": 1},
                        {"cpu_seconds": 1.0}, "a" * 32, {"stage": "s", "attempt_id": "b" * 32})
    run = build_run(finished, "hw-1", {"job_id": "1"}, Placement("sw-1", (0, 2), "0-3"))
    assert list(run) == [*RUN_FIELDS, "reward"]
    # What is written is read back into the class field by field.
    assert attrs.asdict(RunTiming(**{k: run[k] for k in RUN_FIELDS}))["cpus"] == "0-3"


def test_the_marker_writer_writes_the_classes_fields_in_order() -> None:
    content = {key: _GOOD[spec.json] for key, spec in reversed(stored_fields(MarkerContent))}
    written = json.loads(markers.encode(content))
    assert list(written) == list(MARKER_FIELDS)


def test_the_docs_tables_are_the_classes_fields() -> None:
    assert _doc_table_keys("### Run") == list(RUN_FIELDS)
    assert _doc_table_keys("## Started markers", tables=2) == list(MARKER_FIELDS)
    text = " ".join(DOCS.read_text(encoding="utf-8").split())
    reserved = re.search(r"Metadata may not reuse a reserved key: (.*?)\. It must", text)
    assert reserved is not None
    assert re.findall(r"`([a-z_]+)`", reserved.group(1)) == [*RUN_FIELDS, "total_seconds", "runs"]


def test_the_reports_run_details_are_fields_of_a_run_and_its_docstring_says_them() -> None:
    assert set(report_json.RUN_DETAILS) <= set(RUN_FIELDS)
    details = report_json._run_dict(RunTiming(seconds=1.0))
    assert list(details) == [*report_json.RUN_DETAILS, "job_id", "metadata"]
    doc = " ".join((report_json.report_dict.__doc__ or "").split())
    said = re.search(r"Each entry of ``run_details`` holds .*?\((.*?)\), then (.*?)\.", doc)
    assert said is not None
    assert [k.strip() for k in said.group(1).split(",")] == list(report_json.RUN_DETAILS)
    assert said.group(2).split(" and ") == ["job_id", "metadata"]


@pytest.mark.parametrize("cls", [RunTiming, MarkerContent])
def test_every_stored_key_says_what_it_holds(cls: type) -> None:
    for field in attrs.fields(cls):
        key = key_of(field)
        assert key is None or (key.meaning and key.words.startswith(("a ", "an ", "any ")))


def test_a_recorders_markers_hold_the_classes_fields(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from stagetimer._record import attempt

    started = attempt.prepare(str(tmp_path), "x_train", 3, None, 1.7e9, None)
    entry = list(MARKER_FIELDS[: MARKER_FIELDS.index("parent") + 1])
    assert sorted(started.marker) == sorted(entry)  # in any order: ``encode`` orders them
    assert list(json.loads(markers.encode(started.marker))) == entry
    written: list[bytes] = []
    monkeypatch.setattr(attempt.markers, "replace", lambda _d, _i, content: written.append(content))
    attempt.fail(started, ValueError, None, 1.0, 1.7e9 + 1)
    assert list(json.loads(written[0])) == list(MARKER_FIELDS)


def test_the_api_docs_name_every_field_of_a_run() -> None:
    text = (DOCS.parent / "api.md").read_text(encoding="utf-8")
    item = re.search(r"^- `RunTiming`: (.*?)\n- ", text, re.S | re.M)
    assert item is not None
    named = re.findall(r"`([a-z_]+)` ?(?:\(|,|\.|$)", item.group(1).replace("\n", " "))
    assert named == [f.name for f in attrs.fields(RunTiming)]
