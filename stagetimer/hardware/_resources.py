"""Which counters can say what a stage used, and why a missing one is missing.

A recorder reads these counters at each stage's boundaries (``stagetimer._record.resources``);
the hardware capture states once, in ``sources``, which of them this process uses:

- CPU time: ``getrusage(2)`` ``RUSAGE_SELF`` (every thread of the process) and
  ``RUSAGE_CHILDREN`` (children that ended and were waited for), in microseconds.
- Memory peak: cgroup v2 ``memory.peak`` of the process's own group, which since Linux
  6.12 a reader resets for its own open file only by writing to it (kernel
  ``Documentation/admin-guide/cgroup-v2.rst``, "memory.peak"), so nested stages and other
  readers each keep their own peak. Else the process's resident high-water mark
  (``VmHWM``, ``proc(5)``), used only when the stage raised it. Never a counter that
  resets for everyone: v1 ``memory.max_usage_in_bytes`` and ``/proc/self/clear_refs``
  are what the program and Slurm's accounting read.
- GPU energy: NVML's ``nvmlDeviceGetTotalEnergyConsumption`` (millijoules since the
  driver loaded, Volta and later), summed over the visible GPUs. Older parts raise
  ``NVMLError_NotSupported`` or report 0 (codecarbon#1316): no counter. The GPUs'
  counters are found with the GPUs, in ``_gpu.py`` (``energy_handles``).
"""

from __future__ import annotations

import os
import posixpath
import re

from stagetimer._system.files import host_path, read_text
from stagetimer.hardware._cgroup import Cgroups, locate

__all__ = [
    "CHILDREN_SOURCE",
    "CPU_SOURCE",
    "memory_peak_file",
    "resource_sources",
]

CPU_SOURCE = "getrusage(RUSAGE_SELF) ru_utime + ru_stime at the stage's entry and exit"
CHILDREN_SOURCE = (
    "getrusage(RUSAGE_CHILDREN) ru_utime + ru_stime: children that ended and were waited for"
)
_RELEASE = re.compile(r"(\d+)\.(\d+)")
#: The first Linux release whose memory.peak resets per open file (commit c6f53ed8f213,
#: "mm, memcg: cg2 memory{.swap,}.peak write handlers").
_PEAK_RESET_SINCE = (6, 12)
_HWM = (
    "VmHWM of /proc/self/status (read as getrusage ru_maxrss where that mirrors it), "
    "only when the stage raised it"
)


def _kernel_release(root: str) -> tuple[int, int] | None:
    text = read_text(root, "/proc/sys/kernel/osrelease")
    match = _RELEASE.match(text.strip()) if text else None
    return (int(match.group(1)), int(match.group(2))) if match else None


def _before_peak_reset(root: str) -> str | None:
    """Why the kernel's ``memory.peak`` does not reset per open file, None where it does."""
    release = _kernel_release(root)
    if release is not None and release >= _PEAK_RESET_SINCE:
        return None
    said = "unknown" if release is None else f"{release[0]}.{release[1]}"
    return f"memory.peak resets per open file only since Linux 6.12; this kernel: {said}"


def memory_peak_file(root: str, cgroups: Cgroups | str | None = None) -> tuple[str | None, str]:
    """``(path, source)``: the process's cgroup v2 ``memory.peak`` that resets per open
    file (the system path; open it as ``host_path(root, path)``), or ``(None, why not)``
    with the fall-back this process uses instead."""
    located = locate(root, "memory", cgroups)
    if isinstance(located, str):
        return None, f"{_HWM} (no cgroup v2 memory.peak: {located})"
    if located.version != 2:
        return None, (
            f"{_HWM} (memory is on cgroup v1, whose memory.max_usage_in_bytes "
            "resets for every reader: never written)"
        )
    too_old = _before_peak_reset(root)
    if too_old is not None:
        return None, f"{_HWM} ({too_old})"
    path = posixpath.join(located.dirs[0], "memory.peak")
    if read_text(root, path) is None:
        # The root group has no memory.peak (cgroup-v2.rst: "exists on non-root cgroups").
        return None, f"{_HWM} ({path} does not exist)"
    if not os.access(host_path(root, path), os.W_OK):
        # A reset is a write; a group that is not delegated to the user (Slurm's job
        # groups belong to root) cannot be reset by the job's own processes.
        return None, f"{_HWM} ({path} is not writable by this user: no per-stage reset)"
    return path, f"{path} of the process's cgroup, reset per open file at each stage's entry"


def resource_sources(peak_source: str) -> dict[str, str]:
    """The ``sources`` entries of the per-run CPU and memory values (the GPU probe says
    where ``resources.gpu_energy_joules`` comes from)."""
    return {
        "resources.cpu_seconds": CPU_SOURCE,
        "resources.children_cpu_seconds": CHILDREN_SOURCE,
        "resources.memory_peak_bytes": peak_source,
    }
