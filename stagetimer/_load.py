"""load_timings / load_hardware: read the canonical sidecars into attrs objects (cattrs)."""

from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING, Any

from stagetimer._errors import SidecarCorruptError
from stagetimer._parse import parse_hardware, parse_timings, read_bytes
from stagetimer._records import LEGACY_KEYS, HardwareSidecar, RunTiming, StageTiming, Timings
from stagetimer._rules import is_stage
from stagetimer._sidecar import (
    HARDWARE_FILE,
    TIMINGS_FILE,
)

if TYPE_CHECKING:
    import cattrs

__all__ = ["load_hardware", "load_timings", "make_converter"]

_RUN_FIELDS = ("seconds", "hardware_id", "run_idx", "label", "started_at")


def _split(raw: dict[str, Any], known: tuple[str, ...]) -> tuple[dict[str, Any], ...]:
    fields, legacy, rest = {}, {}, {}
    for key, value in raw.items():
        if key in known:
            fields[key] = value
        elif key in LEGACY_KEYS:
            legacy[key] = value
        else:
            rest[key] = value
    return fields, legacy, rest


def make_converter() -> cattrs.Converter:
    """The private converter that structures sidecar JSON into the attrs classes."""
    import cattrs

    converter = cattrs.Converter()
    structure_run = converter.gen_structure_attrs_fromdict(RunTiming)

    def run_hook(raw: Any, _: Any) -> RunTiming:
        if not isinstance(raw, dict):
            raise ValueError(f"a run must be an object, not {raw!r}")
        fields, legacy, rest = _split(raw, _RUN_FIELDS)
        return structure_run({**fields, "metadata": rest, "legacy_metadata": legacy}, RunTiming)

    def stage_hook(raw: Any, _: Any) -> StageTiming:
        runs = tuple(converter.structure(r, RunTiming) for r in raw["runs"])
        total = raw.get("total_seconds", sum(r.seconds for r in runs))
        extra = {k: v for k, v in raw.items() if k not in ("runs", "total_seconds")}
        return StageTiming(total_seconds=float(total), runs=runs, extra=extra)

    converter.register_structure_hook(RunTiming, run_hook)
    converter.register_structure_hook(StageTiming, stage_hook)
    return converter


@functools.cache
def _converter() -> cattrs.Converter:
    return make_converter()


def load_timings(directory: str | os.PathLike[str]) -> Timings:
    """Read ``<directory>/timings.json`` (only that canonical path); missing → empty."""
    path = os.path.join(os.fspath(directory), TIMINGS_FILE)
    data = parse_timings(path, read_bytes(path))
    converter = _converter()
    stages, legacy, other = {}, {}, {}
    try:
        for key, value in data.items():
            if is_stage(value):
                stages[key] = converter.structure(value, StageTiming)
            elif key in LEGACY_KEYS:
                legacy[key] = value
            else:
                other[key] = value
    except Exception as exc:  # cattrs raises several kinds; name the file whatever it was
        raise SidecarCorruptError(path, f"stage {key!r} has an unexpected shape ({exc})") from None
    return Timings(stages=stages, legacy_metadata=legacy, other=other)


def load_hardware(directory: str | os.PathLike[str]) -> HardwareSidecar:
    """Read ``<directory>/timings_hardware.json``; missing → empty; newer schema → error."""
    path = os.path.join(os.fspath(directory), HARDWARE_FILE)
    data = parse_hardware(path, read_bytes(path))
    try:
        return _converter().structure(data, HardwareSidecar)
    except Exception as exc:  # cattrs raises several kinds; name the file whatever it was
        raise SidecarCorruptError(path, f"unexpected hardware description ({exc})") from None
