"""The warnings the report gives about one stage or one hardware description.

Values no writer could have stored (``value_flags``), runs that differ in metadata,
hardware or software (their mean mixes unlike runs), and an allocation smaller than
its node. Each returns text (or None); ``report.py`` decides when to ask.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from stagetimer._analysis.compare.ids import PairCache
from stagetimer._analysis.compare.metadata import ABSENT_TEXT, NOT_METADATA, metadata_values
from stagetimer._analysis.report_model import StageStats
from stagetimer._errors import short_repr
from stagetimer._store.load import as_float
from stagetimer._store.rules import is_valid_seconds, valid_durations
from stagetimer.hardware import Difference, Hardware, format_bytes
from stagetimer.software import Software

__all__ = [
    "allocation_note",
    "hardware_warning",
    "metadata_warning",
    "software_warning",
    "value_flags",
]
_Description = TypeVar("_Description")


def _where(name: str, run_idx: object, position: int) -> str:
    if type(run_idx) is int and run_idx >= 0:
        return f"stage {name} run {run_idx}"
    return f"stage {name} run #{position + 1} in the file"


def value_flags(
    name: str, stage: dict[str, Any], seconds: list[float], indices: list[Any]
) -> tuple[list[str], list[float], float]:
    """Warnings for the values no writer could have stored, the seconds kept and their sum."""
    kept = valid_durations(seconds)
    kept_total = sum(kept, 0.0)
    flags: list[str] = []
    if len(kept) != len(seconds):
        flags += _invalid_seconds(name, seconds, indices)
    if _any_negative(indices):
        flags += _negative_indices(name, indices)
    stored = stage.get("total_seconds")
    if not flags and stored is not None:
        flags += _total_flag(name, stored, kept_total)
    return flags, kept, kept_total


def _invalid_seconds(name: str, seconds: list[float], indices: list[Any]) -> list[str]:
    return [
        f"{_where(name, indices[position], position)}: seconds {value:.17g} is "
        f"{'negative' if value < 0 else 'not a finite number'}; no writer stores that, so "
        "it is left out of the statistics"
        for position, value in enumerate(seconds) if not is_valid_seconds(value)
    ]


def _any_negative(indices: list[Any]) -> bool:
    """Whether a run's ``run_idx`` is negative (runs without one aside)."""
    numbered = indices if None not in indices else [i for i in indices if i is not None]
    return bool(numbered) and min(numbered) < 0


def _negative_indices(name: str, indices: list[Any]) -> list[str]:
    return [
        f"stage {name} run #{position + 1} in the file: run_idx {run_idx} is negative; "
        "no writer stores that"
        for position, run_idx in enumerate(indices) if run_idx is not None and run_idx < 0
    ]


def _total_flag(name: str, stored: Any, summed: float) -> list[str]:
    """A stored ``total_seconds`` that is not the sum of the runs kept."""
    if math.isclose(as_float(stored), summed, rel_tol=1e-9, abs_tol=1e-9):
        return []
    shown = f"{stored:.17g}" if type(stored) is float else short_repr(stored)
    return [f"stage {name}: total_seconds {shown} is not the sum of its runs "
            f"({summed:.17g}); the report uses the runs"]

#: a value whose equal values (``==``, one type) have one JSON text: -0.0 == 0.0 and
#: {"a": 1} == {"a": 1.0} have two
_PLAIN = (str, int, type(None))


def metadata_warning(
    name: str, runs: Sequence[dict[str, Any]], present: set[str]
) -> str | None:
    """A key whose values differ between the runs, so the mean mixes unlike runs.

    Values differ as ``compare.metadata.metadata_values`` says (``compare``'s rule): a key
    holding a different value in every one of three or more runs (a seed, a score)
    describes each run, not a setting, and is not a mixture.
    """
    if len(runs) < 2:
        return None
    mixed = [line for key in present - NOT_METADATA if (line := _mixed(runs, key)) is not None]
    if not mixed:
        return None
    mixed.sort()
    return (
        f"stage {name}: its runs differ in metadata ({'; '.join(mixed)} runs); its mean "
        "mixes unlike runs"
    )


