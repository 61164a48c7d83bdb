"""capture_hardware: assemble the description from the probes, cached for the live system."""

from __future__ import annotations

import os
import platform
import socket
from collections.abc import Mapping
from typing import Any

from stagetimer.hardware._model import CpuInfo, Hardware

__all__ = ["capture_hardware"]

_live: Hardware | None = None


def capture_hardware(
    *, root: str = "/", environ: Mapping[str, str] | None = None, nvml: Any = None
) -> Hardware:
    """Describe what this process can use. Cached once per process for the live system."""
    global _live
    live = root == "/" and environ is None and nvml is None
    if live and _live is not None:
        return _live
    affinity = tuple(sorted(os.sched_getaffinity(0)))
    hw = Hardware(
        host=socket.gethostname(),
        os=f"{platform.system()} {platform.release()}",
        python=f"{platform.python_implementation()} {platform.python_version()}",
        machine=platform.machine(),
        cpu=CpuInfo(affinity=affinity, logical_cpus=len(affinity)),
    )
    if live:
        _live = hw
    return hw
