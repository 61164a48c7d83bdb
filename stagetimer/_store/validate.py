"""Checks of the arguments of a record (docs/format.md), before anything runs or is written.

Every refusal is an ``InvalidRecordError`` naming the value (its repr cut short) and
what is expected; never a raw ``OverflowError`` or ``RecursionError``.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping
from typing import Any

from stagetimer._errors import InvalidRecordError, short_repr
from stagetimer._format import MAX_DEPTH, MAX_RUN_IDX, RESERVED_KEYS, RUN_FIELDS
from stagetimer._store.parse import DuplicateKey, decode_unique, is_utf8
from stagetimer._store.rules import is_valid_seconds
from stagetimer._store.shape import run_problem

__all__ = [
    "MAX_DEPTH",
    "check_label",
    "check_name",
    "check_record",
    "check_run",
    "check_run_idx",
    "check_seconds",
    "copy_metadata",
]

_FLOAT_MAX = sys.float_info.max
# C0 and C1 control characters and DEL.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def check_name(name: object) -> str:
    """A stage name is a non-empty string without control characters."""
    if not isinstance(name, str) or not name or _CONTROL.search(name) or not is_utf8(name):
        raise InvalidRecordError(
            f"stage name {short_repr(name)} is not valid: expected a non-empty string without "
            "control characters or lone surrogates",
            name,
        )
    return name


def check_seconds(seconds: object) -> float:
    """A duration is an int or float from 0 to the largest float (a bool is not a number).

    NaN, infinities and ints beyond a float (``10**400``) are refused.
    """
    if not is_valid_seconds(seconds):
        raise InvalidRecordError(
            f"seconds {short_repr(seconds)} is not valid: expected a finite number >= 0 "
            "that fits a float",
            seconds,
        )
    return float(seconds)


def check_run_idx(run_idx: object) -> int | None:
    """A run index is None or an int from 0 to 2**63 - 1 (a bool is not an index)."""
    if run_idx is None:
        return None
    if (
        isinstance(run_idx, bool)
        or not isinstance(run_idx, int)
        or not 0 <= run_idx <= MAX_RUN_IDX
    ):
        raise InvalidRecordError(
            f"run_idx {short_repr(run_idx)} is not valid: expected None or an int from 0 "
            "to 2**63 - 1",
            run_idx,
        )
    return run_idx


def check_label(label: object) -> str | None:
    """A label is None or a string."""
    if label is not None and (not isinstance(label, str) or not is_utf8(label)):
        raise InvalidRecordError(
            f"label {short_repr(label)} is not valid: expected a string without lone "
            "surrogates",
            label,
        )
    return label


_SCALARS = (str, int, float, bool, type(None))
_BIG_INT = 10**300


def _deeper_than(value: object, limit: int) -> bool:
    """Whether ``value`` nests dicts, lists and tuples deeper than ``limit`` levels.

    ``[]`` has one level, ``{"a": [1]}`` two. Iterative, so that no depth of nesting (or
    a container holding itself) can raise ``RecursionError``; the walk stops past
    ``limit`` levels.
    """
    level: list[object] = [value]
    for _ in range(limit + 1):
        below: list[object] = []
        found = False
        for item in level:
            if isinstance(item, dict):
                found = True
                below.extend(item.values())
            elif isinstance(item, (list, tuple)):
                found = True
                below.extend(item)
        if not found:
            return False
        level = below
    return True


def _copy_value(key: str, value: Any) -> Any:
    """A JSON-ready deep copy of one metadata value, or ``InvalidRecordError``."""
    if type(value) in _SCALARS:
        _check_scalar(key, value)
        if type(value) is not int or -_BIG_INT < value < _BIG_INT:
            return value  # immutable; a huge int goes through json's digit limit below
    if _deeper_than(value, MAX_DEPTH):
        raise InvalidRecordError(
            f"metadata {key}={short_repr(value)} is nested deeper than {MAX_DEPTH} levels "
            "(or holds itself)",
            value,
        )
    return _json_copy(key, value)


def _check_scalar(key: str, value: Any) -> None:
    """Refuse a string with a lone surrogate and a float JSON has no form for."""
    if type(value) is str and not is_utf8(value):
        raise InvalidRecordError(
            f"metadata {key}={short_repr(value)} has a lone surrogate (no UTF-8 form)", value
        )
    if type(value) is float and not -_FLOAT_MAX <= value <= _FLOAT_MAX:
        raise InvalidRecordError(
            f"metadata {key}={short_repr(value)} is not JSON-serialisable (NaN and "
            "infinities are not JSON)",
            value,
        )


def _json_copy(key: str, value: Any) -> Any:
    """``value`` through JSON and back: the copy as the file will hold it."""
    try:
        text = json.dumps(value, allow_nan=False, ensure_ascii=False)
        text.encode("utf-8")
        # Non-string keys become strings: {1: "a", "1": "b"} would write one key twice.
        return decode_unique(text)
    except DuplicateKey as exc:
        raise InvalidRecordError(
            f"metadata {key}={short_repr(value)} has two keys that are both "
            f"{short_repr(exc.key)} in JSON",
            value,
        ) from None
    except (TypeError, ValueError) as exc:  # UnicodeEncodeError is a ValueError
        raise InvalidRecordError(
            f"metadata {key}={short_repr(value)} is not JSON-serialisable "
            f"({str(exc)[:120]})",
            value,
        ) from None


def _check_key(key: object) -> str:
    if not isinstance(key, str) or not is_utf8(key):
        raise InvalidRecordError(
            f"metadata key {short_repr(key)} is not valid: expected a string without lone "
            "surrogates",
            key,
        )
    if key in RESERVED_KEYS:
        raise InvalidRecordError(
            f"metadata key {key!r} is reserved; reserved keys are {sorted(RESERVED_KEYS)}",
            key,
        )
    return key


def copy_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """Check ``metadata`` and return a deep, JSON-ready copy of it (what will be written).

    Tuples become lists and non-string keys of nested dicts strings, as in the file;
    what the caller changes in ``metadata`` afterwards is not in the copy. Raises
    ``InvalidRecordError`` when a value is not JSON-serialisable (NaN, an infinity), is
    nested deeper than ``MAX_DEPTH`` levels, has keys that collide in JSON, or when a
    key is reserved.
    """
    return {_check_key(key): _copy_value(key, value) for key, value in metadata.items()}


def check_record(name: object, run_idx: object, label: object) -> None:
    """The checks of a stage's name, run index and label (its metadata is checked as
    ``copy_metadata`` copies it; its duration by ``check_seconds``)."""
    check_name(name)
    check_run_idx(run_idx)
    check_label(label)


def check_run(name: object, run: object) -> None:
    """A whole run, as it would be stored under stage ``name``: refused
    (``InvalidRecordError``) unless a recorder could have written it.

    The same checks as a record's arguments (``check_record``, ``check_seconds``) and
    the same field types as a sidecar's (``shape.py``), for a run that reaches the file
    another way than through a recorder (a rescue file).
    """
    check_name(name)
    problem = run_problem(run)
    if problem is not None:
        raise InvalidRecordError(f"run {problem}", run)
    assert isinstance(run, dict)
    check_seconds(run["seconds"])
    check_run_idx(run.get("run_idx"))
    check_label(run.get("label"))
    _check_other_fields(run)
    metadata = {key: value for key, value in run.items() if key not in RUN_FIELDS}
    if metadata:
        copy_metadata(metadata)


def _check_other_fields(run: dict[str, Any]) -> None:
    """The run's fields other than those with a check of their own, as metadata is
    checked: strings and objects must be JSON with a UTF-8 form."""
    for key in RUN_FIELDS:
        value = run.get(key)
        if key not in ("seconds", "run_idx", "label") and value is not None:
            copy_metadata({"field " + key: value})
