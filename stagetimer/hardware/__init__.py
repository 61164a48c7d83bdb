"""Probes of what the timed process can really use, and how two descriptions differ."""

from __future__ import annotations

from typing import TYPE_CHECKING

from stagetimer._lazy import lazy_attributes

if TYPE_CHECKING:
    from stagetimer._system.units import format_bytes
    from stagetimer.hardware._capture import capture_hardware
    from stagetimer.hardware._differences import (
        Difference,
        format_differences,
        hardware_differences,
    )
    from stagetimer.hardware._differences import (
        as_description as as_description,
    )
    from stagetimer.hardware._gpu import (
        energy_counters as energy_counters,
    )
    from stagetimer.hardware._gpu import (
        energy_handles as energy_handles,
    )
    from stagetimer.hardware._model import (
        CpuInfo,
        GpuInfo,
        Hardware,
        MemoryInfo,
        SchedulerInfo,
        description,
        hardware_id,
    )
    from stagetimer.hardware._resources import (
        memory_peak_file as memory_peak_file,
    )
    from stagetimer.hardware._resources import (
        resource_sources as resource_sources,
    )
    from stagetimer.hardware._scheduler import job_identity
    from stagetimer.hardware._show import format_hardware, summary_line

# Each probe is imported on first use: a module of stagetimer that needs one probe (the
# identity of this process, a mountinfo line) does not pay for all of them.
_LAZY = {
    "capture_hardware": "stagetimer.hardware._capture",
    "Difference": "stagetimer.hardware._differences",
    "as_description": "stagetimer.hardware._differences",
    "format_differences": "stagetimer.hardware._differences",
    "hardware_differences": "stagetimer.hardware._differences",
    "CpuInfo": "stagetimer.hardware._model",
    "GpuInfo": "stagetimer.hardware._model",
    "Hardware": "stagetimer.hardware._model",
    "MemoryInfo": "stagetimer.hardware._model",
    "SchedulerInfo": "stagetimer.hardware._model",
    "description": "stagetimer.hardware._model",
    "hardware_id": "stagetimer.hardware._model",
    "energy_counters": "stagetimer.hardware._gpu",
    "energy_handles": "stagetimer.hardware._gpu",
    "memory_peak_file": "stagetimer.hardware._resources",
    "resource_sources": "stagetimer.hardware._resources",
    "job_identity": "stagetimer.hardware._scheduler",
    "format_hardware": "stagetimer.hardware._show",
    "summary_line": "stagetimer.hardware._show",
    "format_bytes": "stagetimer._system.units",
}


__getattr__ = lazy_attributes(__name__, _LAZY, globals())


__all__ = [
    "CpuInfo",
    "Difference",
    "GpuInfo",
    "Hardware",
    "MemoryInfo",
    "SchedulerInfo",
    "capture_hardware",
    "description",
    "format_bytes",
    "format_differences",
    "format_hardware",
    "hardware_differences",
    "hardware_id",
    "job_identity",
    "summary_line",
]
