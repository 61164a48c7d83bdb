"""The report: every artifact directory under some paths, each stage summarised, as JSON or text.

Everything here only reads (the walk is ``tree.scan_tree``). Problems (a missing
path, a sidecar that does not parse) are returned as ``Problem`` values beside the
directories that could be read, so one bad directory never hides the others.
Values a writer could not have stored (a negative or non-finite ``seconds``, a
negative ``run_idx``, a ``total_seconds`` that is not the sum of its runs) are kept
as stored, named in a warning and left out of the statistics.

This module summarises each stage and gathers an artifact's warnings; the records
it builds are in ``report_model``, the warnings' words in ``report_warnings`` and
the span of the runs in time in ``wall_span`` (all three named here too).
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Callable, Iterable
from itertools import repeat
from typing import Any

import attrs

from stagetimer._analysis.attempts.scan import Attempt
from stagetimer._analysis.compare.ids import PairCache, distinct_ids
from stagetimer._analysis.eta import StageProgress, stage_progress
from stagetimer._analysis.nesting import nested_runs
from stagetimer._analysis.raw import raw_seconds, raw_stages
from stagetimer._analysis.report_model import ArtifactReport, LegacyRun, StageStats
from stagetimer._analysis.report_warnings import (
    allocation_note,
    hardware_warning,
    metadata_warning,
    software_warning,
    value_flags,
)
from stagetimer._analysis.run_parts import run_parts
from stagetimer._analysis.seeds import by_seed
from stagetimer._analysis.stats import moments
from stagetimer._analysis.tree import Artifact, Problem, scan_tree
from stagetimer._analysis.wall_span import start_range, wall_span
from stagetimer._format import HARDWARE_FILE, LEGACY_KEYS, MAX_RUN_IDX, continued_stage
from stagetimer._store.rules import is_stage, valid_durations
from stagetimer.hardware import Hardware, hardware_differences
from stagetimer.software import Software

__all__ = [
    "ArtifactReport",
    "LegacyRun",
    "Problem",
    "StageStats",
    "build_report",
    "expected_runs",
    "report_from",
    "wall_span",
]

_get: Callable[[dict[str, Any], str], Any] = dict.get
# map(_get, runs, _RUN_IDX): each run's run_idx, gathered in C (repeat() is endless)
_RUN_IDX, _HARDWARE_ID, _STARTED_AT = repeat("run_idx"), repeat("hardware_id"), repeat("started_at")
_LABEL = repeat("label")


def expected_runs(stage: dict[str, Any]) -> int | None:
    """The stage's ``expected_runs`` where it is one a recorder can write; else None."""
    value = stage.get("expected_runs")
    if type(value) is int and 0 < value <= MAX_RUN_IDX:  # what a recorder can write
        return value
    return None


def _stage_stats(
    name: str, stage: dict[str, Any], stored: dict[str, Any], keys: set[str]
) -> tuple[StageStats, list[str]]:
    """``stage``'s statistics (``by_seed``'s view of ``stored``: a seed once) and the
    warnings for ``stored``: what no writer stores is looked for in every rank's run,
    against the stored total."""
    # Ten thousand stages in a suite: each field is gathered in C (map over dict.get), and
    # the statistics are moments' (summarise's arithmetic without its Summary object).
    runs = stage["runs"]
    seconds = raw_seconds(stage)
    run_idxs = list(map(_get, runs, _RUN_IDX))
    flags, kept, total, flagged = _checked(name, stage, stored, seconds, run_idxs)
    mean, median, stdev, low, high = _moments(kept, total)
    ids = list(map(_get, runs, _HARDWARE_ID))
    starts = list(map(_get, runs, _STARTED_AT))
    if None in starts:
        starts = [t for t in starts if t is not None]
    first, last = start_range(starts)
    parts = run_parts(run_idxs, list(map(_get, runs, _LABEL))) if "label" in keys else None
    stats = StageStats(
        name, len(runs), total, mean, median, stdev, low, high, distinct_ids(runs, "hardware_id"),
        tuple(seconds), ids.count(None), flagged, expected_runs(stage),
        first, last,
        software_ids=distinct_ids(runs, "software_id"),
        seed_runs=None if parts is None else parts[0],
        part_name=None if parts is None else parts[2],
    )
    return stats, flags


