"""Probes of what the timed process can really use, and how two descriptions differ."""

from __future__ import annotations

from stagetimer.hardware._capture import capture_hardware
from stagetimer.hardware._differences import (
    Difference,
    format_differences,
    hardware_differences,
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
from stagetimer.hardware._scheduler import job_identity
from stagetimer.hardware._show import format_hardware, summary_line
from stagetimer.hardware._units import format_bytes

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
