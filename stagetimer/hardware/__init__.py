"""Probes of what the timed process can really use (SPEC section 4)."""

from __future__ import annotations

from stagetimer.hardware._capture import capture_hardware
from stagetimer.hardware._model import (
    CpuInfo,
    GpuInfo,
    Hardware,
    MemoryInfo,
    SchedulerInfo,
    description,
    hardware_id,
)
from stagetimer.hardware._show import format_hardware, summary_line

__all__ = [
    "CpuInfo",
    "GpuInfo",
    "Hardware",
    "MemoryInfo",
    "SchedulerInfo",
    "capture_hardware",
    "description",
    "format_hardware",
    "hardware_id",
    "summary_line",
]
