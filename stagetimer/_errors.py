"""The exceptions and the warning category of stagetimer.

Every error stagetimer raises on purpose derives from ``StageTimerError`` and from
the builtin a caller would catch without knowing stagetimer (in brackets)::

    StageTimerError                          catch this for any of them
    ├── InvalidRecordError      [ValueError]    a stage's name, seconds, run_idx, ...: .value
    ├── InvalidSettingError     [ValueError]    a setting (Recorder, STAGETIMER_*): .value
    ├── InvalidTypeError        [TypeError]     an argument of the wrong type: .value
    ├── TemplateError           [ValueError]    a migrate --from/--to template
    ├── SidecarCorruptError     [ValueError]    a file that does not parse: .path, .problem
    ├── SchemaVersionError      [ValueError]    a sidecar newer than this version: .path,
    │                                           .problem, .found, .supported
    ├── NoActiveRecorderError   [RuntimeError]  no recorder given, active or in STAGETIMER_DIR
    ├── LockTimeoutError        [TimeoutError]  a sidecar's lock not acquired: .path, .timeout,
    │                                           .reason
    ├── ExportError             [RuntimeError]  an export's destination refused or unreachable
    ├── UnsupportedVersionError [RuntimeError]  a framework outside a callback's range
    └── MissingExtraError       [ImportError]   an optional package missing: to_frame
        └── PlotUnavailableError                without pandas, a picture without matplotlib

    StageTimerWarning           [UserWarning]   a record kept pending (not an error)

Each one survives ``pickle`` with its message and attributes, so an error raised in a
worker of a ``multiprocessing`` pool or a ``ProcessPoolExecutor`` reaches the parent
as itself (``StageTimerError.__reduce__``).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ExportError",
    "InvalidRecordError",
    "InvalidSettingError",
    "InvalidTypeError",
    "LockTimeoutError",
    "MissingExtraError",
    "NoActiveRecorderError",
    "PlotUnavailableError",
    "SchemaVersionError",
    "SidecarCorruptError",
    "StageTimerError",
    "StageTimerWarning",
    "TemplateError",
    "UnsupportedVersionError",
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
    return _shortened(value, limit)


def _shortened(value: object, limit: int) -> str:
    """``short_repr`` of a value whose ``repr`` is too long or fails: ``reprlib``'s,
    cut to ``limit`` characters."""
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


def _rebuilt(cls: type[StageTimerError], args: tuple[Any, ...], state: dict[str, Any]
             ) -> StageTimerError:
    """An error unpickled without calling its ``__init__`` (see ``__reduce__``)."""
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


def _travels(value: object) -> object:
    """``value`` when it pickles, else its short repr: an attribute holding a lock or a
    lambda must not stop the error itself from reaching a pool's parent."""
    import pickle  # only when an error is pickled: not on ``import stagetimer``

    try:
        pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
    except Exception:  # whatever a foreign __reduce__ raises
        return short_repr(value)
    return value


class StageTimerError(Exception):
    """Base class of every error stagetimer raises on purpose."""

    def __reduce__(self) -> tuple[Any, ...]:
        # The default (``cls(*self.args)``, then the attributes) calls ``__init__`` with
        # the message alone, which fails for every subclass whose ``__init__`` takes
        # other arguments; in a pool's parent that failure killed the result thread, so
        # ``Pool.map`` waited forever and ``ProcessPoolExecutor`` reported
        # ``BrokenProcessPool``. Rebuild from the message and the attributes instead.
        state = {name: _travels(value) for name, value in self.__dict__.items()}
        return (_rebuilt, (type(self), self.args, state))


class InvalidRecordError(StageTimerError, ValueError):
    """An argument of a record is not valid; nothing was written.

    ``.value`` holds the offending value.
    """

    def __init__(self, message: str, value: Any = None) -> None:
        super().__init__(message)
        self.value = value


class InvalidSettingError(StageTimerError, ValueError):
    """A setting is not valid (a ``Recorder`` parameter, a ``STAGETIMER_*`` variable,
    ``recover``'s ``lock_timeout``, ``compare``'s threshold); nothing was created or
    written. Every setting is read by ``stagetimer._settings`` (docs/settings.md).

    ``.value`` holds the offending value.
    """

    def __init__(self, message: str, value: Any = None) -> None:
        super().__init__(message)
        self.value = value


class InvalidTypeError(StageTimerError, TypeError):
    """An argument is not of a type the function accepts; nothing was done.

    ``.value`` holds the offending value.
    """

    def __init__(self, message: str, value: Any = None) -> None:
        super().__init__(message)
        self.value = value


class TemplateError(StageTimerError, ValueError):
    """A ``migrate`` ``--from`` / ``--to`` template is not valid; the message says why."""


class SidecarCorruptError(StageTimerError, ValueError):
    """A sidecar on disk does not parse or does not have the expected shape.

    It is never overwritten; ``.path`` names it. ``.cut_short``: the text ends too soon
    (a character or the JSON left unfinished), what a read cut short by another client's
    stale file size gives, which reading again may mend.
    """

    def __init__(self, path: str, problem: str, cut_short: bool = False) -> None:
        super().__init__(
            f"{path}: {problem}; it is left untouched: move it aside or repair it"
        )
        self.path = path
        self.problem = problem
        self.cut_short = cut_short


class SchemaVersionError(StageTimerError, ValueError):
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


class NoActiveRecorderError(StageTimerError, RuntimeError):
    """No recorder was given, none is active and ``STAGETIMER_DIR`` is not set."""

    def __init__(self) -> None:
        super().__init__(
            "no recorder: pass recorder=Recorder(dir), run inside 'with Recorder(dir):', "
            "or set the STAGETIMER_DIR environment variable to the artifact directory "
            "(STAGETIMER_DISABLE=1 turns recording off)"
        )


class LockTimeoutError(StageTimerError, TimeoutError):
    """The advisory lock of a sidecar was not acquired within ``lock_timeout`` seconds."""

    def __init__(
        self, path: str, timeout: float, reason: str | None = None, *, blocked: bool = False
    ) -> None:
        if blocked and reason is not None:
            # Nothing that waiting can change (a stale claim this user may not remove, a
            # directory at a claim's name): said at once, with what to do.
            super().__init__(f"lock not acquired: {reason}")
        else:
            reason = reason or "another process holds it"
            super().__init__(
                f"{path}: lock not acquired within {timeout} s; {reason} "
                "(raise lock_timeout, or check for a hung writer)"
            )
        self.path = path
        self.timeout = timeout
        #: who holds it, or why it cannot be taken, when known
        self.reason = reason


class ExportError(StageTimerError, RuntimeError):
    """A destination refused the export or could not be reached; the message says which
    and why. What was written before stays, and the next export completes it."""


class UnsupportedVersionError(StageTimerError, RuntimeError):
    """The installed framework is outside the range a callback supports; the message
    names the range."""


class MissingExtraError(StageTimerError, ImportError):
    """An optional package (an extra: ``pandas``, ``plot``) cannot be imported; the
    message says how to install it.

    An ``ImportError``: what is missing is an optional package, and
    ``except ImportError`` is how callers test for one.
    """


class PlotUnavailableError(MissingExtraError):
    """matplotlib cannot be imported (the ``plot`` extra)."""


class StageTimerWarning(UserWarning):
    """A stage finished but its record could not be saved yet (it is kept pending)."""
