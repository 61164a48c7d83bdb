"""CPUs the process may run on: affinity, physical cores, model name and CPU quota."""

from __future__ import annotations

import os
from collections.abc import Iterable
from itertools import groupby

from stagetimer._system.files import (
    find_field,
    host_path,
    kernel_lines,
    parse_cpu_list,
    read_int,
    read_ints_or_reason,
    read_or_reason,
    read_text,
)
from stagetimer.hardware._cgroup import Cgroups, locate, smallest

__all__ = [
    "affinity",
    "any_cpu",
    "cpu_quota",
    "cpuinfo_blocks",
    "model_name",
    "node_cpus",
    "numa_nodes",
    "physical_cores",
    "sysfs_cpus",
]

_CPU_DIR = "/sys/devices/system/cpu"
_TRIPLE = "physical_package_id/die_id/core_id"


def affinity(root: str) -> tuple[tuple[int, ...], str]:
    """The CPUs the process may run on, sorted, and where that came from.

    Live: ``os.sched_getaffinity(0)``; under a fixture root: ``Cpus_allowed_list``
    of ``/proc/self/status``. Neither reflects a CPU quota (see ``cpu_quota``).
    """
    if root == "/":
        return _live_affinity()
    text, why = read_or_reason(root, "/proc/self/status")
    if text is None:
        return (), why
    value = find_field(text, "Cpus_allowed_list", ":")
    if value is None:
        return (), "/proc/self/status has no Cpus_allowed_list line"
    cpus = parse_cpu_list(value)
    if cpus is None:
        return (), f"/proc/self/status Cpus_allowed_list {value!r} is malformed"
    return cpus, "/proc/self/status Cpus_allowed_list"


def _live_affinity() -> tuple[tuple[int, ...], str]:
    """The live process's CPUs: ``os.sched_getaffinity(0)``, else ``os.cpu_count()``."""
    getaffinity = getattr(os, "sched_getaffinity", None)
    if getaffinity is not None:
        return tuple(sorted(getaffinity(0))), "os.sched_getaffinity(0)"
    count = os.cpu_count()
    if count:
        return tuple(range(count)), "os.cpu_count() (no CPU affinity interface here)"
    return (), "no CPU affinity interface and os.cpu_count() is unknown"


def node_cpus(root: str) -> tuple[int | None, str]:
    """How many CPUs the node has online (for the report's "ran on 4 of 192 CPUs")."""
    path = f"{_CPU_DIR}/online"
    text, why = read_or_reason(root, path)
    if text is None:
        return None, why
    cpus = parse_cpu_list(text)
    if cpus:
        return len(cpus), path
    return None, f"{path} does not parse"


_NODE_DIR = "/sys/devices/system/node"


def numa_nodes(root: str, cpus: tuple[int, ...]) -> tuple[int | None, str]:
    """How many NUMA nodes ``cpus`` span, from each ``nodeN/cpulist`` (or why unknown).

    A node's ``cpulist`` lists its CPUs in the kernel's list format
    (``Documentation/ABI/stable/sysfs-devices-node``). A kernel built without NUMA has
    no ``/sys/devices/system/node``: unknown, not 1.
    """
    if not cpus:
        return None, "no affine CPUs known"
    nodes = _node_numbers(root)
    if isinstance(nodes, str):
        return None, nodes
    affine = set(cpus)
    spanned = 0
    for node in nodes:
        listed = parse_cpu_list(read_text(root, f"{_NODE_DIR}/node{node}/cpulist") or "")
        if listed is None:
            return None, f"{_NODE_DIR}/node{node}/cpulist does not parse"
        spanned += not affine.isdisjoint(listed)
    return spanned, f"{_NODE_DIR}/nodeN/cpulist over the affine CPUs"


def _node_numbers(root: str) -> list[int] | str:
    """The NUMA nodes of ``/sys/devices/system/node``, sorted, or why there are none."""
    nodes = _numbered(root, _NODE_DIR, "node")
    if nodes is None:
        return f"{_NODE_DIR} does not exist (a kernel without NUMA support)"
    return nodes or f"{_NODE_DIR} lists no node"


