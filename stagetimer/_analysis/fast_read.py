"""Reading a suite fast: the sidecars of many directories into the loaders' attrs objects.

``load_timings`` structures every run through cattrs, about 10 µs a run: for a
suite of 1,000 directories x 100 runs that is five times the cost of parsing the
JSON. ``parse_timings`` (shared with the loader) has already refused every file
whose runs do not have the format's types, so a run is built here directly into
the same ``RunTiming``; the rare file that needs the loader's arithmetic (no stored
``total_seconds``, an integer ``seconds`` beyond a float) is handed to
``load_timings`` whole, so what is accepted, and every error, stay theirs.
Hardware sidecars are usually byte-identical across a suite (one machine), so their
structured form is kept per content.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Iterator
from typing import Any

import attrs

from stagetimer._format import HARDWARE_FILE, LEGACY_KEYS, TIMINGS_FILE
from stagetimer._store.load import as_float, load_hardware, load_timings
from stagetimer._store.parse import parse_hardware, parse_timings, read_bytes
from stagetimer._store.records import HardwareSidecar, RunTiming, StageTiming, Timings

__all__ = [
    "HardwareCache",
    "raw_seconds",
    "raw_stages",
    "read_data",
    "read_timings",
    "structure",
]

#: The fields of a run this reader types itself. Another RunTiming field (one added
#: later) in a run sends its file to the loader.
_CHECKED = frozenset({"seconds", "run_idx", "hardware_id", "label", "started_at", "job"})


class _Unusual(Exception):
    """The file holds something the lean path leaves to ``load_timings``."""


#: RunTiming's fields in the order this reader passes them. Should RunTiming change, the
#: lean path turns itself off and every file goes through ``load_timings``.
_ORDER = (
    "seconds", "hardware_id", "run_idx", "label", "started_at", "job", "metadata",
    "legacy_metadata",
)
_LEAN = tuple(f.name for f in attrs.fields(RunTiming)) == _ORDER
_NOT_METADATA = _CHECKED | frozenset(LEGACY_KEYS)


def _run(raw: dict[str, Any]) -> RunTiming:
    # parse_timings has checked the types: a number seconds, strings, an int run_idx,
    # an object job (each where present). What is left is where each key goes.
    get = raw.get
    keys = raw.keys()
    if keys <= _CHECKED:  # the common case: no metadata
        metadata: dict[str, Any] = {}
        legacy: dict[str, Any] = {}
    else:
        metadata = {k: v for k, v in raw.items() if k not in _NOT_METADATA}
        legacy = {} if keys.isdisjoint(LEGACY_KEYS) else {
            k: v for k, v in raw.items() if k in LEGACY_KEYS
        }
    # Positional, in _ORDER (checked at import): a third cheaper than keywords. An int
    # seconds beyond a float raises OverflowError: the loader's business.
    return RunTiming(
        raw["seconds"] + 0.0, get("hardware_id"), get("run_idx"), get("label"),
        get("started_at"), get("job"), metadata, legacy,
    )


def _stage(raw: dict[str, Any]) -> StageTiming:
    runs = tuple(map(_run, raw["runs"]))
    total = raw.get("total_seconds")
    if total is None:
        raise _Unusual  # missing: the loader sums the runs a writer could have written
    extra = {k: v for k, v in raw.items() if k != "runs" and k != "total_seconds"}
    return StageTiming(total_seconds=float(total), runs=runs, extra=extra)


def read_data(directory: str) -> dict[str, Any]:
    """The mapping of ``<directory>/timings.json`` as ``parse_timings`` checked it (empty when
    there is none); what ``structure`` turns into ``Timings``."""
    path = os.path.join(directory, TIMINGS_FILE)
    return parse_timings(path, read_bytes(path))


def structure(directory: str, data: dict[str, Any]) -> Timings:
    """``data`` (from ``read_data(directory)``) as ``load_timings(directory)`` returns it."""
    if not _LEAN:
        return load_timings(directory)
    stages, legacy, other = {}, {}, {}
    try:
        for key, value in data.items():
            if type(value) is dict and type(value.get("runs")) is list:
                stages[key] = _stage(value)
            elif key in LEGACY_KEYS:
                legacy[key] = value
            else:
                other[key] = value
    except (_Unusual, OverflowError):  # OverflowError: an int seconds beyond a float
        return load_timings(directory)
    return Timings(stages=stages, legacy_metadata=legacy, other=other)


def read_timings(directory: str) -> Timings:
    """What ``load_timings(directory)`` returns, the same errors included."""
    return structure(directory, read_data(directory))


def raw_stages(data: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The stages of a parsed ``timings.json``: ``(name, {"runs": [...], ...})``, in order."""
    for key, value in data.items():
        if type(value) is dict and type(value.get("runs")) is list:
            yield key, value


_SECONDS = operator.itemgetter("seconds")


def raw_seconds(stage: dict[str, Any]) -> list[float]:
    """Each run's ``seconds`` as the loader reads it (a float; beyond a float, infinite)."""
    seconds = list(map(_SECONDS, stage["runs"]))
    try:
        # float() of a number parse_timings let through is s + 0.0: the same double
        return list(map(float, seconds))
    except OverflowError:
        return [as_float(s) for s in seconds]


class HardwareCache:
    """Structured hardware sidecars by their bytes: one machine's suite is structured once."""

    def __init__(self) -> None:
        self._by_content: dict[bytes, HardwareSidecar] = {}

    def read(self, directory: str) -> HardwareSidecar:
        """What ``load_hardware(directory)`` returns, the same errors included."""
        path = os.path.join(directory, HARDWARE_FILE)
        raw = read_bytes(path)
        if raw is None:
            return HardwareSidecar()
        known = self._by_content.get(raw)
        if known is None:
            parse_hardware(path, raw)  # its errors, from these bytes
            known = load_hardware(directory)
            # Kept only when the file did not change while it was read twice.
            if len(self._by_content) < 64 and read_bytes(path) == raw:
                self._by_content[raw] = known
        # A fresh mapping per artifact: the Hardware values inside are frozen.
        return HardwareSidecar(schema_version=known.schema_version, hardware=dict(known.hardware))

