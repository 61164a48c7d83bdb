"""The checks of ``Recorder``'s settings: a clear ``ValueError`` at construction."""

from __future__ import annotations

import os
from typing import Any

from stagetimer._errors import short_repr
from stagetimer._format import MAX_RUN_IDX, POLICIES

__all__ = [
    "as_path",
    "check_completed_runs",
    "check_directory",
    "check_expected_runs",
    "check_policy",
    "check_timeout",
]


def as_path(directory: str | os.PathLike[str]) -> str:
    if isinstance(directory, bytes) or not isinstance(directory, (str, os.PathLike)):
        raise ValueError(
            f"directory {directory!r} is not valid: expected a str or os.PathLike path "
            "(bytes paths are not supported)"
        )
    path = os.fspath(directory)
    if not isinstance(path, str):
        raise ValueError(f"directory {directory!r} is not valid: its path is {path!r}, not a str")
    if not path or "\0" in path:
        raise ValueError(f"directory {directory!r} is not valid: expected a non-empty path")
    return path


def check_directory(instance: object, attribute: Any, value: str) -> None:
    if os.path.lexists(value) and not os.path.isdir(value):
        raise ValueError(
            f"directory {value!r} is not valid: it exists and is not a directory "
            "(pass the artifact directory, not a file in it)"
        )


def check_completed_runs(instance: object, attribute: Any, value: object) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ValueError(f"completed_runs {value!r} is not valid: expected an int >= 0")


def check_expected_runs(instance: object, attribute: Any, value: object) -> None:
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_RUN_IDX
    ):
        raise ValueError(
            f"expected_runs {short_repr(value)} is not valid: expected None or an int from 1 "
            "to 2**63 - 1"
        )


def check_policy(instance: object, attribute: Any, value: object) -> None:
    if value not in POLICIES:
        raise ValueError(f"policy {value!r} is not valid: expected one of {POLICIES}")


def check_timeout(instance: object, attribute: Any, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ValueError(
            f"lock_timeout {value!r} is not valid: expected a number of seconds >= 0 "
            "(float('inf') waits as long as it takes)"
        )
