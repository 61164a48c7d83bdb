"""Human-readable text for a hardware description: the full listing and a one-line summary.

The listing is built from the stored description's fields, whatever they are, so a field
added to the model shows without a change here.
"""

from __future__ import annotations

import re
import textwrap
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from stagetimer._system.units import format_bytes, format_rate
from stagetimer.hardware._model import (
    CpuInfo,
    GpuInfo,
    Hardware,
    MemoryInfo,
    description,
    hardware_id,
)

__all__ = ["WIDTH", "format_hardware", "plain_words", "summary_line"]


def _mhz(value: Any) -> str:
    return f"{value:g} MHz"


def _listed(value: Any) -> str:
    return ",".join(str(item) for item in value) if value else "(none)"


_TIMES = "\N{MULTIPLICATION SIGN}"

_FORMATS: dict[str, Callable[[Any], str]] = {
    "memory.limit_bytes": format_bytes,
    "memory.node_total_bytes": format_bytes,
    "memory.high_bytes": format_bytes,
    "memory_usable_bytes": format_bytes,
    "cpu.clock_min_mhz": _mhz,
    "cpu.clock_max_mhz": _mhz,
    "max_memory_clock_mhz": _mhz,
    "peak_memory_bandwidth_bytes_per_s": format_rate,
    "cpu.affinity": _listed,
    "memory_bus_width_bits": lambda v: f"{v} bits",
    "cpu.quota_cpus": lambda v: f"{v:g} CPUs",
}


#: Columns the text fits in (a terminal of 100 columns).
WIDTH = 100

# NVML's error classes (pynvml's NVMLError_<Name>, from nvml.h's NVML_ERROR_* codes) in words.
_NVML_WORDS = {
    "LibraryNotFound": "no NVIDIA driver (NVML library not found)",
    "DriverNotLoaded": "NVIDIA driver not loaded",
    "NoPermission": "no permission to query the GPU (NVML)",
    "Uninitialized": "NVML not initialised",
    "NotSupported": "not supported by this GPU or driver",
    "FunctionNotFound": "not in this driver's NVML (driver too old)",
    "NotFound": "no such GPU",
    "GpuIsLost": "GPU lost (fell off the bus or stopped responding)",
    "LibRmVersionMismatch": "NVIDIA driver and kernel module versions differ (reload the driver)",
    "InsufficientPower": "GPU power cables not connected",
    "ResetRequired": "GPU needs a reset",
    "Timeout": "NVML timed out",
    "Unknown": "unknown NVML error",
}
_NVML_ERROR = re.compile(r"NVMLError_(\w+)")
_AT_INIT = re.compile(r"NVML unavailable: NVMLError_(\w+) at nvmlInit")


def _nvml_words(match: re.Match[str]) -> str:
    return _NVML_WORDS.get(match.group(1), match.group(0))


def plain_words(text: str) -> str:
    """``text`` with NVML's error class names said in words.

    ``"NVML unavailable: NVMLError_LibraryNotFound at nvmlInit"`` →
    ``"no NVIDIA driver (NVML library not found)"``; unknown names are kept.
    """
    text = _AT_INIT.sub(
        lambda m: _nvml_words(m) if m.group(1) in _NVML_WORDS else m.group(0), text
    )
    return _NVML_ERROR.sub(_nvml_words, text)


_GPU_ITEM = re.compile(r"^gpus\[\d+\]\.")


def _value(path: str, value: Any) -> str:
    """``value`` in words: by the format of its field (``gpus[0].`` dropped) or of its
    last name, else as plain text."""
    if value is None:
        return "-"
    field = _GPU_ITEM.sub("", path)
    fmt = _FORMATS.get(field) or _FORMATS.get(field.rsplit(".", 1)[-1]) or _plain
    return fmt(value)


def _plain(value: Any) -> str:
    if isinstance(value, dict):
        return " ".join(f"{k}={v}" for k, v in sorted(value.items())) or "-"
    if isinstance(value, list):
        return _listed(value)
    return plain_words(str(value))


def _rows(stored: dict[str, Any]) -> list[tuple[str, Any]]:
    """(dotted path, value) of every field of the stored description but its sources.

    Sections (objects at the top level) are opened one level; a list of objects
    (``gpus``) gives a count row, then ``gpus[0].name`` and so on.
    """
    rows: list[tuple[str, Any]] = []
    for key, value in stored.items():
        if key != "sources":
            rows.extend(_rows_of(key, value))
    return rows


def _rows_of(key: str, value: Any) -> list[tuple[str, Any]]:
    """The rows of one top-level field of the stored description."""
    if isinstance(value, dict):
        return _fields_of(key, value)
    if _is_table(value):
        rows: list[tuple[str, Any]] = [(key, f"{len(value)} listed")]
        for slot, item in enumerate(value):
            rows.extend(_fields_of(f"{key}[{slot}]", item))
        return rows
    if isinstance(value, list) and key == "gpus":
        return [(key, None)]  # no GPU: one row that says why
    return [(key, value)]


def _is_table(value: Any) -> bool:
    """Whether ``value`` is a non-empty list of objects (``gpus``)."""
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _fields_of(prefix: str, section: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(f"{prefix}.{name}", inner) for name, inner in section.items()]


def _wrapped(text: str, indent: int) -> list[str]:
    """``text`` wrapped into :data:`WIDTH` columns under column ``indent`` (under column 4
    where a word, such as a long path, would not fit there); words are never split."""
    # A word that would leave "(from" alone on the first line moves the text to column 4.
    if max(len(word) for word in text.split()) > WIDTH - indent - len("(from "):
        indent = 4
    return textwrap.wrap(
        text, WIDTH, initial_indent=" " * indent, subsequent_indent=" " * indent,
        break_on_hyphens=False, break_long_words=False,
    )


