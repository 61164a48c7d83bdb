"""load_timings / load_hardware: read the sidecars into the attrs objects of ``records``.

The one loader: the report, the table, ``to_records`` and ``compare`` build their
``Timings`` with ``structure_timings`` too."""

from __future__ import annotations

import errno
import functools
import math
import os
from typing import TYPE_CHECKING, Any

from stagetimer._errors import SidecarCorruptError
from stagetimer._format import HARDWARE_FILE, LEGACY_KEYS, RUN_FIELDS, TIMINGS_FILE
from stagetimer._store.parse import parse_hardware, parse_timings, read_bytes
from stagetimer._store.records import HardwareSidecar, RunTiming, StageTiming, Timings
from stagetimer._store.rules import add_seconds, is_stage

if TYPE_CHECKING:
    import cattrs

__all__ = [
    "as_float",
    "load_hardware",
    "load_timings",
    "make_converter",
    "structure_hardware",
    "structure_timings",
]



def as_float(value: int | float) -> float:
    """A stored number as a float; an int beyond a float is an infinity of its sign.

    Such a value (and NaN, infinities, negatives) is one no writer could have written:
    the file keeps it verbatim, the report flags it.
    """
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


_RUN_FIELD_SET = frozenset(RUN_FIELDS)
_LEGACY_SET = frozenset(LEGACY_KEYS)


def _run(raw: dict[str, Any]) -> RunTiming:
    # parse_timings has checked the types: a number seconds, strings, an int run_idx, an
    # object job (each where present). What is left is where each key goes.
    legacy: dict[str, Any] = {}
    rest: dict[str, Any] = {}
    if raw.keys() <= _RUN_FIELD_SET:  # the common case: no metadata
        fields = raw
    else:
        fields = {}
        for key, value in raw.items():
            into = fields if key in _RUN_FIELD_SET else legacy if key in _LEGACY_SET else rest
            into[key] = value
    return RunTiming(
        **{**fields, "seconds": as_float(raw["seconds"])}, metadata=rest, legacy_metadata=legacy
    )


def _stage(raw: dict[str, Any]) -> StageTiming:
    runs = raw["runs"]
    # Without a stored total, the sum the writer would store: its valid runs.
    total = raw["total_seconds"] if "total_seconds" in raw else add_seconds(0.0, runs)
    extra = {k: v for k, v in raw.items() if k != "runs" and k != "total_seconds"}
    return StageTiming(total_seconds=as_float(total), runs=tuple(map(_run, runs)), extra=extra)


def structure_timings(data: dict[str, Any]) -> Timings:
    """The mapping of a ``timings.json`` (as ``parse_timings`` checked it) as ``Timings``.

    Built directly, not through cattrs (ten times its speed, a hundred thousand runs in
    a suite): ``parse_timings`` has refused every file whose fields have other types.
    """
    stages, legacy, other = {}, {}, {}
    for key, value in data.items():
        if is_stage(value):
            stages[key] = _stage(value)
        elif key in _LEGACY_SET:
            legacy[key] = value
        else:
            other[key] = value
    return Timings(stages=stages, legacy_metadata=legacy, other=other)


@functools.cache
def make_converter() -> cattrs.Converter:
    """The private converter that structures ``timings_hardware.json`` into the attrs
    classes, built once (never hooks on cattrs' global converter)."""
    import cattrs

    return cattrs.Converter()


def _why(exc: Exception) -> str:
    """What was wrong, with the place in the file where cattrs knows it."""
    import cattrs

    if isinstance(exc, cattrs.BaseValidationError):
        return "; ".join(cattrs.transform_error(exc, path="$")[:3])
    return str(exc)[:200]


def _sidecar_path(directory: str | os.PathLike[str], filename: str) -> str:
    """``<directory>/<filename>``; a path to either sidecar names its directory.

    A missing directory raises ``FileNotFoundError`` and a path that is neither a
    directory nor a sidecar ``NotADirectoryError``, each naming the path: a mistyped
    directory must not read as an empty one.
    """
    path = os.fspath(directory)
    if os.path.basename(path) in (TIMINGS_FILE, HARDWARE_FILE) and not os.path.isdir(path):
        path = os.path.dirname(path) or "."
    if not os.path.isdir(path):
        if os.path.lexists(path):
            raise NotADirectoryError(errno.ENOTDIR, "not an artifact directory", path)
        raise FileNotFoundError(errno.ENOENT, "no such artifact directory", path)
    return os.path.join(path, filename)


def load_timings(directory: str | os.PathLike[str]) -> Timings:
    """Read ``<directory>/timings.json``; a directory without one reads as empty.

    ``directory`` may also be the path of the file itself. Raises
    ``FileNotFoundError`` when the directory does not exist, and
    ``SidecarCorruptError`` for any content that does not fit the format.
    """
    path = _sidecar_path(directory, TIMINGS_FILE)
    return structure_timings(parse_timings(path, read_bytes(path)))


def load_hardware(directory: str | os.PathLike[str]) -> HardwareSidecar:
    """Read ``<directory>/timings_hardware.json``; a directory without one reads as empty.

    ``directory`` may also be the path of either sidecar. A newer schema raises
    ``SchemaVersionError``; a missing directory and bad content as for ``load_timings``.
    """
    path = _sidecar_path(directory, HARDWARE_FILE)
    return structure_hardware(path, parse_hardware(path, read_bytes(path)))


def structure_hardware(path: str, data: dict[str, Any]) -> HardwareSidecar:
    """The parsed ``timings_hardware.json`` at ``path`` (``parse_hardware``'s mapping) as
    ``load_hardware`` returns it."""
    try:
        return make_converter().structure(data, HardwareSidecar)
    except Exception as exc:  # cattrs raises several kinds; name the file whatever it was
        raise SidecarCorruptError(path, f"unexpected hardware description ({_why(exc)})") from None
