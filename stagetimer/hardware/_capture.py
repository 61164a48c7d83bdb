"""capture_hardware: assemble the description from the probes, cached for the live system."""

from __future__ import annotations

import os
import platform
import re
import socket
import threading
from collections.abc import Mapping
from typing import Any

from stagetimer._system import process_state
from stagetimer._system.text import json_text
from stagetimer.hardware._cgroup import Cgroups, read_cgroups
from stagetimer.hardware._clock import probe_clock
from stagetimer.hardware._cpu import (
    affinity,
    cpu_quota,
    cpuinfo_blocks,
    model_name,
    node_cpus,
    numa_nodes,
    physical_cores,
    sysfs_cpus,
)
from stagetimer.hardware._gpu import probe_gpus
from stagetimer.hardware._memory import probe_memory
from stagetimer.hardware._model import CpuInfo, Hardware
from stagetimer.hardware._resources import memory_peak_file, resource_sources
from stagetimer.hardware._scheduler import probe_scheduler

__all__ = ["capture_hardware", "clear_cache", "generalise_source"]

_live: Hardware | None = None
# Held while the first live capture probes, so that threads capturing at once probe once.
# Re-entrant, and ``_in_capture`` marks the thread probing: a signal handler or finaliser
# that captures while its own thread is inside the first capture computes a description
# of its own without the cache, instead of waiting for a lock its own thread holds.
_live_lock = threading.RLock()
_in_capture = threading.local()


def _probe_cpu(root: str, cgroups: Cgroups | str) -> tuple[CpuInfo, dict[str, str]]:
    cpus, cpus_where = affinity(root)
    # Without an affinity (a fixture with no /proc), the clock and topology probes
    # still look at every CPU sysfs lists.
    scope = cpus or sysfs_cpus(root)
    cores, cores_where = physical_cores(root, scope)
    blocks = cpuinfo_blocks(root)
    low, high, clock_source, clock_sources = probe_clock(root, scope, blocks)
    name, guest, name_where, guest_where = model_name(root, scope, blocks)
    quota, quota_where = cpu_quota(root, cgroups)
    node, node_where = node_cpus(root)
    nodes, nodes_where = numa_nodes(root, cpus)
    info = CpuInfo(
        logical_cpus=len(cpus),
        physical_cores=cores,
        numa_nodes=nodes,
        clock_min_mhz=low,
        clock_max_mhz=high,
        clock_source=clock_source,
        model_name=name,
        model_name_guest_visible=guest,
        quota_cpus=quota,
        node_logical_cpus=node,
    )
    sources = {
        # Which CPUs is each run's ``cpus``: placement, not part of the description.
        "cpu.logical_cpus": f"number of CPUs in the affinity ({cpus_where})",
        "cpu.physical_cores": cores_where,
        "cpu.numa_nodes": nodes_where,
        "cpu.node_logical_cpus": node_where,
        "cpu.model_name": name_where,
        "cpu.model_name_guest_visible": guest_where,
        "cpu.quota_cpus": quota_where,
        **clock_sources,
    }
    return info, sources


_END = r"(?=[/\s),;:]|$)"
#: path components that name one job, step, task, container, login session or CPU, and
#: what stands for them in ``sources``: the kind of component stays, its id goes.
_IDENTITIES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(r"(?<=/)" + pattern + _END), replacement)
    for pattern, replacement in (
        # Slurm's cgroup plugins (v1 and v2): job_4711/step_batch/task_0, step_0, step_extern
        (r"job_\d+", "job_N"),
        (r"step_[^/\s),;:]+", "step_*"),
        (r"task_\d+", "task_N"),
        # PBS's cgroup hook (pbs_jobs.service/jobid/4711.server) and Torque (torque/4711.server)
        (r"(?<=jobid/)[^/\s),;:]+", "<job>"),
        (r"(?<=torque/)[^/\s),;:]+", "<job>"),
        # a CPU's sysfs directory (cpu0/acpi_cppc): which CPU was probed is placement, the
        # CPUs the process is pinned to (the clock and topology probes also say cpuN)
        (r"(?<=/sys/devices/system/cpu/)cpu\d+", "cpuN"),
        # systemd login sessions and transient units
        (r"session-[0-9a-zA-Z]+\.scope", "session-N.scope"),
        (r"run-[0-9a-zA-Z]+\.scope", "run-N.scope"),
        # container runtimes: docker-<id>.scope, cri-containerd-<id>.scope, /docker/<id>
        (r"([a-z][a-z-]*-)[0-9a-f]{12,}(\.scope)?", r"\1<id>\2"),
        (r"[0-9a-f]{64}", "<id>"),
        # Kubernetes pod UIDs: kubepods-burstable-pod<uid>.slice, kubepods/burstable/pod<uid>
        (
            r"([a-z-]*pod)[0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12}"
            r"(\.slice)?",
            r"\1<uid>\2",
        ),
    )
)


