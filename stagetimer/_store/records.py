"""What ``load_timings`` and ``load_hardware`` return: frozen attrs classes."""

from __future__ import annotations

from typing import Any

import attrs

from stagetimer.hardware import Hardware

__all__ = ["HardwareSidecar", "RunTiming", "StageTiming", "Timings"]



@attrs.frozen
class RunTiming:
    """One run of a stage."""

    seconds: float
    #: None only in legacy files
    hardware_id: str | None = None
    run_idx: int | None = None
    label: str | None = None
    #: ISO-8601 UTC time the stage started, e.g. "2026-11-29T22:28:02.123Z"
    started_at: str | None = None
    #: the batch job the run was measured in (``{"scheduler": "slurm", "job_id": "4711", ...}``,
    #: see ``stagetimer.hardware.job_identity``); None outside a job and in older files
    job: dict[str, Any] | None = None
    #: what the stage used besides wall time: ``cpu_seconds``, ``children_cpu_seconds``,
    #: ``memory_peak_bytes``, ``gpu_energy_joules``, each where measured (a plain dict, as
    #: stored: keys a later version adds survive); None in older files
    resources: dict[str, Any] | None = None
    #: user metadata and keys this version does not know
    metadata: dict[str, Any] = attrs.Factory(dict)
    #: ``system_ram_gb`` / ``gpu_ram_gb`` recorded by a legacy writer
    legacy_metadata: dict[str, Any] = attrs.Factory(dict)


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
