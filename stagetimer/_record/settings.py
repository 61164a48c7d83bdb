"""The checks of ``Recorder``'s settings: a clear ``InvalidSettingError`` (a ``ValueError``)
at construction.

Each message shows the value with ``short_repr``: ``repr`` of an int past
``sys.get_int_max_str_digits`` raises a ``ValueError`` of its own.
"""

from __future__ import annotations

import os
from typing import Any

from stagetimer._errors import InvalidSettingError, short_repr
from stagetimer._format import MAX_RUN_IDX, POLICIES
from stagetimer._store.lock import check_lock_timeout

__all__ = [
    "as_path",
    "check_completed_runs",
    "check_directory",
    "check_expected_runs",
    "check_flag",
    "check_heartbeat",
    "check_policy",
    "check_timeout",
]


def as_path(directory: str | os.PathLike[str]) -> str:
    if isinstance(directory, bytes) or not isinstance(directory, (str, os.PathLike)):
        raise InvalidSettingError(
            f"directory {short_repr(directory)} is not valid: expected a str or os.PathLike path "
            "(bytes paths are not supported)",
            directory,
        )
    path = os.fspath(directory)
    if not isinstance(path, str):
        raise InvalidSettingError(
            f"directory {short_repr(directory)} is not valid: its path is {short_repr(path)}, "
            "not a str",
            directory,
        )
    if not path or "\0" in path:
        raise InvalidSettingError(
            f"directory {short_repr(directory)} is not valid: expected a non-empty path",
            directory,
        )
    return path


def check_directory(instance: object, attribute: Any, value: str) -> None:
    if os.path.lexists(value) and not os.path.isdir(value):
        raise InvalidSettingError(
            f"directory {value!r} is not valid: it exists and is not a directory "
            "(pass the artifact directory, not a file in it)",
            value,
        )


def check_completed_runs(instance: object, attribute: Any, value: object) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise InvalidSettingError(
            f"completed_runs {short_repr(value)} is not valid: expected an int >= 0", value
        )


def check_expected_runs(instance: object, attribute: Any, value: object) -> None:
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_RUN_IDX
    ):
        raise InvalidSettingError(
            f"expected_runs {short_repr(value)} is not valid: expected None or an int from 1 "
            "to 2**63 - 1",
            value,
        )


def check_policy(instance: object, attribute: Any, value: object) -> None:
    if value not in POLICIES:
        raise InvalidSettingError(
            f"policy {short_repr(value)} is not valid: expected one of {POLICIES}", value
        )


def check_timeout(instance: object, attribute: Any, value: object) -> None:
    """``lock_timeout``: the lock's own rule (``lock.check_lock_timeout``), which
    ``recover`` follows too."""
    check_lock_timeout(value)


def check_flag(instance: object, attribute: Any, value: object) -> None:
    """A yes/no setting (``software``) is a bool: ``"no"`` or ``0`` would read as meant."""
    if not isinstance(value, bool):
        raise InvalidSettingError(
            f"{attribute.name} {short_repr(value)} is not valid: expected True or False", value
        )


def check_heartbeat(instance: object, attribute: Any, value: object) -> None:
    """``heartbeat``: None or the seconds between beats, a finite number > 0."""
    from stagetimer._record.heartbeat import check_interval

    check_interval(value)