def generalise_source(source: str) -> str:
    """``source`` with the ids of job, step, task, container and session components generalised.

    ``/sys/fs/cgroup/memory/slurm_n1/uid_0/job_4711/step_batch/memory.limit_in_bytes``
    → ``/sys/fs/cgroup/memory/slurm_n1/uid_0/job_N/step_*/memory.limit_in_bytes``: the
    file keeps its place in the hierarchy, and two tasks of one job array describe
    their hardware byte for byte alike.
    """
    if "/" not in source:
        return source
    for pattern, replacement in _IDENTITIES:
        source = pattern.sub(replacement, source)
    return source


def _capture(root: str, environ: Mapping[str, str], nvml: Any) -> Hardware:
    # /proc/self/cgroup and mountinfo are read once, for both the CPU and memory controllers.
    cgroups = read_cgroups(root)
    cpu, sources = _probe_cpu(root, cgroups)
    memory, memory_sources = probe_memory(root, environ, cgroups)
    gpus, gpu_reason, gpu_sources = probe_gpus(environ, nvml)
    scheduler, scheduler_sources = probe_scheduler(environ)
    sources.update(memory_sources)
    sources.update(gpu_sources)
    sources.update(scheduler_sources)
    peak_source = memory_peak_file(root, cgroups)[1]
    sources.update(resource_sources(peak_source))
    sources.update(
        {
            "host": "socket.gethostname()",
            "os": "platform.system() platform.release()",
            "python": "platform.python_implementation() platform.python_version()",
            "machine": "platform.machine()",
        }
    )
    return Hardware(
        host=json_text(socket.gethostname()),
        os=f"{platform.system()} {platform.release()}",
        python=f"{platform.python_implementation()} {platform.python_version()}",
        machine=platform.machine(),
        cpu=cpu,
        memory=memory,
        gpus=gpus,
        gpu_reason=gpu_reason,
        scheduler=scheduler,
        sources={field: generalise_source(where) for field, where in sorted(sources.items())},
    )


def capture_hardware(
    *, root: str = "/", environ: Mapping[str, str] | None = None, nvml: Any = None
) -> Hardware:
    """Describe what this process can use: CPUs, memory, GPUs and the batch allocation.

    ``root`` is where ``/proc`` and ``/sys`` are read from (a fixture tree in tests),
    ``environ`` the environment (default ``os.environ``: Slurm/PBS variables and
    ``CUDA_VISIBLE_DEVICES``), ``nvml`` an object with ``pynvml``'s functions
    (default: ``pynvml``, imported only here). No probe raises: what cannot be read
    is ``None``, and ``Hardware.sources`` says why.

    The live system (``root="/"``, no ``environ``, no ``nvml``) is captured once per
    process, thread-safely; later calls return the same object.

    >>> hw = capture_hardware()
    >>> hw.cpu.logical_cpus >= 1
    True
    """
    if root != "/" or environ is not None or nvml is not None:
        return _capture(root, os.environ if environ is None else environ, nvml)
    cached = _live
    return cached if cached is not None else _capture_live()


def _capture_live() -> Hardware:
    """The live description, captured once per process under ``_live_lock``."""
    global _live
    if getattr(_in_capture, "active", False):
        return _capture("/", os.environ, None)  # re-entered: see _live_lock
    _in_capture.active = True
    try:
        with _live_lock:
            if _live is None:
                _live = _capture("/", os.environ, None)
            return _live
    finally:
        _in_capture.active = False

def _reset_after_fork() -> None:
    """In a forked child: capture again (it may have set its own affinity); the lock may
    have been copied held by a thread the child does not have."""
    global _live, _live_lock, _in_capture
    _live_lock = threading.RLock()
    _in_capture = threading.local()
    _live = None


process_state.register_at_fork("hardware.capture", after_in_child=_reset_after_fork)


def clear_cache() -> None:
    """Forget the cached live description (for tests, or after the process moved cgroup)."""
    global _live
    with _live_lock:
        _live = None