def _checked(
    name: str, stage: dict[str, Any], stored: dict[str, Any], seconds: list[Any],
    run_idxs: list[Any],
) -> tuple[list[str], list[float], float, int]:
    """The warnings for ``stored``'s values; the valid durations of ``stage`` (``seconds``,
    a seed once) and their total; how many of ``stored``'s runs were flagged."""
    if stage is stored:  # the usual stage: no ranks
        flags, kept, total = value_flags(name, stage, seconds, run_idxs)
        return flags, kept, total, len(seconds) - len(kept)
    every = raw_seconds(stored)
    flags, every_kept, _ = value_flags(
        name, stored, every, list(map(_get, stored["runs"], _RUN_IDX))
    )
    kept = valid_durations(seconds)
    return flags, kept, sum(kept, 0.0), len(every) - len(every_kept)


def _moments(kept: list[float], total: float) -> tuple[float | None, ...]:
    """The mean, median, standard deviation, least and greatest of the valid durations
    (None each where there is none)."""
    if not kept:
        return None, None, None, None, None
    mean, median, stdev, ordered = moments(kept, total)
    return mean, median, stdev, ordered[0], ordered[-1]


@attrs.frozen
class _Caches:
    """The differences between two descriptions, computed once per report (an id is its
    content; a suite's directories share their machines)."""

    hardware: PairCache[Hardware] = attrs.field(factory=lambda: PairCache(hardware_differences))
    software: PairCache[Software] = attrs.field(factory=lambda: _software_cache())


def _software_cache() -> PairCache[Software]:
    from stagetimer.software import software_differences  # imported when first needed

    return PairCache(software_differences)


def _progress(
    artifact: Artifact, stages: list[StageStats], now: datetime.datetime
) -> dict[str, StageProgress]:
    """The progress of the stages told how many runs to expect, every seed running them
    (a continuation runs only for the interrupted seeds)."""
    tracked = {s.name: s.expected_runs for s in stages
               if s.expected_runs is not None and continued_stage(s.name) is None}
    if not tracked:
        return {}
    by_stage = _attempts_of(artifact, tracked, now)
    return {
        name: stage_progress(name, by_stage[name], now, expected=tracked[name])
        for name in tracked
    }


def _attempts_of(artifact: Artifact, names: Iterable[str], now: datetime.datetime,
                 ) -> dict[str, list[Attempt]]:
    """The attempts of each stage of ``names`` in the artifact's own directory."""
    from stagetimer._analysis.attempts.scan import scan_attempts

    by_stage: dict[str, list[Attempt]] = {name: [] for name in names}
    real = os.path.realpath(artifact.path)
    found, _ = scan_attempts([artifact.path], now)  # what it could not read: said by lost
    for attempt in found:
        if attempt.stage in by_stage and os.path.realpath(attempt.directory) == real:
            by_stage[attempt.stage].append(attempt)
    return by_stage


def _analyse(artifact: Artifact, caches: _Caches, now: datetime.datetime) -> ArtifactReport:
    """One artifact directory's report: each stage summarised, every warning gathered."""
    data = artifact.data
    stages: list[StageStats] = []
    legacy_runs: list[LegacyRun] = []
    warnings: list[str] = []
    referenced: dict[str, int] = {}
    with_parent: list[tuple[int, list[dict[str, Any]]]] = []
    for name, stored in raw_stages(data):
        # A seed of a distributed launch counts once, as its slowest rank.
        stage, spread = by_seed(stored)
        runs = stage["runs"]
        keys: set[str] = set().union(*runs)
        stats, flags = _stage_stats(name, stage, stored, keys)
        if spread is not None:
            stats = attrs.evolve(stats, rank_spread=spread)
        stages.append(stats)
        warnings.extend(flags)
        if "parent" in keys:
            with_parent.append((len(stages) - 1, runs))
        _note_run_keys(name, runs, keys, legacy_runs, warnings)
        _count_references(stats, runs, referenced)
        _note_mixed_machines(stats, artifact, caches, warnings)
    if with_parent:
        _count_nested(data, stages, with_parent)
    hardware = _referenced_hardware(referenced, artifact.hardware.hardware, warnings)
    return ArtifactReport(
        artifact=artifact,
        stages=tuple(stages),
        hardware=hardware,
        warnings=tuple(warnings),
        legacy_top_level=_legacy_top_level(data),
        legacy_runs=tuple(legacy_runs),
        progress=_progress(artifact, stages, now),
    )


