"""The report: every artifact directory under some paths, each stage summarised, as JSON or text.

Everything here only reads (the walk is ``tree.scan_tree``). Problems (a missing
path, a sidecar that does not parse) are returned as ``Problem`` values beside the
directories that could be read, so one bad directory never hides the others.
Values a writer could not have stored (a negative or non-finite ``seconds``, a
negative ``run_idx``, a ``total_seconds`` that is not the sum of its runs) are kept
as stored, named in a warning and left out of the statistics.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from itertools import repeat
from typing import Any

import attrs

from stagetimer._analysis.raw import raw_seconds, raw_stages
from stagetimer._analysis.seeds import RankSpread, by_seed
from stagetimer._analysis.stats import moments
from stagetimer._analysis.tree import Artifact, Problem, scan_tree
from stagetimer._errors import short_repr
from stagetimer._format import HARDWARE_FILE, LEGACY_KEYS, MAX_RUN_IDX, RUN_FIELDS
from stagetimer._store.load import as_float
from stagetimer._store.records import RunTiming
from stagetimer._store.rules import is_stage, is_valid_seconds, valid_durations
from stagetimer.hardware import Hardware, format_bytes
from stagetimer.software import Software

__all__ = [
    "ArtifactReport",
    "LegacyRun",
    "Problem",
    "StageStats",
    "build_report",
    "report_from",
    "wall_span",
]

_RUN_FIELD_SET = frozenset(RUN_FIELDS)
_NOT_METADATA = _RUN_FIELD_SET | frozenset(LEGACY_KEYS)
_get: Callable[[dict[str, Any], str], Any] = dict.get
# map(_get, runs, _RUN_IDX): each run's run_idx, gathered in C (repeat() is endless)
_RUN_IDX, _HARDWARE_ID, _STARTED_AT = repeat("run_idx"), repeat("hardware_id"), repeat("started_at")
_SOFTWARE_ID = repeat("software_id")


@attrs.frozen
class StageStats:
    """One stage of one artifact directory, summarised over the runs a writer could have
    written (``flagged_runs`` others are left out)."""

    name: str
    runs: int
    total_seconds: float
    mean_seconds: float | None
    median_seconds: float | None
    stdev_seconds: float | None
    min_seconds: float | None
    max_seconds: float | None
    #: the distinct hardware ids of the runs, in order of first appearance
    hardware_ids: tuple[str, ...]
    #: each run's seconds as stored, in file order
    run_seconds: tuple[float, ...]
    #: runs without a hardware_id (legacy files)
    runs_without_hardware: int
    #: runs left out of the statistics (a value no writer could have stored)
    flagged_runs: int = 0
    #: how many runs the recorder was told to expect (``Recorder(expected_runs=n)``)
    expected_runs: int | None = None
    #: the earliest and latest ``started_at`` of its runs (None: none stored)
    first_started_at: str | None = attrs.field(default=None, eq=False)
    last_started_at: str | None = attrs.field(default=None, eq=False)
    #: the distinct software ids of the runs, in order of first appearance
    software_ids: tuple[str, ...] = ()
    #: runs of a distributed launch: each seed counts once (``runs``, the statistics) as
    #: its slowest rank; this says how far its ranks were apart. None without ranks.
    rank_spread: RankSpread | None = None


@attrs.frozen
class LegacyRun:
    """``system_ram_gb`` / ``gpu_ram_gb`` that a legacy writer stored in one run."""

    stage: str
    run_idx: int | None
    label: str | None
    values: dict[str, Any]


@attrs.frozen
class ArtifactReport:
    """Everything the report says about one artifact directory."""

    path: str
    stages: tuple[StageStats, ...]
    #: every hardware id the runs refer to -> its description (None: not in the sidecar)
    hardware: dict[str, Hardware | None]
    warnings: tuple[str, ...]
    #: top-level legacy values of the file (they describe the writer, not the reader)
    legacy_top_level: dict[str, Any]
    legacy_runs: tuple[LegacyRun, ...]
    #: the path it was found under, and its path relative to that
    root: str = ""
    relpath: str = "."
    artifact: Artifact | None = attrs.field(default=None, eq=False, repr=False)

    def stored_runs(self, stage: str) -> list[Any]:
        """The runs of ``stage`` as parsed from the file (mappings, shape checked): what a
        summary over every run reads without building 100,000 run objects."""
        if self.artifact is None:
            return []
        value: Any = self.artifact.data.get(stage)
        return value["runs"] if is_stage(value) else []

    def runs(self, stage: str) -> tuple[RunTiming, ...]:
        """The runs of ``stage`` as ``load_timings`` gives them (built on first use)."""
        if self.artifact is None:
            return ()
        timing = self.artifact.timings.stages.get(stage)
        return timing.runs if timing is not None else ()


def _where(name: str, run_idx: object, position: int) -> str:
    if type(run_idx) is int and run_idx >= 0:
        return f"stage {name} run {run_idx}"
    return f"stage {name} run #{position + 1} in the file"


def _flags(
    name: str, stage: dict[str, Any], seconds: list[float], indices: list[Any]
) -> tuple[list[str], list[float], float]:
    """Warnings for the values no writer could have stored, the seconds kept and their sum."""
    kept = valid_durations(seconds)
    kept_total = sum(kept, 0.0)
    flags: list[str] = []
    if len(kept) != len(seconds):
        for position, value in enumerate(seconds):
            if not is_valid_seconds(value):
                why = "negative" if value < 0 else "not a finite number"
                flags.append(
                    f"{_where(name, indices[position], position)}: seconds {value:.17g} is "
                    f"{why}; no writer stores that, so it is left out of the statistics"
                )
    numbered = indices if None not in indices else [i for i in indices if i is not None]
    if numbered and min(numbered) < 0:
        flags.extend(
            f"stage {name} run #{position + 1} in the file: run_idx {run_idx} is negative; "
            "no writer stores that"
            for position, run_idx in enumerate(indices) if run_idx is not None and run_idx < 0
        )
    stored = stage.get("total_seconds")
    if not flags and stored is not None:
        summed = kept_total
        if not math.isclose(as_float(stored), summed, rel_tol=1e-9, abs_tol=1e-9):
            shown = f"{stored:.17g}" if type(stored) is float else short_repr(stored)
            flags.append(
                f"stage {name}: total_seconds {shown} is not the sum of its runs "
                f"({summed:.17g}); the report uses the runs"
            )
    return flags, kept, kept_total


def _timestamp(text: Any) -> float | None:
    """``started_at`` (ISO 8601, UTC, ``...Z``) as POSIX seconds; None when unreadable."""
    if type(text) is not str:
        return None
    try:
        # Python 3.10's fromisoformat does not read "Z"
        moment = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def _stage_end(report: ArtifactReport, name: str) -> float | None:
    """The latest start + seconds over the stage's runs (None: no run has both)."""
    if report.artifact is None:
        return None
    stage = dict(raw_stages(report.artifact.data)).get(name)
    if stage is None:
        return None
    ends = [
        start + seconds
        for text, seconds in zip(map(_get, stage["runs"], _STARTED_AT), raw_seconds(stage),
                                 strict=True)
        if is_valid_seconds(seconds) and (start := _timestamp(text)) is not None
    ]
    return max(ends, default=None)


