"""What ``load_timings`` and ``load_hardware`` return: frozen attrs classes.

A run, ``RunTiming``, is defined with the format (``stagetimer._format``): its class is
the schema every writer and reader of a run derives from.
"""

from __future__ import annotations

from typing import Any

import attrs

from stagetimer._format import RunTiming
from stagetimer.hardware import Hardware
from stagetimer.software import Software

__all__ = ["HardwareSidecar", "RunTiming", "Software", "StageTiming", "Timings"]


@attrs.frozen
class StageTiming:
    """All runs of one stage; ``total_seconds`` is their sum."""

    total_seconds: float
    runs: tuple[RunTiming, ...] = ()
    #: keys of the stage object this version does not know
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen
class Timings:
    """The content of one ``timings.json``."""

    #: stage name -> timing, in the order the stages were first recorded
    stages: dict[str, StageTiming] = attrs.Factory(dict)
    #: top-level ``system_ram_gb`` / ``gpu_ram_gb`` of a legacy writer
    legacy_metadata: dict[str, Any] = attrs.Factory(dict)
    #: other top-level keys (not stages), kept verbatim
    other: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen
class HardwareSidecar:
    """The content of one ``timings_hardware.json``."""

    schema_version: int = 1
    #: hardware_id -> description
    hardware: dict[str, Hardware] = attrs.Factory(dict)
    #: software_id -> description (absent in files written before 0.3)
    software: dict[str, Software] = attrs.Factory(dict)