def _legacy_top_level(data: dict[str, Any]) -> dict[str, Any]:
    """The legacy keys at the top of a timings file that hold no stage."""
    return {k: v for k, v in data.items() if k in LEGACY_KEYS and not is_stage(v)}


def _count_nested(
    data: dict[str, Any],
    stages: list[StageStats],
    with_parent: list[tuple[int, list[dict[str, Any]]]],
) -> None:
    """Give each stage (at its position in ``stages``, with the runs it counts) whose runs
    hold a ``parent`` how many of them, and their seconds, lie inside their parent's run
    (``nesting``): a total across stages counts them there."""
    nested = nested_runs(data)
    for position, runs in with_parent:
        inside = {"runs": [run for run in runs if id(run) in nested]}
        stages[position] = attrs.evolve(
            stages[position], nested_runs=len(inside["runs"]),
            nested_seconds=sum(valid_durations(raw_seconds(inside)), 0.0),
        )


def _note_run_keys(
    name: str,
    runs: list[dict[str, Any]],
    keys: set[str],
    legacy_runs: list[LegacyRun],
    warnings: list[str],
) -> None:
    """Keys beyond a run's own fields: legacy values go to ``legacy_runs``, metadata that
    differs between the runs to ``warnings``."""
    if not keys.isdisjoint(LEGACY_KEYS):
        legacy_runs.extend(
            LegacyRun(name, r.get("run_idx"), r.get("label"),
                      {k: r[k] for k in LEGACY_KEYS if k in r})
            for r in runs if not r.keys().isdisjoint(LEGACY_KEYS)
        )
    if (mixed := metadata_warning(name, runs, keys)) is not None:
        warnings.append(mixed)


def _count_references(
    stats: StageStats, runs: list[dict[str, Any]], referenced: dict[str, int]
) -> None:
    """Add to ``referenced`` how many of the stage's runs name each hardware id."""
    if len(stats.hardware_ids) == 1:
        [hw_id] = stats.hardware_ids
        referenced[hw_id] = (
            referenced.get(hw_id, 0) + stats.runs - stats.runs_without_hardware
        )
    else:
        for run in runs:
            if (named := run.get("hardware_id")) is not None:
                referenced[named] = referenced.get(named, 0) + 1


def _note_mixed_machines(
    stats: StageStats, artifact: Artifact, caches: _Caches, warnings: list[str]
) -> None:
    """Warn when the stage's runs span hardware or software that differ."""
    if len(stats.hardware_ids) > 1:
        note = hardware_warning(stats, artifact.hardware.hardware, caches.hardware)
        if note is not None:
            warnings.append(note)
    if len(stats.software_ids) > 1:
        note = software_warning(stats, artifact.hardware.software, caches.software)
        if note is not None:
            warnings.append(note)


def _referenced_hardware(
    referenced: dict[str, int], described: dict[str, Hardware], warnings: list[str]
) -> dict[str, Hardware | None]:
    """Each referenced hardware id -> its description (None: undescribed, with a warning),
    and a note where the allocation was smaller than its node."""
    hardware: dict[str, Hardware | None] = {}
    for hw_id, count in referenced.items():
        hw = hardware[hw_id] = described.get(hw_id)
        if hw is None:
            warnings.append(
                f"{hw_id}: {count} run(s) refer to it but {HARDWARE_FILE} does not describe it"
            )
        elif (note := allocation_note(hw_id, hw)) is not None:
            warnings.append(note)
    return hardware


def report_from(artifacts: Iterable[Artifact]) -> list[ArtifactReport]:
    """The report of artifacts already read (``scan_tree`` / ``load_tree``)."""
    caches = _Caches()
    now = datetime.datetime.now(datetime.timezone.utc)
    return [_analyse(a, caches, now) for a in artifacts]


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
