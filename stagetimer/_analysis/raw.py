"""The parsed sidecars as they are: the stages and durations the readers summarise.

The report, the table and ``compare`` summarise the mapping ``parse_timings`` returns
directly, and never build the 100,000 run objects of a suite they do not show;
``Artifact.timings`` structures it on first use (``structure_timings``, the loader's
own). Hardware sidecars are usually byte-identical across a suite (one machine), so
their structured form is kept per content.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Iterator
from typing import Any

from stagetimer._format import HARDWARE_FILE, TIMINGS_FILE
from stagetimer._store.load import as_float, structure_hardware
from stagetimer._store.parse import parse_hardware, parse_timings, read_bytes
from stagetimer._store.records import HardwareSidecar
from stagetimer._store.rules import is_stage

__all__ = ["HardwareCache", "raw_seconds", "raw_stages", "read_data", "stored_runs"]


def read_data(directory: str) -> dict[str, Any]:
    """The mapping of ``<directory>/timings.json`` as ``parse_timings`` checked it (empty
    when there is none)."""
    path = os.path.join(directory, TIMINGS_FILE)
    return parse_timings(path, read_bytes(path))


def raw_stages(data: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The stages of a parsed ``timings.json``: ``(name, {"runs": [...], ...})``, in order."""
    for key, value in data.items():
        if is_stage(value):
            yield key, value


def stored_runs(data: dict[str, Any], name: str) -> list[Any]:
    """The runs of stage ``name`` of a parsed ``timings.json`` (empty when it has none)."""
    stage: Any = data.get(name)
    return stage["runs"] if is_stage(stage) else []


_SECONDS = operator.itemgetter("seconds")


def raw_seconds(stage: dict[str, Any]) -> list[float]:
    """Each run's ``seconds`` as the loader reads it (a float; beyond a float, infinite)."""
    seconds = list(map(_SECONDS, stage["runs"]))
    try:
        # float() of a number parse_timings let through is as_float's (the same double),
        # in C for the usual stage
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
            known = structure_hardware(path, parse_hardware(path, raw))  # from these bytes
            if len(self._by_content) < 64:
                self._by_content[raw] = known
        # A fresh mapping per artifact: the Hardware values inside are frozen.
        return HardwareSidecar(
            schema_version=known.schema_version,
            hardware=dict(known.hardware),
            software=dict(known.software),
        )