def _mixed(runs: Sequence[dict[str, Any]], key: str) -> str | None:
    """The values of ``key`` in ``runs`` and how many runs hold each, where they differ."""
    if _one_plain_value([r.get(key, _MISSING) for r in runs]):
        return None  # the common case
    counts = metadata_values(runs, key)
    if counts is None or len(counts) < 2:
        return None
    ordered = sorted(counts.items(), key=lambda kv: -kv[1][1])
    described = ", ".join(f"{_value_text(key, text)} in {n}" for text, (_, n) in ordered[:4])
    more = f" and {len(ordered) - 4} more values" if len(ordered) > 4 else ""
    return f"{described}{more}"


def _one_plain_value(values: list[Any]) -> bool:
    """Whether every value is one plain value of one type, at C speed (bool is not int
    here: True == 1)."""
    first = values[0]
    return (type(first) in _PLAIN and values.count(first) == len(values)
            and len(set(map(type, values))) == 1)


def _value_text(key: str, text: str) -> str:
    return f"no {key}" if text == ABSENT_TEXT else f"{key}={text}"


_MISSING = object()


def allocation_note(hw_id: str, hw: Hardware) -> str | None:
    """Where the process could use less than the node: its times do not speak for the node."""
    found = (_fewer_cpus(hw), _cpu_quota(hw), _less_memory(hw))
    parts = [part for part in found if part is not None]
    if not parts:
        return None
    return f"{hw_id}: the allocation was smaller than the node: {', '.join(parts)}"


def _fewer_cpus(hw: Hardware) -> str | None:
    node_cpus = hw.cpu.node_logical_cpus
    if node_cpus and 0 < hw.cpu.logical_cpus < node_cpus:
        return f"ran on {hw.cpu.logical_cpus} of {node_cpus} CPUs"
    return None


def _cpu_quota(hw: Hardware) -> str | None:
    quota = hw.cpu.quota_cpus
    if quota is not None and hw.cpu.logical_cpus and quota < hw.cpu.logical_cpus:
        return f"a CPU quota of {quota:g} of the {hw.cpu.logical_cpus} CPUs it may run on"
    return None


def _less_memory(hw: Hardware) -> str | None:
    limit, node = hw.memory.limit_bytes, hw.memory.node_total_bytes
    if limit is not None and node is not None and limit < node:
        return f"{format_bytes(limit)} of the node's {format_bytes(node)} memory"
    return None


def _mixed_warning(
    ids: tuple[str, ...],
    described: Mapping[str, _Description],
    cache: PairCache[_Description],
    words: Callable[[list[Difference], _Description, _Description], str],
    unknown: tuple[str, str],
    differs: tuple[str, str],
) -> str | None:
    """``unknown`` around the ids where one is undescribed; else ``differs`` around what
    differs between the first description and each other (None: nothing differs)."""
    if any(i not in described for i in ids):
        return unknown[0] + ", ".join(ids) + unknown[1]
    base = ids[0]
    parts = []
    for other in ids[1:]:
        found = cache.between(base, described[base], other, described[other])
        if found:
            parts.append(f"{base} vs {other}: {words(found, described[base], described[other])}")
    return differs[0] + "; ".join(parts) + differs[1] if parts else None


def hardware_warning(
    stats: StageStats, described: Mapping[str, Hardware], cache: PairCache[Hardware]
) -> str | None:
    """Runs on descriptions that differ in a field that changes a duration (or unknown)."""
    from stagetimer.hardware import format_differences

    head = f"stage {stats.name}: its {stats.runs} runs "
    return _mixed_warning(
        stats.hardware_ids, described, cache, lambda found, _, __: format_differences(found),
        (f"{head}span {len(stats.hardware_ids)} hardware ids (",
         "), not all described; their times may not be comparable"),
        (f"{head}were measured on hardware that differs (", "); their times are not comparable"),
    )


def software_warning(
    stats: StageStats, described: Mapping[str, Software], cache: PairCache[Software]
) -> str | None:
    """Runs of one stage that ran different software: name what differs."""
    from stagetimer.software import format_software_differences

    head = f"stage {stats.name}: its runs "
    return _mixed_warning(
        stats.software_ids, described, cache, format_software_differences,
        (f"{head}span {len(stats.software_ids)} software ids (",
         "), not all described; they may not have run the same code"),
        (f"{head}ran different software (", "); their times may not be comparable"),
    )
