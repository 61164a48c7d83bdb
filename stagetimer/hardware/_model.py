"""The hardware description: frozen attrs classes stored verbatim in ``timings_hardware.json``.

Every field is something the timed process could use that does not change while
it runs; nothing volatile (free memory, current clock, time, pid) and nothing that
identifies the job (its id, array task, step, node name) belongs here, since the
description is hashed into ``hardware_id`` and deduplicated: the tasks of one job
array on one node share one description. A run keeps its job's identity itself.
Missing values stay ``None``; ``Hardware.sources`` says where each value came
from, or why it is missing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from stagetimer._system.content_id import content_id

__all__ = [
    "CpuInfo",
    "GpuInfo",
    "Hardware",
    "MemoryInfo",
    "SchedulerInfo",
    "description",
    "hardware_id",
]


@attrs.frozen
class MemoryInfo:
    """Memory the process may use: the smallest finite limit, and the node's RAM beside it."""

    limit_bytes: int | None = None
    #: "cgroup_v2", "cgroup_v1", "slurm" or None
    source: str | None = None
    #: total RAM of the node; never used as the limit
    node_total_bytes: int | None = None
    #: cgroup v2 ``memory.high`` (throttling threshold), smallest finite over ancestors
    high_bytes: int | None = None


@attrs.frozen
class CpuInfo:
    """CPUs the process may run on: how many, their cores, NUMA nodes, clock range and model.

    Which CPUs they are is placement, not capacity: each run keeps its own list (its
    ``cpus``), so that tasks pinned to different CPUs of one node share one description.
    """

    logical_cpus: int = 0
    physical_cores: int | None = None
    #: NUMA nodes the affine CPUs span (``/sys/devices/system/node/nodeN/cpulist``)
    numa_nodes: int | None = None
    clock_min_mhz: float | None = None
    clock_max_mhz: float | None = None
    #: "cpufreq", "cpufreq+cppc", "kvm_cpuinfo" or None
    clock_source: str | None = None
    model_name: str | None = None
    model_name_guest_visible: bool = False
    #: CPU bandwidth quota in CPUs (cgroup ``cpu.max`` / ``cpu.cfs_quota_us``), None if none
    quota_cpus: float | None = None
    #: CPUs online on the node (``/sys/devices/system/cpu/online``); never the allocation
    node_logical_cpus: int | None = None
    #: only in descriptions written by stagetimer 0.2 and earlier, which listed the affine
    #: CPUs here; never captured now, and left out of a description where None
    affinity: tuple[int, ...] | None = None


@attrs.frozen
class GpuInfo:
    """One NVIDIA GPU visible to the process (fields None where NVML does not expose them)."""

    index: int | None = None
    name: str | None = None
    uuid: str | None = None
    memory_usable_bytes: int | None = None
    memory_bus_width_bits: int | None = None
    max_memory_clock_mhz: int | None = None
    peak_memory_bandwidth_bytes_per_s: int | None = None


@attrs.frozen
class SchedulerInfo:
    """The batch job's allocation, if the process runs in one (its identity is in each run)."""

    #: "slurm", "pbs" or None
    kind: str | None = None
    #: the job's SLURM_* / PBS_* variables that describe its allocation
    env: dict[str, str] = attrs.Factory(dict)
    #: only in descriptions written by stagetimer 0.1, which kept the job's id here;
    #: never captured now, and left out of a description where None
    job_id: str | None = None


@attrs.frozen
class Hardware:
    """What the timed process could use. Stored once per ``hardware_id``."""

    host: str | None = None
    os: str | None = None
    python: str | None = None
    machine: str | None = None
    cpu: CpuInfo = attrs.Factory(CpuInfo)
    memory: MemoryInfo = attrs.Factory(MemoryInfo)
    gpus: tuple[GpuInfo, ...] = ()
    #: why ``gpus`` is empty (no driver, CUDA_VISIBLE_DEVICES empty, ...); None when GPUs listed
    gpu_reason: str | None = None
    scheduler: SchedulerInfo = attrs.Factory(SchedulerInfo)
    #: field path ("memory.limit_bytes") -> file or variable it came from, or why it is missing
    sources: dict[str, str] = attrs.Factory(dict)


def _json_ready(instance: object, field: object, value: Any) -> Any:
    # attrs.asdict keeps tuples; the stored description is plain JSON (lists).
    return list(value) if isinstance(value, tuple) else value


def _stored(field: attrs.Attribute[Any], value: Any) -> bool:
    # A first-edition job id, or a 0.2 CPU list, is kept where an older file had one; a
    # new description has neither key. A field added later (``cpu.numa_nodes``) is left
    # out where unknown, so that an older description read back keeps its id.
    return not (value is None and field in _OMITTED_WHEN_NONE)


_OMITTED_WHEN_NONE = (
    attrs.fields(SchedulerInfo).job_id,
    attrs.fields(CpuInfo).affinity,
    attrs.fields(CpuInfo).numa_nodes,
)


def description(hardware: Hardware | Mapping[str, Any]) -> dict[str, Any]:
    """The JSON-ready description of ``hardware``, exactly as stored in the sidecar."""
    if isinstance(hardware, Hardware):
        return attrs.asdict(hardware, filter=_stored, value_serializer=_json_ready)
    return dict(hardware)


def hardware_id(hardware: Hardware | Mapping[str, Any]) -> str:
    """``"hw-"`` + the first 16 hex digits of the SHA-256 of the canonical JSON description.

    >>> hardware_id({"host": "a"})
    'hw-...'
    """
    return content_id("hw-", description(hardware))


