"""Human-readable text for a hardware description: the full listing and a one-line summary."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import attrs

from stagetimer.hardware._model import GpuInfo, Hardware, hardware_id

__all__ = ["format_bytes", "format_hardware", "summary_line"]


def format_bytes(value: int) -> str:
    """Binary units, one decimal: ``1073741824`` → ``"1.0 GiB"``."""
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if size < 1024 or unit == "PiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def _mhz(value: Any) -> str:
    return f"{value:g} MHz"


def _bandwidth(value: Any) -> str:
    return f"{value / 1e9:.1f} GB/s"


def _cpus(value: Any) -> str:
    return ",".join(str(c) for c in value) if value else "(none)"


_TIMES = "\N{MULTIPLICATION SIGN}"

_FORMATS: dict[str, Callable[[Any], str]] = {
    "memory.limit_bytes": format_bytes,
    "memory.node_total_bytes": format_bytes,
    "memory.high_bytes": format_bytes,
    "memory_usable_bytes": format_bytes,
    "cpu.clock_min_mhz": _mhz,
    "cpu.clock_max_mhz": _mhz,
    "max_memory_clock_mhz": _mhz,
    "peak_memory_bandwidth_bytes_per_s": _bandwidth,
    "cpu.affinity": _cpus,
    "memory_bus_width_bits": lambda v: f"{v} bits",
    "cpu.quota_cpus": lambda v: f"{v:g} CPUs",
}


def _value(path: str, value: Any) -> str:
    if value is None:
        return "-"
    leaf = path.rsplit(".", 1)[-1]
    fmt = _FORMATS.get(path) or _FORMATS.get(leaf)
    return fmt(value) if fmt else str(value)


def _fields(cls: type[Any]) -> list[str]:
    return [a.name for a in attrs.fields(cls)]


def format_hardware(hw: Hardware) -> str:
    """The description, its ``hardware_id`` and the source of each value, one field a line.

    ``memory.limit_bytes  1.0 GiB  (from /sys/fs/cgroup/memory/x/memory.limit_in_bytes)``;
    a missing value shows ``-`` and why it is missing.
    """
    rows: list[tuple[str, Any]] = [
        (name, getattr(hw, name)) for name in ("host", "os", "python", "machine")
    ]
    for section in ("cpu", "memory"):
        obj = getattr(hw, section)
        rows.extend((f"{section}.{name}", getattr(obj, name)) for name in _fields(type(obj)))
    gpu_rows: list[tuple[str, Any]] = []
    for slot, gpu in enumerate(hw.gpus):
        gpu_rows.extend((f"gpus[{slot}].{name}", getattr(gpu, name)) for name in _fields(GpuInfo))
    rows.append(("gpus", f"{len(hw.gpus)} GPU(s)" if hw.gpus else None))
    rows.extend(gpu_rows)
    rows.append(("gpu_reason", hw.gpu_reason))
    rows.append(("scheduler.kind", hw.scheduler.kind))
    rows.append(("scheduler.job_id", hw.scheduler.job_id))
    env = " ".join(f"{k}={v}" for k, v in sorted(hw.scheduler.env.items()))
    rows.append(("scheduler.env", env or None))
    width = max(len(path) for path, _ in rows)
    shown = [(path, _value(path, value)) for path, value in rows]
    value_width = min(max(len(v) for _, v in shown), 40)
    lines = [f"hardware_id  {hardware_id(hw)}", ""]
    for (path, value), (_, text) in zip(rows, shown, strict=True):
        source = hw.sources.get(path)
        if source is None or source == text:
            note = ""
        elif value is None:
            note = f"  ({source})"
        else:
            note = f"  (from {source})"
        lines.append(f"{path.ljust(width)}  {text.ljust(value_width)}{note}".rstrip())
    return "\n".join(lines) + "\n"


def summary_line(hw: Hardware) -> str:
    """One line for a report, e.g. ``AMD EPYC x2 (2 cores), 1.0 GiB limit (cgroup_v1), no GPU``.

    The ``x`` before the logical CPU count is printed as a multiplication sign.
    """
    cpu = hw.cpu
    cores = f"{cpu.physical_cores} cores" if cpu.physical_cores is not None else "cores unknown"
    parts = [f"{cpu.model_name or 'unknown CPU'} {_TIMES}{cpu.logical_cpus} ({cores})"]
    memory = hw.memory
    if memory.limit_bytes is not None:
        parts.append(f"{format_bytes(memory.limit_bytes)} limit ({memory.source})")
    elif memory.node_total_bytes is not None:
        parts.append(f"no memory limit (node {format_bytes(memory.node_total_bytes)})")
    else:
        parts.append("memory unknown")
    if not hw.gpus:
        parts.append("no GPU")
    else:
        counts = Counter(gpu.name or "unknown GPU" for gpu in hw.gpus)
        counted = [f"{count}{_TIMES} {name}" for name, count in counts.items()]
        parts.append(" + ".join(counted))
    return ", ".join(parts)
