"""The checks ``Recorder.record`` adds to those of ``record_timing`` (``_store/validate.py``).

``record_timing`` takes metadata as keyword arguments and no start time;
``Recorder.record`` takes both as values, checked here with the same kind of message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stagetimer._errors import InvalidRecordError, short_repr

__all__ = ["check_metadata_mapping", "check_started_at"]

# time.gmtime's range on every platform: a start time from 1970 to the year 9999.
_LATEST_START = 253402300799.0


def check_metadata_mapping(metadata: object) -> Mapping[str, Any]:
    """``Recorder.record(metadata=...)`` is None or a mapping (``record_timing`` takes
    ``**metadata``, always a dict)."""
    if not isinstance(metadata, Mapping):
        raise InvalidRecordError(
            f"metadata {short_repr(metadata)} is not valid: expected None or a mapping of "
            "str keys to JSON values",
            metadata,
        )
    return metadata


def check_started_at(started_at: object) -> None:
    """A start time is None or a Unix time ``time.gmtime`` can convert on every platform."""
    if started_at is not None and (
        isinstance(started_at, bool)
        or not isinstance(started_at, (int, float))
        or not 0 <= started_at <= _LATEST_START
    ):
        raise InvalidRecordError(
            f"started_at {short_repr(started_at)} is not valid: expected None or a Unix time "
            "(time.time()) from 0 to the end of the year 9999",
            started_at,
        )
