"""What ``load_timings`` and ``load_hardware`` return: frozen attrs classes."""

from __future__ import annotations

from typing import Any

import attrs

from stagetimer.hardware import Hardware
from stagetimer.software import Software

__all__ = ["HardwareSidecar", "RunTiming", "Software", "StageTiming", "Timings"]



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
    #: the run's software (``HardwareSidecar.software``); None in older files and where the
    #: recorder was told not to capture it
    software_id: str | None = None
    #: the process's rank and the launch's world size when it was one of several ranks
    #: (torchrun, a Slurm step of several tasks, MPI); None otherwise
    rank: int | None = None
    world_size: int | None = None
    #: the CPUs the process was placed on, in the kernel's list format (``"0-3,8"``)
    cpus: str | None = None
    #: what the stage used besides wall time: ``cpu_seconds``, ``children_cpu_seconds``,
    #: ``memory_peak_bytes``, ``gpu_energy_joules``, each where measured (a plain dict, as
    #: stored: keys a later version adds survive); None in older files
    resources: dict[str, Any] | None = None
    #: the id of the attempt that wrote the run (its started marker in ``timings.attempts/``,
    #: 32 hex digits); None for ``record_timing`` and in older files
    attempt_id: str | None = None
    #: the stage open around it in the same thread or task: ``{"stage": name,
    #: "attempt_id": id}`` as stored (None where none was recorded; in a file of an older
    #: writer, whatever its metadata ``parent`` held)
    parent: Any = None
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
    #: software_id -> description (absent in files written before 0.3)
    software: dict[str, Software] = attrs.Factory(dict)
