"""The exceptions and the warning category of stagetimer."""

from __future__ import annotations

from typing import Any

__all__ = [
    "InvalidRecordError",
    "LockTimeoutError",
    "NoActiveRecorderError",
    "SchemaVersionError",
    "SidecarCorruptError",
    "StageTimerError",
    "StageTimerWarning",
    "short_repr",
]


def short_repr(value: object, limit: int = 80) -> str:
    """``repr(value)`` when it is short, else a shortened form of about ``limit`` characters.

    A value from a caller or a file may be megabytes long, nested a hundred thousand
    levels deep, or an int too long for ``repr`` at all (``sys.get_int_max_str_digits``).
    """
    try:
        shown = repr(value)
    except (ValueError, RecursionError):
        shown = None
    if shown is not None and len(shown) <= limit:
        return shown
    import reprlib  # only on the error path

    class Brief(reprlib.Repr):
        def repr_int(self, x: int, level: int) -> str:
            try:
                return super().repr_int(x, level)
            except ValueError:  # more digits than int -> str converts
                return f"<an integer of {x.bit_length()} bits>"

        def repr_dict(self, x: dict[Any, Any], level: int) -> str:
            # reprlib sorts the keys; keep the caller's order, as repr does
            if not x:
                return "{}"
            if level <= 0:
                return "{...}"
            items = [
                f"{self.repr1(k, level - 1)}: {self.repr1(v, level - 1)}"
                for k, v in list(x.items())[: self.maxdict]
            ]
            return "{" + ", ".join(items) + (", ..." if len(x) > self.maxdict else "") + "}"

    brief = Brief()
    brief.maxlevel = 4
    brief.maxstring = brief.maxother = brief.maxlong = limit
    try:
        shown = brief.repr(value)
    except Exception:  # a repr that fails must not hide the error being raised
        if isinstance(value, int):
            return f"<an integer of {value.bit_length()} bits>"
        return f"<{type(value).__name__} object>"
    return shown if len(shown) <= limit else f"{shown[: limit - 4]} ..."


class StageTimerError(Exception):
    """Base class of every error stagetimer raises."""


class InvalidRecordError(StageTimerError, ValueError):
    """An argument of a record is not valid; nothing was written.

    ``.value`` holds the offending value.
    """

    def __init__(self, message: str, value: Any = None) -> None:
        super().__init__(message)
        self.value = value


class SidecarCorruptError(StageTimerError):
    """A sidecar on disk does not parse or does not have the expected shape.

    It is never overwritten; ``.path`` names it.
    """

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(
            f"{path}: {problem}; it is left untouched: move it aside or repair it"
        )
        self.path = path
        self.problem = problem


class SchemaVersionError(StageTimerError):
    """A hardware sidecar was written by a newer stagetimer; it is never overwritten.

    ``.problem`` says so without advice, for callers that add their own.
    """

    def __init__(self, path: str, found: object, supported: int) -> None:
        problem = (
            f"schema_version {found!r} is newer than {supported}, the newest this "
            "version of stagetimer understands"
        )
        super().__init__(f"{path}: {problem}; upgrade stagetimer to write into this directory")
        self.path = path
        self.problem = problem
        self.found = found
        self.supported = supported


class NoActiveRecorderError(StageTimerError):
    """No recorder was given, none is active and ``STAGETIMER_DIR`` is not set."""

    def __init__(self) -> None:
        super().__init__(
            "no recorder: pass recorder=Recorder(dir), run inside 'with Recorder(dir):', "
            "or set the STAGETIMER_DIR environment variable to the artifact directory "
            "(STAGETIMER_DISABLE=1 turns recording off)"
        )


class LockTimeoutError(StageTimerError, TimeoutError):
    """The advisory lock of a sidecar was not acquired within ``lock_timeout`` seconds."""

    def __init__(self, path: str, timeout: float) -> None:
        super().__init__(
            f"{path}: lock not acquired within {timeout} s; another process holds it "
            "(raise lock_timeout, or check for a hung writer)"
        )
        self.path = path
        self.timeout = timeout


class StageTimerWarning(UserWarning):
    """A stage finished but its record could not be saved yet (it is kept pending)."""
