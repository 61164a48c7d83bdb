"""What a stage used besides wall time, read from counters the system keeps at its boundaries.

``start()`` is called as a recorded stage is entered and ``finish(start())`` as it ends
normally; ``finish`` gives the run's ``resources``. A stage that raised calls
``discard(start())``, which reads nothing. No thread samples anything:

- ``cpu_seconds``: ``getrusage(RUSAGE_SELF)`` user + system time, every thread of the
  process (``getrusage(2)``; microseconds, unlike ``os.times``' clock ticks).
- ``children_cpu_seconds``: ``getrusage(RUSAGE_CHILDREN)``, the children that ended and
  were waited for during the stage. A child still running at the exit is not in it.
- ``memory_peak_bytes``: the process's cgroup v2 ``memory.peak``, opened per stage and
  reset by writing to that open file (Linux 6.12+: the reset is the file's own, nested
  stages and other readers keep theirs); else the process's resident high-water mark
  when the stage raised it. That mark is ``VmHWM`` of ``/proc/self/status``; reading the
  file costs ~20 µs, so it is read once and, where ``getrusage``'s ``ru_maxrss`` mirrors
  it, ``ru_maxrss`` is read instead (~1 µs). The kernel computes ``ru_maxrss`` as the
  larger of the mark and the peak inherited across ``exec`` (``kernel/sys.c``
  ``getrusage``): once the mark reaches the inherited value the two are the same
  quantity (read a moment apart they may differ by what the process touched in between
  and by the kernel's per-CPU batching of the count: up to about 100 KiB on Linux 6.18).
  A lifetime peak is never taken for a stage's; nothing that resets for every reader
  is written.
- ``gpu_energy_joules``: NVML's total-energy counter of the visible GPUs (millijoules).
  NVML is initialised once per process and left initialised (NVML counts its users).

A process forked inside a stage that leaves it in the child: the child's ``getrusage``
starts at 0 at the fork (``fork(2)``), so its ``cpu_seconds`` and
``children_cpu_seconds`` count from the fork, its own use only; its memory peak (its
high-water mark restarts at the fork) and GPU energy (NVML handles are the parent's) are
absent, unless read from the cgroup's ``memory.peak``, which the parent's stage opened
and the child shares.

What cannot be measured is absent, never 0; why is said once, in the hardware
description's ``sources`` (``stagetimer.hardware``). The decision which
counters to read is made at the first recorded stage of a process (again in a forked
child) and costs that stage the probe.
"""

from __future__ import annotations

import contextlib
import os
import resource
from collections.abc import Mapping
from typing import Any

from stagetimer._system import process_state
from stagetimer._system.files import host_path
from stagetimer._system.nvml import load as load_nvml
from stagetimer._system.openflags import CLOEXEC

__all__ = ["Probe", "discard", "finish", "probe", "start", "use"]

_getrusage = resource.getrusage
_SELF = resource.RUSAGE_SELF
_CHILDREN = resource.RUSAGE_CHILDREN
_OPEN_FLAGS = os.O_RDWR | CLOEXEC


class Probe:
    """Which counters this process reads, decided once."""

    __slots__ = ("energy", "mirror", "nvml", "peak_path")

    def __init__(self, peak_path: str | None, nvml: Any, energy: list[Any] | None) -> None:
        #: where the resettable cgroup v2 memory.peak lies (a host path), or None
        self.peak_path = peak_path
        #: whether ru_maxrss equals VmHWM (see the module's docstring)
        self.mirror = False
        self.nvml = nvml
        #: NVML handles of the visible GPUs, every one with the energy counter, or None
        self.energy = energy


_probe: Probe | None = None
# How many forks lie between this process and the one that imported the module: a
# stage's counters taken before a fork are another process's for the child.
_forks = 0


def _vmhwm_kib() -> int | None:
    """``VmHWM`` of ``/proc/self/status`` in KiB (``proc(5)``), None where there is none."""
    try:
        with open("/proc/self/status", "rb") as f:
            text = f.read()
    except OSError:
        return None
    at = text.find(b"\nVmHWM:")
    end = text.find(b"kB", at)
    if at < 0 or end < 0:
        return None
    try:
        return int(text[at + 7 : end])
    except ValueError:  # a kernel that printed something else: no mark
        return None


def _open_energy(environ: Mapping[str, str], nvml: Any) -> tuple[Any, list[Any] | None]:
    from stagetimer.hardware import energy_handles  # here: the probes cost import time

    if nvml is None:
        try:
            nvml = load_nvml()
        except ImportError:
            return None, None
    try:
        nvml.nvmlInit()
    except Exception:  # NVMLError or a broken library inside ctypes: no energy
        return None, None
    handles = energy_handles(nvml, environ)[0]
    if handles is None:
        with contextlib.suppress(Exception):  # nothing to undo when NVML will not shut down
            nvml.nvmlShutdown()
        return None, None
    return nvml, handles


def probe(
    root: str = "/", environ: Mapping[str, str] | None = None, nvml: Any = None
) -> Probe:
    """Decide which counters to read (the live system by default; a fixture in tests)."""
    from stagetimer.hardware import memory_peak_file  # here: the probes cost import time

    path = memory_peak_file(root)[0]
    nvml, energy = _open_energy(os.environ if environ is None else environ, nvml)
    found = Probe(None if path is None else host_path(root, path), nvml, energy)
    hwm = _vmhwm_kib()
    found.mirror = hwm is not None and hwm >= _getrusage(_SELF).ru_maxrss
    return found


