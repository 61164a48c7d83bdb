"""A recorder's share of the environment, read when the recorder is made:
``STAGETIMER_SOFTWARE``, ``STAGETIMER_ATTEMPTS`` and ``STAGETIMER_HEARTBEAT`` (parsed by
``stagetimer._settings``, like every setting).

A strict recorder reads every ``STAGETIMER_*`` variable then, and a value that is not
valid raises ``InvalidSettingError`` from ``Recorder(...)``, before any stage runs. Any
other recorder warns (one ``StageTimerWarning`` per process and value) and goes on with
the default: the software captured, started markers written, no heartbeats.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, TypeVar

from stagetimer import _settings
from stagetimer._errors import InvalidSettingError

__all__ = ["RecorderEnvironment", "read_environment"]

_T = TypeVar("_T")

#: the refusals already warned about (each once per process)
_warned: set[str] = set()


class RecorderEnvironment(NamedTuple):
    """What a recorder does, its parameters and the environment taken together."""

    software: bool
    attempts: bool
    heartbeat: float | None


def read_environment(
    software: bool,
    attempts: bool,
    heartbeat: float | None,
    strict: bool,
    warn: Callable[[str], None],
) -> RecorderEnvironment:
    """The recorder's ``software``, ``attempts`` and ``heartbeat`` parameters with the
    environment: a variable can turn the software or the markers off, and gives the
    heartbeat of a recorder that has none. ``warn``: the recorder's warning."""
    if strict:
        _settings.check_environment()
    software = software and _read(_settings.software, True, "the software is captured", warn)
    attempts = attempts and _read(_settings.attempts, True, "started markers are written", warn)
    if attempts and heartbeat is None:
        heartbeat = _read(_settings.heartbeat, None, "stages run without heartbeats", warn)
    return RecorderEnvironment(software, attempts, heartbeat)


def _read(read: Callable[[], _T], default: _T, then: str, warn: Callable[[str], None]) -> _T:
    try:
        return read()
    except InvalidSettingError as exc:
        said = str(exc)
        if said not in _warned:
            _warned.add(said)
            warn(f"{said}; {then}")
        return default