def _numbered(root: str, directory: str, prefix: str) -> list[int] | None:
    """The numbers N of ``directory``'s ``{prefix}N`` entries, sorted; None when unreadable."""
    try:
        names = os.listdir(host_path(root, directory))
    except OSError:
        return None
    start = len(prefix)
    return sorted(int(n[start:]) for n in names if n.startswith(prefix) and n[start:].isdigit())


def sysfs_cpus(root: str) -> tuple[int, ...]:
    """The CPU numbers with a ``/sys/devices/system/cpu/cpuN`` directory."""
    return tuple(_numbered(root, _CPU_DIR, "cpu") or ())


def _core_key(root: str, cpu: int) -> tuple[tuple[int, ...], str] | str:
    """``cpu``'s siblings or (package, die, core), and the file(s) read; or why neither is known."""
    topology = f"{_CPU_DIR}/cpu{cpu}/topology"
    siblings = _siblings(root, topology)
    if siblings is not None:
        return siblings
    found = read_ints_or_reason(root, f"{topology}/physical_package_id", f"{topology}/core_id")
    if isinstance(found, str):
        return found
    package, core = found
    die = read_int(root, f"{topology}/die_id")
    # core_id alone repeats across packages (cputopology.rst): key on the triple.
    return (package, die if die is not None else 0, core), _TRIPLE


def _siblings(root: str, topology: str) -> tuple[tuple[int, ...], str] | None:
    """The CPUs sharing the core of the ``topology`` directory, and the file that lists
    them; None where neither file lists any."""
    for name in ("core_cpus_list", "thread_siblings_list"):
        siblings = parse_cpu_list(read_text(root, f"{topology}/{name}") or "")
        if siblings:  # () where the file is missing or empty
            return siblings, name
    return None


def any_cpu(reason: str, cpu: int) -> str:
    """``reason`` about CPU ``cpu`` with its number written ``N`` (``.../cpuN/...``).

    Reasons enter the hashed description: the CPU a process happens to be pinned to is
    placement, not hardware, and must not split one machine's id.
    """
    return reason.replace(f"/cpu{cpu}/", "/cpuN/")


def physical_cores(root: str, cpus: tuple[int, ...]) -> tuple[int | None, str]:
    """Distinct physical cores among ``cpus``, from sysfs topology (or why unknown).

    Siblings share one ``core_cpus_list`` (older kernels: ``thread_siblings_list``);
    without it, distinct (``physical_package_id``, ``die_id``, ``core_id``).
    """
    if not cpus:
        return None, "no affine CPUs known"
    keys: set[tuple[int, ...]] = set()
    used: set[str] = set()
    # CPUs of a sibling list already counted: with SMT each sibling's list is the same one.
    counted: set[int] = set()
    for cpu in cpus:
        if cpu in counted:
            continue
        found = _core_key(root, cpu)
        if isinstance(found, str):
            return None, f"no topology for a CPU: {any_cpu(found, cpu)}"
        key, how = found
        keys.add(key)
        used.add(how)
        if how != _TRIPLE:
            counted.update(key)
    how = " or ".join(sorted(used))
    return len(keys), f"{_CPU_DIR}/cpuN/topology/{how} over the affine CPUs"


def cpuinfo_blocks(root: str) -> list[dict[str, str]] | str:
    """``/proc/cpuinfo`` as one dict per processor block (keys stripped), or why it is unreadable.

    Parsed once per capture and passed to ``model_name`` and ``kvm_cpuinfo_mhz``.
    """
    text, why = read_or_reason(root, "/proc/cpuinfo")
    if text is None:
        return why
    lines = kernel_lines(text)
    # A blank line ends a processor block.
    runs = groupby(lines, key=lambda line: bool(line.strip()))
    blocks = [_fields(group) for filled, group in runs if filled]
    # ARM kernels print shared lines (Hardware, Revision) in a block without "processor".
    return [b for b in blocks if "processor" in b]


