"""Checks of the arguments of a record (SPEC section 2), before anything runs or is written."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from stagetimer._errors import InvalidRecordError

__all__ = [
    "RESERVED_KEYS",
    "check_label",
    "check_metadata",
    "check_name",
    "check_record",
    "check_run_idx",
    "check_seconds",
]

#: Keys of a run (and of a stage) that user metadata may not reuse.
RESERVED_KEYS = frozenset(
    {"seconds", "hardware_id", "run_idx", "label", "started_at", "total_seconds", "runs"}
)
# C0 and C1 control characters and DEL.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _is_utf8(text: str) -> bool:
    # Lone surrogates (e.g. from os.fsdecode of undecodable bytes) have no UTF-8 form.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_name(name: object) -> str:
    """A stage name is a non-empty string without control characters."""
    if not isinstance(name, str) or not name or _CONTROL.search(name) or not _is_utf8(name):
        raise InvalidRecordError(
            f"stage name {name!r} is not valid: expected a non-empty string without "
            "control characters or lone surrogates",
            name,
        )
    return name


def check_seconds(seconds: object) -> float:
    """A duration is a finite int or float >= 0 (a bool is not a number)."""
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, (int, float))
        or not math.isfinite(seconds)
        or seconds < 0
    ):
        raise InvalidRecordError(
            f"seconds {seconds!r} is not valid: expected a finite number >= 0", seconds
        )
    return float(seconds)


def check_run_idx(run_idx: object) -> int | None:
    """A run index is None or an int >= 0 (a bool is not an index)."""
    if run_idx is None:
        return None
    if isinstance(run_idx, bool) or not isinstance(run_idx, int) or run_idx < 0:
        raise InvalidRecordError(
            f"run_idx {run_idx!r} is not valid: expected None or an int >= 0", run_idx
        )
    return run_idx


def check_label(label: object) -> str | None:
    """A label is None or a string."""
    if label is not None and (not isinstance(label, str) or not _is_utf8(label)):
        raise InvalidRecordError(
            f"label {label!r} is not valid: expected a string without lone surrogates", label
        )
    return label


def check_metadata(metadata: Mapping[str, Any]) -> None:
    """Metadata is JSON-serialisable (no NaN) and reuses no reserved key."""
    for key, value in metadata.items():
        if not _is_utf8(key):
            raise InvalidRecordError(f"metadata key {key!r} has a lone surrogate", key)
        if key in RESERVED_KEYS:
            raise InvalidRecordError(
                f"metadata key {key!r} is reserved; reserved keys are {sorted(RESERVED_KEYS)}",
                key,
            )
        try:
            json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8")
        except (TypeError, ValueError) as exc:  # UnicodeEncodeError is a ValueError
            raise InvalidRecordError(
                f"metadata {key}={value!r} is not JSON-serialisable ({exc})", value
            ) from None


def check_record(
    name: object, run_idx: object, label: object, metadata: Mapping[str, Any]
) -> None:
    """All checks of a stage's arguments but its duration."""
    check_name(name)
    check_run_idx(run_idx)
    check_label(label)
    if metadata:
        check_metadata(metadata)
