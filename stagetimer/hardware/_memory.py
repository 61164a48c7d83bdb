"""Memory the process may use: the smallest finite cgroup limit, else the Slurm request.

Node RAM (``/proc/meminfo`` ``MemTotal``) is recorded beside the limit and never
substituted for it (docs/hardware.md).
"""

from __future__ import annotations

import functools
import importlib
import posixpath
from collections.abc import Callable, Mapping

from stagetimer._system.files import find_field, read_or_reason, read_text
from stagetimer.hardware._cgroup import Cgroups, Located, locate, smallest
from stagetimer.hardware._model import MemoryInfo
from stagetimer.hardware._scheduler import cpus_on_node, gpus_on_node

__all__ = [
    "cgroup_memory_limit",
    "is_unlimited",
    "node_total_bytes",
    "probe_memory",
    "slurm_memory_limit",
]

_MIB = 1024 * 1024
# cgroup v1 reports "unlimited" as PAGE_COUNTER_MAX * PAGE_SIZE = 2^63 - PAGE_SIZE
# (mm/page_counter.c; 9223372036854771712 for 4 KiB pages, ...759424 for 16 KiB,
# ...710272 for 64 KiB), and as 2^63 - 1 on old res_counter kernels (CentOS 7).
# Every value within 1 MiB of 2^63 is one of these sentinels, whatever the page size.
_UNLIMITED_FLOOR = 2**63 - 2**20


def is_unlimited(value: int) -> bool:
    """True for cgroup v1's "unlimited" sentinels (2^63 - PAGE_SIZE for any page size, 2^63 - 1)."""
    return value >= _UNLIMITED_FLOOR


def _finite(text: str | None) -> int | None:
    """A finite byte count; None for no text, ``max`` or other non-numbers, negatives, sentinels."""
    if text is None:
        return None
    try:
        value = int(text.strip())
    except ValueError:
        return None
    return None if value < 0 or is_unlimited(value) else value


def _read_limit(root: str, path: str) -> int | None:
    """A finite byte count from a ``memory.max``-like file; None for ``max``, sentinels, absence."""
    return _finite(read_text(root, path))


def _hierarchical_limit(root: str, directory: str) -> int | None:
    """``hierarchical_memory_limit`` of v1 ``memory.stat``: the kernel's minimum over all ancestors.

    It includes ancestors a container cannot see (cgroup-v1/memory.rst, section 5.2).
    """
    text = read_text(root, posixpath.join(directory, "memory.stat"))
    return _finite(find_field(text, "hierarchical_memory_limit", " ") if text is not None else None)


def cgroup_memory_limit(
    root: str, cgroups: Cgroups | str | None = None
) -> tuple[int | None, str | None, int | None, str, str]:
    """``(limit, "cgroup_v1"|"cgroup_v2"|None, high, limit source, high source)``.

    The limit is the smallest finite ``memory.max`` (v2) or ``memory.limit_in_bytes``
    and ``hierarchical_memory_limit`` (v1) from the process's group up to the mount
    point, as OpenJDK's ``CgroupUtil::adjust_controller`` walks; v2 ``memory.high``
    is the smallest finite value over the same walk. A missing file is no limit.
    ``cgroups`` is ``read_cgroups(root)`` when the caller already has it.
    """
    located = locate(root, "memory", cgroups)
    if isinstance(located, str):
        return None, None, None, located, f"no cgroup v2 memory.high: {located}"
    if located.version == 2:
        return _v2_limits(root, located)
    return _v1_limit(root, located)


def _v2_limits(
    root: str, located: Located
) -> tuple[int | None, str | None, int | None, str, str]:
    """``cgroup_memory_limit`` on cgroup v2: ``memory.max`` and ``memory.high``."""
    read = functools.partial(_read_limit, root)
    limit, limit_path = located.smallest_over("memory.max", read)
    high, high_path = located.smallest_over("memory.high", read)
    if high is None:
        high_path = located.none_in("finite memory.high")
    if limit is None:
        return None, None, high, located.none_in("finite memory.max"), high_path
    return limit, "cgroup_v2", high, located.noted(limit_path), high_path


def _v1_limit(
    root: str, located: Located
) -> tuple[int | None, str | None, int | None, str, str]:
    """``cgroup_memory_limit`` on cgroup v1: ``memory.limit_in_bytes`` and
    ``hierarchical_memory_limit``; v1 has no ``memory.high``."""
    read = functools.partial(_read_limit, root)
    leaf = located.dirs[0]
    limit, limit_path = smallest(
        [
            located.smallest_over("memory.limit_in_bytes", read),
            (_hierarchical_limit(root, leaf), f"{leaf}/memory.stat (hierarchical_memory_limit)"),
        ]
    )
    high_reason = "cgroup v1 has no memory.high (memory is on cgroup v1)"
    if limit is None:
        return None, None, None, located.none_in("finite memory.limit_in_bytes"), high_reason
    return limit, "cgroup_v1", None, located.noted(limit_path), high_reason