def _fields(lines: Iterable[str]) -> dict[str, str]:
    """The ``key: value`` lines of one ``/proc/cpuinfo`` block, both sides stripped."""
    pairs = (line.partition(":") for line in lines)
    return {key.strip(): value.strip() for key, sep, value in pairs if sep}


def model_name(
    root: str, cpus: tuple[int, ...], blocks: list[dict[str, str]] | str | None = None
) -> tuple[str | None, bool, str, str]:
    """``(model name, under a hypervisor, name source, hypervisor source)`` from ``/proc/cpuinfo``.

    Several distinct names among the affine CPUs (hybrid parts) are joined with " / ".
    The ``hypervisor`` flag is the CPUID hypervisor bit: the name is then what the
    hypervisor shows the guest and may not identify the host's SKU. ``blocks`` is
    ``cpuinfo_blocks(root)`` when the caller already has it.
    """
    if blocks is None:
        blocks = cpuinfo_blocks(root)
    if isinstance(blocks, str):
        return None, False, blocks, blocks
    names = _model_names(blocks, cpus)
    guest = any("hypervisor" in block.get("flags", "").split() for block in blocks)
    guest_source = _GUEST_SOURCES[guest]
    if not names:
        return None, guest, "/proc/cpuinfo has no \"model name\" line", guest_source
    return " / ".join(names), guest, "/proc/cpuinfo model name", guest_source


_GUEST_SOURCES = {
    True: "/proc/cpuinfo flags: hypervisor",
    False: "/proc/cpuinfo flags: no hypervisor flag",
}


def _model_names(blocks: list[dict[str, str]], cpus: tuple[int, ...]) -> list[str]:
    """The distinct model names of the affine CPUs' blocks (of every block when none is
    affine), in the order of ``/proc/cpuinfo``."""
    affine = set(cpus)
    chosen = [b for b in blocks if _processor(b) in affine] or blocks
    return list(filter(None, dict.fromkeys(b.get("model name") for b in chosen)))


def _processor(block: dict[str, str]) -> int | None:
    """The block's ``processor`` number, or None when it has none or it is not a number."""
    number = block.get("processor", "")
    return int(number) if number.isdigit() else None


def _v2_quota(root: str, directory: str) -> tuple[float | None, str]:
    path = f"{directory}/cpu.max"
    try:
        quota, period = map(int, (read_text(root, path) or "").split())
    except ValueError:  # not two numbers: "max" (no quota), unreadable or malformed
        return None, path
    return _in_cpus(quota, period), path


def _v1_quota(root: str, directory: str) -> tuple[float | None, str]:
    path = f"{directory}/cpu.cfs_quota_us"
    # cpu.cfs_quota_us is -1 when there is no quota (sched-bwc.rst).
    quota = _in_cpus(read_int(root, path), read_int(root, f"{directory}/cpu.cfs_period_us"))
    if quota is None:
        return None, path
    return quota, f"{path} / cpu.cfs_period_us"


def _in_cpus(quota: int | None, period: int | None) -> float | None:
    """A quota in CPUs: ``quota / period``; None where either is unknown or not > 0."""
    if quota is None or period is None or min(quota, period) <= 0:
        return None
    return quota / period


def cpu_quota(root: str, cgroups: Cgroups | str | None = None) -> tuple[float | None, str]:
    """The smallest CPU bandwidth quota, in CPUs, over the process's group and its ancestors.

    v2 ``cpu.max`` is ``$MAX $PERIOD`` (``max`` = none); v1 ``cpu.cfs_quota_us`` /
    ``cpu.cfs_period_us`` (kernel ``Documentation/scheduler/sched-bwc.rst``). A quota
    limits time, not which CPUs: throttling inflates wall-clock time. ``cgroups`` is
    ``read_cgroups(root)`` when the caller already has it.
    """
    located = locate(root, "cpu", cgroups)
    if isinstance(located, str):
        return None, located
    read = _v2_quota if located.version == 2 else _v1_quota
    quota, where = smallest(read(root, directory) for directory in located.dirs)
    if quota is None:
        return None, located.none_in("CPU quota")
    return round(quota, 4), located.noted(where)