def _one_form(texts: list[str]) -> bool:
    """The writer's one form (``...Z``, one length): then the strings sort as the times do."""
    return len({len(t) for t in texts}) == 1 and all(t.endswith("Z") for t in texts)


def wall_span(reports: Iterable[ArtifactReport]) -> tuple[float, float] | None:
    """The POSIX times of the earliest start and of the latest end (start + seconds) over
    the runs with a readable ``started_at`` and a valid duration; None when none has one.

    A suite holds 100,000 runs, and parsing every start would cost more than the rest of
    the report. Each stage already knows its first and last start and its longest run:
    its last start plus its longest run bounds its end, so only the stages whose bound
    lies past the latest end found so far are read run by run. A stage's first and last
    start in the writer's one form (``...Z``, one length) are taken to be the earliest
    and latest (one writer writes one form); the other stages are always read run by run.
    """
    stages = [
        (report, stats) for report in reports for stats in report.stages
        if stats.first_started_at is not None and stats.last_started_at is not None
        and stats.max_seconds is not None
    ]
    if not stages:
        return None
    firsts = [stats.first_started_at for _, stats in stages if stats.first_started_at]
    if _one_form(firsts):
        first = _timestamp(min(firsts))
    else:
        first = min((t for t in map(_timestamp, firsts) if t is not None), default=None)
    bounds: list[tuple[float, int]] = []
    parsed: dict[str, float | None] = {}  # suites repeat their timestamps across directories
    for position, (_, stats) in enumerate(stages):
        edges = [stats.first_started_at or "", stats.last_started_at or ""]
        latest = None
        if _one_form(edges):
            latest = parsed.get(edges[1], math.nan)
            if latest is not None and math.isnan(latest):
                latest = parsed[edges[1]] = _timestamp(edges[1])
        bound = math.inf if latest is None else latest + (stats.max_seconds or 0.0)
        bounds.append((bound, position))
    bounds.sort(reverse=True)
    last: float | None = None
    for bound, position in bounds:
        if last is not None and bound <= last:
            break  # no stage left can end later
        report, stats = stages[position]
        end = _stage_end(report, stats.name)
        if end is not None and (last is None or end > last):
            last = end
    return None if first is None or last is None else (first, last)