def use(found: Probe | None) -> None:
    """Read ``found``'s counters from now on (None: probe again at the next stage)."""
    global _probe
    _probe = found


def _energy_mj(found: Probe) -> int | None:
    nvml = found.nvml
    try:
        return sum(int(nvml.nvmlDeviceGetTotalEnergyConsumption(h)) for h in found.energy or ())
    except Exception:  # a GPU lost mid-run: this stage has no energy
        return None


def start() -> tuple[Any, ...]:
    """The counters at a stage's entry (an opaque tuple for ``finish``)."""
    found = _probe
    if found is None:
        found = _first_probe()
    fd = _reset_peak(found) if found.peak_path is not None else None
    energy = _energy_mj(found) if found.energy is not None else None
    children = _getrusage(_CHILDREN)
    # The high-water mark only where the cgroup's peak is not read (finish() reads one
    # of the two): /proc/self/status costs about 20 µs a stage.
    hwm = None if found.mirror or fd is not None else _vmhwm_kib()
    # The process's CPU time last here and first in finish(): its window is the clock's
    # (perf_counter is read right after and right before), give or take one call.
    mine = _getrusage(_SELF)
    if found.mirror and fd is None:
        hwm = mine.ru_maxrss
    return (
        found, mine.ru_utime + mine.ru_stime, children.ru_utime + children.ru_stime,
        hwm, fd, energy, _forks,
    )


def _first_probe() -> Probe:
    """The counters this process reads, probed at its first stage (and after a fork)."""
    try:
        found = probe()
    except Exception:  # a probe must never fail a stage: read only getrusage then
        found = Probe(None, None, None)
    use(found)
    return found


def _reset_peak(found: Probe) -> int | None:
    """The cgroup's peak file, opened and reset for this stage; None where it would not
    reset (a kernel without the per-file reset, no write permission): this process uses
    the high-water mark from then on."""
    assert found.peak_path is not None
    fd = None
    try:
        fd = os.open(found.peak_path, _OPEN_FLAGS)
        os.write(fd, b"reset\n")
    except OSError:
        if fd is not None:
            os.close(fd)
        found.peak_path = None
        return None
    return fd


def _cgroup_peak(fd: int) -> int | None:
    try:
        text = os.pread(fd, 64, 0)
    except OSError:  # also a descriptor the program closed behind our back (closerange)
        return None
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
    try:
        return int(text) or None
    except ValueError:
        return None


def finish(began: tuple[Any, ...]) -> dict[str, Any]:
    """The run's ``resources``: what the stage used since ``began = start()``."""
    found, cpu0, children0, hwm0, fd, energy0, forks = began
    if forks != _forks:
        # Entered in the parent, left in a forked child: the child's counters started
        # at 0 at the fork; the parent's mark and NVML handles are not the child's.
        cpu0 = children0 = 0.0
        hwm0 = energy0 = None
    mine = _getrusage(_SELF)
    children = _getrusage(_CHILDREN)
    used: dict[str, Any] = {
        "cpu_seconds": round(max(mine.ru_utime + mine.ru_stime - cpu0, 0.0), 6),
        "children_cpu_seconds": round(
            max(children.ru_utime + children.ru_stime - children0, 0.0), 6
        ),
    }
    peak = _cgroup_peak(fd) if fd is not None else _hwm_peak(found, hwm0, mine.ru_maxrss)
    if peak is not None:
        used["memory_peak_bytes"] = peak
    if energy0 is not None:
        energy = _energy_mj(found)
        # A counter that did not move cannot tell the stage's energy: absent, not 0.
        if energy is not None and energy > energy0:
            used["gpu_energy_joules"] = round((energy - energy0) / 1000.0, 3)
    return used


def _hwm_peak(found: Probe, hwm0: int | None, maxrss: int) -> int | None:
    """The stage's memory peak in bytes from the high-water mark (``hwm0`` at its entry,
    KiB), where the cgroup's is not read; None when the stage did not raise the mark."""
    hwm = maxrss if found.mirror else _vmhwm_kib()
    # A mark the stage raised is the stage's peak; one it did not raise is older.
    peak = hwm * 1024 if hwm is not None and hwm0 is not None and hwm > hwm0 else None
    if not found.mirror and hwm is not None and hwm >= maxrss:
        found.mirror = True  # the mark passed the inherited peak: they are one now
    return peak


def discard(began: tuple[Any, ...]) -> None:
    """A stage that raised records nothing: close what ``began = start()`` opened, read
    no counter."""
    fd = began[4]
    if fd is not None:
        with contextlib.suppress(OSError):  # closed behind our back (closerange)
            os.close(fd)


def _reset_after_fork() -> None:
    """A forked child probes again: NVML handles are not the child's, its cgroup may differ.
    Its counters start at the fork: a stage entered before it counts from there."""
    global _probe, _forks
    _probe = None
    _forks += 1


process_state.register_at_fork("record.resources", after_in_child=_reset_after_fork)
