"""Times no writer could have recorded, left out of every export and named on standard
error: a duration that is not a number >= 0 that fits a float (``1e308`` stays, but ends
too late), a start before 1970 (year 1), or an end after the moment of the export (year
9999, ``1e308`` seconds). A day of slack allows for the clocks of different nodes.

A destination cannot hold them either: MLflow refuses a negative timestamp, OTLP's times
are unsigned 64-bit nanoseconds (1970 to 2554), and a float of ``10**400`` overflows.
"""

from __future__ import annotations

import math
import time

from stagetimer._errors import short_repr

__all__ = ["implausible"]

#: Clocks of different nodes disagree; a recorded end this far after now is still kept.
SLACK = 86400.0


def implausible(
    started: float | None, seconds: object, now: float | None = None
) -> str | None:
    """Why a run or attempt that started at ``started`` (POSIX seconds, None when not
    recorded) and took ``seconds`` (None when not known) cannot be exported; None when
    it can."""
    latest = (time.time() if now is None else now) + SLACK
    duration, problem = _duration(seconds)
    if problem is not None:
        return problem
    if started is None:
        return _longer_than_epoch(duration, seconds, latest)
    if not math.isfinite(started) or started < 0:
        return f"it started before 1970 ({_moment(started)})"
    if started + duration > latest:
        return (
            f"it ends after the time of the export ({_moment(started)} "
            f"+ {short_repr(seconds)} s)"
        )
    return None


def _longer_than_epoch(duration: float, seconds: object, latest: float) -> str | None:
    """Why a duration with no start cannot be exported: it is longer than the time since
    1970 (up to ``latest``); None when it can."""
    if duration > latest:
        return f"seconds {short_repr(seconds)} is longer than the time since 1970"
    return None


def _duration(seconds: object) -> tuple[float, str | None]:
    """``seconds`` as a float (0 when not known), and why it is not a duration >= 0."""
    if seconds is None:
        return 0.0, None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        return 0.0, f"seconds {short_repr(seconds)} is not a number"
    try:
        duration = float(seconds)
    except OverflowError:
        return 0.0, f"seconds {short_repr(seconds)} does not fit a float"
    if not math.isfinite(duration) or duration < 0:
        return duration, f"seconds {short_repr(seconds)} is not a duration >= 0"
    return duration, None


def _moment(posix: float) -> str:
    import datetime

    try:
        moment = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) + (
            datetime.timedelta(seconds=posix)
        )
    except (OverflowError, ValueError):
        return f"{posix:g} s from 1970"
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")
