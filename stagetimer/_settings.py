"""Every setting of stagetimer, read and checked here and nowhere else: the parameters of
``Recorder`` (``lock_timeout`` also ``recover``'s) and the ``STAGETIMER_*`` environment
variables (docs/settings.md has their table).

One rule for a switch, a setting that is on or off:

- given to ``Recorder``, it is ``True`` or ``False``: ``"no"`` or ``0`` would read as
  meant by some and not by others;
- in the environment, on is ``1``, ``true``, ``yes`` or ``on`` and off is ``0``,
  ``false``, ``no`` or ``off``, in any case, with white space around ignored; unset or
  empty is the default.

Anything else, for any setting, is an ``InvalidSettingError`` naming the parameter or the
variable, the value, and what is expected.

The environment is read when asked, one lookup per variable: ``STAGETIMER_DISABLE`` and
``STAGETIMER_DIR`` at each stage (a bad value raises from the stage before its block);
``STAGETIMER_SOFTWARE``, ``STAGETIMER_ATTEMPTS`` and ``STAGETIMER_HEARTBEAT`` when a
recorder is made (``recorder_environment``: a strict recorder raises, any other warns
once and keeps the default); the claim's at each save (a bad value fails the save, whose
record is kept). docs/settings.md, "When a value is refused", says why.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable
from typing import Any, NamedTuple, TypeGuard, TypeVar

from stagetimer._errors import InvalidSettingError, short_repr
from stagetimer._format import HEARTBEAT_SECONDS, MAX_RUN_IDX, POLICIES

__all__ = [
    "ATTEMPTS",
    "CLAIM",
    "CLAIM_STALE_SECONDS",
    "DIR",
    "DISABLE",
    "ENVIRONMENT",
    "HEARTBEAT",
    "SOFTWARE",
    "RecorderEnvironment",
    "as_path",
    "check_completed_runs",
    "check_directory",
    "check_environment",
    "check_expected_runs",
    "check_flag",
    "check_heartbeat",
    "check_interval",
    "check_lock_timeout",
    "check_policy",
    "check_resume",
    "check_timeout",
    "claim",
    "claim_stale_seconds",
    "environment_directory",
    "recorder_environment",
    "recording_disabled",
    "switch",
]

# -- the environment ----------------------------------------------------------------

#: with no recorder given or active, stages record into this directory
DIR = "STAGETIMER_DIR"
#: a switch, default off: nothing is recorded (read at each stage)
DISABLE = "STAGETIMER_DISABLE"
#: a switch, default on: off, no recorder captures the software
SOFTWARE = "STAGETIMER_SOFTWARE"
#: a switch, default on: off, no recorder writes started markers
ATTEMPTS = "STAGETIMER_ATTEMPTS"
#: seconds between heartbeats for recorders without a ``heartbeat`` of their own
HEARTBEAT = "STAGETIMER_HEARTBEAT"
#: where saves take the cross-client claim: ``auto`` or ``always``
CLAIM = "STAGETIMER_CLAIM"
#: seconds without a sign of life after which another host's claim is stale
CLAIM_STALE_SECONDS = "STAGETIMER_CLAIM_STALE_SECONDS"

_ON = frozenset({"1", "true", "yes", "on"})
_OFF = frozenset({"0", "false", "no", "off"})
_SWITCH = "1, true, yes or on (on); 0, false, no or off (off); or empty"
_SWITCH_WORDS = {**dict.fromkeys(_ON, True), **dict.fromkeys(_OFF, False)}
_CLAIMS = ("auto", "always")
_STALE_DEFAULT = 30.0


def switch(variable: str, raw: str | None, default: bool) -> bool:
    """The value ``raw`` of the switch ``variable`` (None: unset), by the one rule above."""
    if raw is None or not raw.strip():
        return default
    value = _SWITCH_WORDS.get(raw.strip().lower())
    if value is not None:
        return value
    raise InvalidSettingError(
        f"{variable}={short_repr(raw)} is not valid: expected {_SWITCH} for the default "
        f"({'on' if default else 'off'})",
        raw,
    )


def recording_disabled() -> bool:
    """``STAGETIMER_DISABLE``: whether recording is off (a switch, default off).

    Read at every stage, so that setting it at run time takes effect: a disabled stage
    costs a bare timer and this read (benchmarks/run.py), hence the fast paths.
    """
    try:
        # Item access, not ``get``: one Python call less on a disabled stage's path.
        raw = os.environ[DISABLE]
    except KeyError:
        return False
    if raw == "1":
        return True
    word = raw.strip().lower()  # as ``switch``, inline: no call on the usual spellings
    if word in _ON:
        return True
    if word in _OFF or not word:
        return False
    return switch(DISABLE, raw, False)  # raises, naming it


def environment_directory() -> str | None:
    """``STAGETIMER_DIR``: the artifact directory of stages with no recorder (None when
    unset or empty). Any other value is a path, checked as ``Recorder`` checks one."""
    return os.environ.get(DIR) or None


def _software() -> bool:
    """``STAGETIMER_SOFTWARE``: whether recorders may capture the software (default on)."""
    return switch(SOFTWARE, os.environ.get(SOFTWARE), True)


def _attempts() -> bool:
    """``STAGETIMER_ATTEMPTS``: whether recorders may write started markers (default on)."""
    return switch(ATTEMPTS, os.environ.get(ATTEMPTS), True)


def _number(raw: str) -> float:
    """``raw`` as a float (``nan`` when it is none)."""
    try:
        return float(raw)
    except ValueError:
        return math.nan


def _heartbeat() -> float | None:
    """``STAGETIMER_HEARTBEAT``: seconds between beats (``HEARTBEAT_SECONDS``); None (no
    beats) when unset, empty, ``0`` or another off word of a switch."""
    raw = os.environ.get(HEARTBEAT)
    word = (raw or "").strip().lower()
    if not word or word in _OFF:
        return None
    value = _number(word)
    if value == 0:
        return None
    if not _beats_at(value):
        raise InvalidSettingError(
            f"{HEARTBEAT}={short_repr(raw)} is not valid: expected the seconds between "
            f"beats, a number from {_BEATS_TEXT} (0, off or empty: no beats)",
            raw,
        )
    return value


#: How the accepted heartbeats are said in an error.
_BEATS_TEXT = f"{HEARTBEAT_SECONDS[0]:g} to {HEARTBEAT_SECONDS[1]:g}"


def _beats_at(value: float) -> bool:
    """Whether a writer may beat every ``value`` seconds (``HEARTBEAT_SECONDS``)."""
    return HEARTBEAT_SECONDS[0] <= value <= HEARTBEAT_SECONDS[1]


def claim() -> str:
    """``STAGETIMER_CLAIM``: ``auto`` (also when unset or empty) or ``always``.

    A typo of ``always`` must not silently leave saves without the claim where it is
    needed: anything else is refused.
    """
    raw = os.environ.get(CLAIM)
    if raw is None:
        return "auto"
    value = raw.strip().lower() or "auto"
    if value not in _CLAIMS:
        raise InvalidSettingError(
            f"{CLAIM}={short_repr(raw)} is not valid: expected 'auto' (the default, also "
            "when empty: the claim only where another client may write) or 'always'",
            raw,
        )
    return value


def claim_stale_seconds() -> float:
    """``STAGETIMER_CLAIM_STALE_SECONDS``: a number > 0, else 30 when unset or empty.

    A typo must not silently make claims break early: anything else is refused.
    """
    raw = os.environ.get(CLAIM_STALE_SECONDS)
    if raw is None or raw.strip() == "":
        return _STALE_DEFAULT
    value = _number(raw)
    if not (math.isfinite(value) and value > 0):
        raise InvalidSettingError(
            f"{CLAIM_STALE_SECONDS}={short_repr(raw)} is not valid: expected a number of "
            "seconds > 0 (empty: 30)",
            raw,
        )
    return value


#: Every environment variable stagetimer reads, with its reader (which raises
#: ``InvalidSettingError`` for a value it does not know).
ENVIRONMENT: dict[str, Callable[[], object]] = {
    DIR: environment_directory,
    DISABLE: recording_disabled,
    SOFTWARE: _software,
    ATTEMPTS: _attempts,
    HEARTBEAT: _heartbeat,
    CLAIM: claim,
    CLAIM_STALE_SECONDS: claim_stale_seconds,
}


def check_environment() -> None:
    """Read every variable: the first one not valid raises ``InvalidSettingError``
    (a strict recorder, when it is made)."""
    for read in ENVIRONMENT.values():
        read()


class RecorderEnvironment(NamedTuple):
    """What a recorder does: its parameters and the environment taken together."""

    software: bool
    attempts: bool
    heartbeat: float | None


_T = TypeVar("_T")
#: the refusals already warned about (each once per process)
_warned: set[str] = set()


def recorder_environment(
    software: bool,
    attempts: bool,
    heartbeat: float | None,
    strict: bool,
    warn: Callable[[str], None],
) -> RecorderEnvironment:
    """A recorder's ``software``, ``attempts`` and ``heartbeat`` parameters with the
    environment, when the recorder is made: a variable can turn the software or the
    markers off, and gives the heartbeat of a recorder that has none.

    ``strict``: every variable is read, and a bad one raises. Otherwise a bad one is
    passed to ``warn`` (the recorder's warning), once per process and value, and the
    default holds: the software captured, markers written, no heartbeats.
    """
    if strict:
        check_environment()
    software = software and _or_default(_software, True, "the software is captured", warn)
    attempts = attempts and _or_default(_attempts, True, "started markers are written", warn)
    if attempts and heartbeat is None:
        heartbeat = _or_default(_heartbeat, None, "stages run without heartbeats", warn)
    return RecorderEnvironment(software, attempts, heartbeat)


def _or_default(read: Callable[[], _T], default: _T, then: str, warn: Callable[[str], None]) -> _T:
    try:
        return read()
    except InvalidSettingError as exc:
        said = str(exc)
        if said not in _warned:
            _warned.add(said)
            warn(f"{said}; {then}")
        return default


# -- the parameters of Recorder (attrs validators: instance, attribute, value) --------

_FLOAT_MAX = sys.float_info.max


def as_path(directory: str | os.PathLike[str]) -> str:
    """``directory``: a ``str`` or ``os.PathLike`` path, non-empty, without NUL."""
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


def _whole(value: object) -> TypeGuard[int]:
    """Whether ``value`` is an int, not a bool: ``True`` is not a count."""
    return isinstance(value, int) and not isinstance(value, bool)


def _real(value: object) -> TypeGuard[int | float]:
    """Whether ``value`` is an int or a float, not a bool: ``True`` is not a number."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_directory(instance: object, attribute: Any, value: str) -> None:
    if os.path.lexists(value) and not os.path.isdir(value):
        raise InvalidSettingError(
            f"directory {value!r} is not valid: it exists and is not a directory "
            "(pass the artifact directory, not a file in it)",
            value,
        )


def check_completed_runs(instance: object, attribute: Any, value: object) -> None:
    if value is not None and (not _whole(value) or value < 0):
        raise InvalidSettingError(
            f"completed_runs {short_repr(value)} is not valid: expected an int >= 0", value
        )


def check_resume(resume_partial_runs: bool, completed_runs: int | None) -> None:
    """``resume_partial_runs`` and ``completed_runs`` each need the other."""
    if resume_partial_runs and completed_runs is None:
        raise InvalidSettingError(
            "resume_partial_runs=True needs completed_runs=n, the number of runs "
            "validated against the checkpoints",
            completed_runs,
        )
    if not resume_partial_runs and completed_runs is not None:
        raise InvalidSettingError(
            "completed_runs is only meaningful with resume_partial_runs=True",
            completed_runs,
        )


def check_expected_runs(instance: object, attribute: Any, value: object) -> None:
    if value is not None and (not _whole(value) or not 1 <= value <= MAX_RUN_IDX):
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


def check_lock_timeout(value: object) -> float:
    """``lock_timeout`` (``Recorder``, ``recover``) as a float: a number of seconds >= 0
    that fits a float, or infinity (wait as long as it takes); else
    ``InvalidSettingError``. A save adds it to the clock: an int of 400 digits made every
    save fail with ``OverflowError``."""
    if not _real(value) or not (0 <= value <= _FLOAT_MAX or value == math.inf):
        raise InvalidSettingError(
            f"lock_timeout {short_repr(value)} is not valid: expected a number of seconds >= 0 "
            "that fits a float (float('inf') waits as long as it takes)",
            value,
        )
    return float(value)


def check_timeout(instance: object, attribute: Any, value: object) -> None:
    check_lock_timeout(value)


def check_flag(instance: object, attribute: Any, value: object) -> None:
    """A switch given to ``Recorder`` (``resume_partial_runs``, ``strict``, ``software``,
    ``attempts``) is a bool: ``"no"`` or ``0`` would read as meant."""
    if not isinstance(value, bool):
        raise InvalidSettingError(
            f"{attribute.name} {short_repr(value)} is not valid: expected True or False", value
        )


def check_interval(value: object) -> float | None:
    """``None`` or the seconds between beats (``HEARTBEAT_SECONDS``), else
    ``InvalidSettingError`` naming the value."""
    if value is None:
        return None
    if not _real(value) or not _beats_at(value):
        raise InvalidSettingError(
            f"heartbeat {short_repr(value)} is not valid: expected None or the seconds between "
            f"beats, a number from {_BEATS_TEXT}",
            value,
        )
    return float(value)


def check_heartbeat(instance: object, attribute: Any, value: object) -> None:
    check_interval(value)