_ITEM = re.compile(r"\[\d+\]")


def _note(
    group: list[tuple[str, Any, str]], source: str | None, said: set[tuple[str, str]]
) -> str:
    """What to say after ``group`` (rows sharing ``source``): nothing when it was said for
    the same field of an earlier list item, or is one of the group's values."""
    if source is None:
        return ""
    words = _source_words(source, group[-1][1])
    key = (_ITEM.sub("[*]", group[0][0]), words)
    if key in said or any(words == text for _, _, text in group):
        return ""
    said.add(key)
    missing = all(value in (None, {}, []) for _, value, _ in group)
    return f"({words})" if missing else f"(from {words})"


def _source_words(source: str, value: Any) -> str:
    """``source`` in plain words; ``environment`` alone where ``value`` already names the
    variables."""
    words = plain_words(source)
    if isinstance(value, dict) and value and words.startswith("environment: "):
        return "environment"
    return words


#: A row as shown: its dotted path, its stored value and that value in words.
_Row = tuple[str, Any, str]


def format_hardware(hw: Hardware) -> str:
    """The description, its ``hardware_id`` and where each value came from, in 100 columns.

    ``memory.node_total_bytes  23.5 GiB  (from /proc/meminfo MemTotal)``; a missing value
    shows ``-`` and why it is missing. Consecutive fields with the same source or reason
    are followed by it once, on its own lines, and a GPU's sources are said for the first
    GPU only where they are the same. Every field of the stored description is shown
    (``stagetimer hardware --json`` prints it whole).
    """
    rows = _rows(description(hw))
    width = min(max(len(path) for path, _ in rows), 28)
    shown = [(path, value, _value(path, value)) for path, value in rows]
    # Short values align their notes; a longer one pushes its note along or below.
    value_width = min(max(len(text) for _, _, text in shown), 22)
    lines = [f"hardware_id  {hardware_id(hw)}", ""]
    said: set[tuple[str, str]] = set()
    for group, source in _groups(shown, hw.sources):
        note = _note(group, source, said)
        lines.extend(_group_lines(group, note, width, value_width))
    lines += _resource_lines(hw)
    return "\n".join(line.rstrip() for line in lines) + "\n"


def _groups(shown: list[_Row], sources: dict[str, str]) -> Iterator[tuple[list[_Row], str | None]]:
    """Each run of consecutive rows whose source is the same, with that source (a row
    without a source is a group of its own)."""
    index = 0
    while index < len(shown):
        source = sources.get(shown[index][0])
        end = index + 1
        while end < len(shown) and source is not None and sources.get(shown[end][0]) == source:
            end += 1
        yield shown[index:end], source
        index = end


def _group_lines(group: list[_Row], note: str, width: int, value_width: int) -> list[str]:
    """The lines of one group: a single row with its note on one line where it fits, else
    each row, then the note wrapped under the values."""
    if note and len(group) == 1:
        path, _, text = group[0]
        one_line = _with_note(path.ljust(width), text, note, value_width)
        if one_line is not None:
            return [one_line]
    lines: list[str] = []
    for path, _, text in group:
        lines.extend(_field_lines(path.ljust(width), text))
    if note:
        lines.extend(_wrapped(note, width + 2))
    return lines


def _with_note(head: str, text: str, note: str, value_width: int) -> str | None:
    """A row and its note on one line, the note aligned where it fits; None when even the
    unaligned line is wider than :data:`WIDTH`."""
    aligned = f"{head}  {text.ljust(value_width)}  {note}"
    one_line = aligned if len(aligned) <= WIDTH else f"{head}  {text}  {note}"
    return one_line if len(one_line) <= WIDTH else None


def _field_lines(head: str, text: str) -> list[str]:
    """A row on one line, or a long value (scheduler.env) continued under its column."""
    line = f"{head}  {text}"
    if len(line) <= WIDTH:
        return [line]
    first, *more = _wrapped(text, len(head) + 2)
    return [head + first[len(head) :], *more]


def _resource_lines(hw: Hardware) -> list[str]:
    """Where each stage's ``resources`` come from in this process, or why one is missing."""
    said = [(path, where) for path, where in sorted(hw.sources.items())
            if path.startswith("resources.")]
    if not said:
        return []
    lines = ["", "what a recorded stage used (resources of each run):"]
    for path, where in said:
        lines.append(f"  {path.removeprefix('resources.')}")
        lines.extend(_wrapped(plain_words(where), 4))
    return lines


def summary_line(hw: Hardware) -> str:
    """One line for a report, e.g. ``AMD EPYC x2 (2 cores), 1 GiB limit (cgroup_v1), no GPU``.

    The ``x`` before the logical CPU count is printed as a multiplication sign.
    """
    return ", ".join((_cpu_words(hw.cpu), _memory_words(hw.memory), _gpu_words(hw.gpus)))


def _cpu_words(cpu: CpuInfo) -> str:
    cores = f"{cpu.physical_cores} cores" if cpu.physical_cores is not None else "cores unknown"
    return f"{cpu.model_name or 'unknown CPU'} {_TIMES}{cpu.logical_cpus} ({cores})"


def _memory_words(memory: MemoryInfo) -> str:
    if memory.limit_bytes is not None:
        return f"{format_bytes(memory.limit_bytes)} limit ({memory.source})"
    if memory.node_total_bytes is not None:
        return f"no memory limit (node {format_bytes(memory.node_total_bytes)})"
    return "memory unknown"


def _gpu_words(gpus: tuple[GpuInfo, ...]) -> str:
    if not gpus:
        return "no GPU"
    counts = Counter(gpu.name or "unknown GPU" for gpu in gpus)
    return " + ".join(f"{count}{_TIMES} {name}" for name, count in counts.items())