def _mib_variable(environ: Mapping[str, str], name: str) -> int | str:
    raw = environ[name].strip()
    try:
        value = int(raw)
    except ValueError:
        return f"{name}={raw!r} is not a whole number of MiB"
    if value < 0:
        return f"{name}={raw!r} is negative"
    return value


_Count = Callable[[Mapping[str, str]], tuple[int | None, str]]
# Each Slurm memory variable (MiB) and what it is per on this node (None: per node already).
_SLURM_MEMORY: tuple[tuple[str, _Count | None], ...] = (
    ("SLURM_MEM_PER_NODE", None),
    ("SLURM_MEM_PER_CPU", cpus_on_node),
    ("SLURM_MEM_PER_GPU", gpus_on_node),
)


def slurm_memory_limit(environ: Mapping[str, str]) -> tuple[int | None, str]:
    """The Slurm memory request on this node in bytes, and the variables it came from.

    sbatch(1), OUTPUT ENVIRONMENT VARIABLES: ``SLURM_MEM_PER_NODE``,
    ``SLURM_MEM_PER_CPU`` and ``SLURM_MEM_PER_GPU`` are MiB and mutually exclusive;
    ``--mem=0`` (a value of 0) asks for the whole node, which is no finite limit.
    """
    for name, count in _SLURM_MEMORY:
        if name in environ:
            return _slurm_request(environ, name, count)
    return None, "no SLURM_MEM_PER_NODE, SLURM_MEM_PER_CPU or SLURM_MEM_PER_GPU"


def _slurm_request(
    environ: Mapping[str, str], name: str, count: _Count | None
) -> tuple[int | None, str]:
    """The request on this node of the Slurm memory variable ``name``, which is set."""
    value = _mib_variable(environ, name)
    if isinstance(value, str):
        return None, value
    if value == 0:
        return None, f"{name}=0 asks for the whole node: no finite limit"
    if count is None:
        return value * _MIB, name
    units, units_source = count(environ)
    if units is None:
        return None, f"{name} is set but {units_source}"
    return value * units * _MIB, f"{name} * {units_source}"


def node_total_bytes(root: str) -> tuple[int | None, str]:
    """Total RAM of the node from ``/proc/meminfo`` ``MemTotal`` (kB), with psutil off Linux."""
    text, reason = read_or_reason(root, "/proc/meminfo")
    if text is not None:
        return _mem_total(text)
    if root == "/":
        return _psutil_total(reason)
    return None, reason


def _mem_total(meminfo: str) -> tuple[int | None, str]:
    """``MemTotal`` of ``/proc/meminfo`` in bytes, or why it has none."""
    fields = (find_field(meminfo, "MemTotal", ":") or "").split()
    if not fields or not fields[0].isdecimal():  # not isdigit: int() refuses "²"
        return None, "/proc/meminfo has no MemTotal line"
    unit = 1024 if fields[1:2] == ["kB"] else 1
    return int(fields[0]) * unit, "/proc/meminfo MemTotal"


def _psutil_total(reason: str) -> tuple[int | None, str]:
    """The node's RAM from psutil, where ``/proc/meminfo`` cannot be read (``reason``)."""
    try:
        # Only off Linux: /proc/meminfo is cheaper and always there on Linux.
        psutil = importlib.import_module("psutil")
    except ImportError:
        return None, f"{reason}; psutil is not installed"
    try:
        return int(psutil.virtual_memory().total), "psutil.virtual_memory().total"
    except Exception as err:  # psutil raises its own errors on exotic systems
        return None, f"{reason}; psutil failed: {type(err).__name__}"


def probe_memory(
    root: str, environ: Mapping[str, str], cgroups: Cgroups | str | None = None
) -> tuple[MemoryInfo, dict[str, str]]:
    """The memory part of the description and the source of each of its fields."""
    limit, source, high, limit_where, high_where = cgroup_memory_limit(root, cgroups)
    if limit is None:
        slurm_limit, slurm_where = slurm_memory_limit(environ)
        if slurm_limit is not None:
            limit, source, limit_where = slurm_limit, "slurm", slurm_where
        else:
            limit_where = f"{limit_where}; {slurm_where}"
    total, total_where = node_total_bytes(root)
    if limit is None:
        limit_where += "; node RAM is in memory.node_total_bytes, never used as the limit"
    info = MemoryInfo(
        limit_bytes=limit, source=source, node_total_bytes=total, high_bytes=high
    )
    sources = {
        "memory.limit_bytes": limit_where,
        "memory.source": limit_where,
        "memory.node_total_bytes": total_where,
        "memory.high_bytes": high_where,
    }
    return info, sources