def _expected_runs(stage: dict[str, Any]) -> int | None:
    value = stage.get("expected_runs")
    if type(value) is int and 0 < value <= MAX_RUN_IDX:  # what a recorder can write
        return value
    return None


def _shown(value: Any) -> Any:
    """A hashable stand-in for a metadata value, equal for equal JSON values."""
    if value is None or type(value) in (str, int, float, bool):
        return (type(value) is bool, value)  # True and 1 are different settings
    return json.dumps(value, sort_keys=True)


def _metadata_warning(
    name: str, runs: Sequence[dict[str, Any]], present: set[str]
) -> str | None:
    """A key whose values differ between the runs, so the mean mixes unlike runs.

    A key holding a different value in every one of three or more runs (a seed, a
    score) describes each run, not a setting, and is not a mixture.
    """
    if len(runs) < 2:
        return None
    mixed = []
    for key in present - _NOT_METADATA:
        values = [r.get(key, _ABSENT) for r in runs]
        if values.count(values[0]) == len(values) and type(values[0]) is not bool:
            continue  # the common case, at C speed
        counts: dict[Any, int] = {}
        for value in values:
            shown = _ABSENT if value is _ABSENT else _shown(value)
            counts[shown] = counts.get(shown, 0) + 1
        if len(counts) < 2 or (len(counts) == len(runs) >= 3):
            continue
        ordered = sorted(counts.items(), key=lambda kv: -kv[1])
        described = ", ".join(f"{_value_text(key, v)} in {n}" for v, n in ordered[:4])
        more = f" and {len(ordered) - 4} more values" if len(ordered) > 4 else ""
        mixed.append(f"{described}{more}")
    if not mixed:
        return None
    mixed.sort()
    return (
        f"stage {name}: its runs differ in metadata ({'; '.join(mixed)} runs); its mean "
        "mixes unlike runs"
    )


def _value_text(key: str, shown: Any) -> str:
    if shown is _ABSENT:
        return f"no {key}"
    if isinstance(shown, tuple):
        return f"{key}={json.dumps(shown[1])}"
    return f"{key}={shown}"


_ABSENT = object()


def _hardware_warning(
    stats: StageStats, described: dict[str, Hardware]
) -> str | None:
    """Runs on descriptions that differ in a field that changes a duration (or unknown)."""
    from stagetimer.hardware import format_differences, hardware_differences

    ids = stats.hardware_ids
    unknown = [i for i in ids if i not in described]
    if unknown:
        return (
            f"stage {stats.name}: its {stats.runs} runs span {len(ids)} hardware ids "
            f"({', '.join(ids)}), not all described; their times may not be comparable"
        )
    base = ids[0]
    parts = []
    for other in ids[1:]:
        differences = hardware_differences(described[base], described[other])
        if differences:
            parts.append(f"{base} vs {other}: {format_differences(differences)}")
    if not parts:
        return None
    return (
        f"stage {stats.name}: its {stats.runs} runs were measured on hardware that differs "
        f"({'; '.join(parts)}); their times are not comparable"
    )


def _allocation_note(hw_id: str, hw: Hardware) -> str | None:
    """Where the process could use less than the node: its times do not speak for the node."""
    parts = []
    node_cpus = hw.cpu.node_logical_cpus
    if node_cpus and 0 < hw.cpu.logical_cpus < node_cpus:
        parts.append(f"ran on {hw.cpu.logical_cpus} of {node_cpus} CPUs")
    quota = hw.cpu.quota_cpus
    if quota is not None and hw.cpu.logical_cpus and quota < hw.cpu.logical_cpus:
        parts.append(f"a CPU quota of {quota:g} of the {hw.cpu.logical_cpus} CPUs it may run on")
    limit, node = hw.memory.limit_bytes, hw.memory.node_total_bytes
    if limit is not None and node is not None and limit < node:
        parts.append(f"{format_bytes(limit)} of the node's {format_bytes(node)} memory")
    if not parts:
        return None
    return f"{hw_id}: the allocation was smaller than the node: {', '.join(parts)}"


def _distinct(ids: list[str | None]) -> tuple[str, ...]:
    """The hardware ids in order of first appearance, without None."""
    distinct = dict.fromkeys(ids)
    distinct.pop(None, None)
    return tuple(distinct)  # type: ignore[arg-type]  # None was just removed


def _software_warning(
    stats: StageStats, described: Mapping[str, Software]
) -> str | None:
    """Runs of one stage that ran different software: name what differs."""
    from stagetimer.software import format_software_differences, software_differences

    ids = stats.software_ids
    unknown = [i for i in ids if i not in described]
    if unknown:
        return (
            f"stage {stats.name}: its runs span {len(ids)} software ids "
            f"({', '.join(ids)}), not all described; they may not have run the same code"
        )
    base = ids[0]
    parts = []
    for other in ids[1:]:
        found = software_differences(described[base], described[other])
        if found:
            words = format_software_differences(found, described[base], described[other])
            parts.append(f"{base} vs {other}: {words}")
    if not parts:
        return None
    return (
        f"stage {stats.name}: its runs ran different software ({'; '.join(parts)}); "
        "their times may not be comparable"
    )


def _stage_stats(name: str, stage: dict[str, Any]) -> tuple[StageStats, list[str]]:
    # Ten thousand stages in a suite: each field is gathered in C (map over dict.get), and
    # the statistics are moments' (summarise's arithmetic without its Summary object).
    runs = stage["runs"]
    seconds = raw_seconds(stage)
    indices = list(map(_get, runs, _RUN_IDX))
    flags, kept, total = _flags(name, stage, seconds, indices)
    mean = median = stdev = low = high = None
    if kept:
        mean, median, stdev, ordered = moments(kept, total)
        low, high = ordered[0], ordered[-1]
    ids = list(map(_get, runs, _HARDWARE_ID))
    starts = list(map(_get, runs, _STARTED_AT))
    if None in starts:
        starts = [t for t in starts if t is not None]
    stats = StageStats(
        name, len(runs), total, mean, median, stdev, low, high, _distinct(ids),
        tuple(seconds), ids.count(None), len(runs) - len(kept), _expected_runs(stage),
        min(starts) if starts else None, max(starts) if starts else None,
        software_ids=_distinct(list(map(_get, runs, _SOFTWARE_ID))),
    )
    return stats, flags


def _analyse(artifact: Artifact) -> ArtifactReport:
    data = artifact.data
    described = artifact.hardware.hardware
    stages: list[StageStats] = []
    legacy_runs: list[LegacyRun] = []
    warnings: list[str] = []
    referenced: dict[str, int] = {}
    for name, stored in raw_stages(data):
        # A seed of a distributed launch counts once, as its slowest rank.
        stage, spread = by_seed(stored)
        stats, flags = _stage_stats(name, stage)
        if spread is not None:
            stats = attrs.evolve(stats, rank_spread=spread)
        stages.append(stats)
        warnings.extend(flags)
        runs = stage["runs"]
        keys = set().union(*runs)
        if not keys <= _RUN_FIELD_SET:
            if not keys.isdisjoint(LEGACY_KEYS):
                legacy_runs.extend(
                    LegacyRun(name, r.get("run_idx"), r.get("label"),
                              {k: r[k] for k in LEGACY_KEYS if k in r})
                    for r in runs if not r.keys().isdisjoint(LEGACY_KEYS)
                )
            if (mixed := _metadata_warning(name, runs, keys)) is not None:
                warnings.append(mixed)
        if len(stats.hardware_ids) == 1:
            [hw_id] = stats.hardware_ids
            referenced[hw_id] = (
                referenced.get(hw_id, 0) + stats.runs - stats.runs_without_hardware
            )
        else:
            for run in runs:
                if (hw_id := run.get("hardware_id")) is not None:
                    referenced[hw_id] = referenced.get(hw_id, 0) + 1
        if len(stats.hardware_ids) > 1:
            note = _hardware_warning(stats, described)
            if note is not None:
                warnings.append(note)
        if len(stats.software_ids) > 1:
            note = _software_warning(stats, artifact.hardware.software)
            if note is not None:
                warnings.append(note)
    hardware: dict[str, Hardware | None] = {}
    for hw_id, count in referenced.items():
        hw = hardware[hw_id] = described.get(hw_id)
        if hw is None:
            warnings.append(
                f"{hw_id}: {count} run(s) refer to it but {HARDWARE_FILE} does not describe it"
            )
        elif (note := _allocation_note(hw_id, hw)) is not None:
            warnings.append(note)
    return ArtifactReport(
        path=artifact.path,
        stages=tuple(stages),
        hardware=hardware,
        warnings=tuple(warnings),
        legacy_top_level={
            k: v for k, v in data.items() if k in LEGACY_KEYS and not is_stage(v)
        },
        legacy_runs=tuple(legacy_runs),
        root=artifact.root,
        relpath=artifact.relpath,
        artifact=artifact,
    )


def report_from(artifacts: Iterable[Artifact]) -> list[ArtifactReport]:
    """The report of artifacts already read (``scan_tree`` / ``load_tree``)."""
    return [_analyse(a) for a in artifacts]


def build_report(
    paths: Iterable[str | os.PathLike[str]],
) -> tuple[list[ArtifactReport], list[Problem]]:
    """Read every artifact directory at or under ``paths``; never writes anything.

    A directory whose ``timings.json`` cannot be read is left out (its problem is
    returned); one whose ``timings_hardware.json`` cannot be read is reported with
    its hardware undescribed, and the problem is returned too.
    """
    artifacts, problems = scan_tree(paths)
    return report_from(artifacts), problems
