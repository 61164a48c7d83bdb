"""The text report: one block per artifact directory, then one line for the whole suite.

Every line passes through ``escape_text``: stage names, labels, metadata, paths and
hardware strings come from files someone else wrote, and a terminal must never act
on what they hold.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from stagetimer._analysis.eta import Eta, StageProgress, suite_eta
from stagetimer._analysis.nesting import NESTED_NOTE
from stagetimer._analysis.report import ArtifactReport, LegacyRun, StageStats, wall_span
from stagetimer._analysis.wall_span import start_range
from stagetimer._escape import escape_text
from stagetimer._format import HARDWARE_FILE, continued_stage
from stagetimer._render.compute import used_lines
from stagetimer._render.duration import format_duration
from stagetimer._store.records import RunTiming
from stagetimer._store.rules import is_valid_seconds

__all__ = [
    "directory_progress",
    "nested_line",
    "progress_line",
    "rank_line",
    "render_text",
    "runs_cell",
    "suite_line",
    "suite_totals",
]

_HEADER = ["stage", "runs", "total", "mean", "median", "sd", "min", "max"]


def _legacy_values(values: dict[str, Any]) -> str:
    return ", ".join(f"{key}={json.dumps(value)}" for key, value in values.items())


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def _tracked(stats: StageStats) -> bool:
    """Whether the stage's progress is shown: its recorder was told how many runs to expect,
    and every seed runs it. A continuation (``<stage>_auto_resume``) runs only for the
    seeds that were interrupted, so it is never "2 of 4 seeds" short of done (files
    written before this rule may still hold an ``expected_runs`` for one)."""
    return stats.expected_runs is not None and continued_stage(stats.name) is None


def _counts(progress: StageProgress) -> str:
    """``, 2 running, 1 failed`` for the counts that are not zero."""
    counts = [(progress.running, "running"), (progress.unknown, "unknown"),
              (progress.failed, "failed"), (progress.killed, "killed")]
    return "".join(f", {count} {word}" for count, word in counts if count)


def _to_go(eta: Eta | None) -> str:
    if eta is None:
        return "none finished yet"
    return f"about {format_duration(eta.p50)} to go (90 %: {format_duration(eta.p90)})"


def progress_line(stats: StageStats, progress: StageProgress | None = None) -> str | None:
    """``ippo_train 3 of 10 seeds, 2 running, about 2 h 10 min to go (90 %: 2 h 40 min)``
    for a stage whose recorder was told how many runs to expect (the estimate and counts
    ``stagetimer watch`` gives); None otherwise (and for a continuation, which only some
    seeds run)."""
    if stats.expected_runs is None or not _tracked(stats) or progress is None:
        return None
    head = f"{stats.name} {progress.done} of {stats.expected_runs} seeds"
    if progress.complete:
        return f"{head}, done"
    return f"{head}{_counts(progress)}, {_to_go(progress.eta)}"


def rank_line(stats: StageStats) -> str | None:
    """``ippo_train 3 seeds x 4 ranks, each seed counted once as its slowest rank; ranks
    apart by up to 1.20 s (median 412 ms)``; None for a stage without ranks."""
    spread = stats.rank_spread
    if spread is None:
        return None
    return (
        f"{stats.name} {_plural(spread.seeds, 'seed')} \N{MULTIPLICATION SIGN} "
        f"{spread.ranks} ranks, each seed counted once as its slowest rank; ranks apart by "
        f"up to {format_duration(spread.max_seconds)} "
        f"(median {format_duration(spread.median_seconds)})"
    )


def directory_progress(report: ArtifactReport) -> str | None:
    """One line for the directory's progress over the stages every seed runs; None when no
    recorder was told how many runs to expect.

    ``3 stages, 3 of 10 seeds (ippo_train 3, nashconv 4), about 5 h 15 min to go (90 %:
    6 h)``: the stages' times to go summed (a seed runs them one after another), a stage
    run inside another left out of the sum; one stage reads as ``progress_line``.
    """
    tracked = [s for s in report.stages if _tracked(s) and s.name in report.progress]
    if not tracked:
        return None
    if len(tracked) == 1:
        return progress_line(tracked[0], report.progress[tracked[0].name])
    return _stages_progress(report, tracked)


def _stages_progress(report: ArtifactReport, tracked: Sequence[StageStats]) -> str:
    """``directory_progress`` of two or more stages."""
    progress = [report.progress[s.name] for s in tracked]
    expected = max(s.expected_runs or 0 for s in tracked)
    going = [p for p in progress if not p.complete]
    if not going:
        return f"{len(tracked)} stages, {expected} of {expected} seeds each, done"
    detail = ", ".join(f"{p.name} {p.done}" for p in going)
    head = f"{len(tracked)} stages, {min(p.done for p in progress)} of {expected} seeds ({detail})"
    return f"{head}, {_to_go(suite_eta(_outermost(report, tracked)))}"


def _outermost(report: ArtifactReport, stages: Sequence[StageStats]) -> list[StageProgress]:
    """The progress whose times to go add up: of the stages not run inside another
    (every run of a nested stage, an epoch, lies inside its parent's, the fit)."""
    summed = [report.progress[s.name] for s in stages
              if not (s.nested_runs and s.nested_runs == s.runs)]
    return summed or [report.progress[s.name] for s in stages]


def _table(report: ArtifactReport) -> list[str]:
    several = len(report.hardware) > 1
    header = [*_HEADER, "hardware"] if several else _HEADER
    rows = [header, *(_table_row(s, several) for s in report.stages)]
    template = _template([max(map(len, column)) for column in zip(*rows, strict=False)], several)
    lines = [template.format(*row).rstrip() for row in rows]
    if any(s.flagged_runs for s in report.stages):
        lines.append("  * some runs hold values no writer stores; see the warnings")
    return lines


def _template(widths: list[int], several: bool) -> str:
    """One format per table: the first column left-aligned, the numbers right-aligned
    (str.format pads as ljust/rjust do), the hardware column as it is."""
    cells = [f"{{0:<{widths[0]}}}", *(f"{{{i}:>{widths[i]}}}" for i in range(1, 8))]
    return "  " + "  ".join([*cells, "{8}"] if several else cells)


def _table_row(s: StageStats, several: bool) -> list[str]:
    """A stage's row of the table; its hardware last where the directory has several."""
    runs = runs_cell(s) + ("*" if s.flagged_runs else "")
    seconds = (s.total_seconds, s.mean_seconds, s.median_seconds, s.stdev_seconds,
               s.min_seconds, s.max_seconds)
    row = [s.name, runs, *map(format_duration, seconds)]
    if several:
        row.append(", ".join(s.hardware_ids) or "-")
    return row


def runs_cell(stats: StageStats) -> str:
    """``12``, or ``2 runs (6 epochs)`` where a seed's records are its parts (the
    statistics beside it are then per part)."""
    if stats.seed_runs is None:
        return str(stats.runs)
    return f"{_plural(stats.seed_runs, 'run')} ({stats.runs} {stats.part_name})"


def suite_totals(reports: Sequence[ArtifactReport]) -> tuple[int, float, int]:
    """The suite's runs (by seed), its seconds in all with each moment counted once (a
    nested run inside its parent's) and how many runs were counted inside their parents."""
    stages = [s for r in reports for s in r.stages]
    return (
        sum(s.counted_runs for s in stages),
        sum(s.outer_seconds for s in stages),
        sum(s.nested_runs for s in stages),
    )


def nested_line(nested: int) -> str | None:
    """What the readers say once where they counted nested runs inside their parents."""
    if not nested:
        return None
    return f"{NESTED_NOTE} ({_plural(nested, 'run')} inside another run)"


def _metadata_text(metadata: dict[str, Any]) -> str:
    return " ".join(
        f"{k}={v}" if isinstance(v, str) else f"{k}={json.dumps(v)}" for k, v in metadata.items()
    )


def _run_rows(report: ArtifactReport) -> list[str]:
    rows = [["stage", "run_idx", "label", "started_at", "seconds", "metadata"]]
    rows += [_run_row(s.name, run) for s in report.stages for run in report.runs(s.name)]
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = ["  runs:"]
    for row in rows:
        cells = [row[0].ljust(widths[0]), row[1].rjust(widths[1]), row[2].ljust(widths[2]),
                 row[3].ljust(widths[3]), row[4].rjust(widths[4]), row[5]]
        lines.append("    " + "  ".join(cells).rstrip())
    return lines


def _run_row(stage: str, run: RunTiming) -> list[str]:
    seconds = format_duration(run.seconds)
    if not is_valid_seconds(run.seconds):
        seconds += " (invalid)"
    return [
        stage, "-" if run.run_idx is None else str(run.run_idx), _run_label(run),
        run.started_at or "-", seconds, _metadata_text(run.metadata),
    ]


def _run_label(run: RunTiming) -> str:
    """The run's label, ``-`` for none; with its rank where each rank's run of a
    distributed launch is listed (``seed 3 (rank 1 of 4)``)."""
    if run.rank is None:
        return run.label or "-"
    rank = f"rank {run.rank} of {run.world_size}"
    return rank if run.label is None else f"{run.label} ({rank})"


def _render_artifact(report: ArtifactReport, runs: bool) -> list[str]:
    if not report.stages:
        return [report.path, "  (no stages recorded)", *_notes(report)]
    lines = [report.path, *_table(report), *_notes(report)]
    return lines + _run_rows(report) if runs else lines


def _notes(report: ArtifactReport) -> list[str]:
    """The lines under a directory's table: progress, ranks, what the stages used, the
    hardware, warnings and legacy metadata."""
    progress = directory_progress(report)
    return [
        *([] if progress is None else [f"  progress: {progress}"]),
        *(f"  ranks: {line}" for s in report.stages if (line := rank_line(s)) is not None),
        *used_lines(report),  # what the stages used besides wall time
        *_measured_on(report),
        *(f"  warning: {warning}" for warning in report.warnings),
        *_legacy_lines(report),
    ]


def _measured_on(report: ArtifactReport) -> list[str]:
    """The hardware the runs were measured on, and how many runs name none."""
    from stagetimer.hardware import summary_line

    unknown = sum(s.runs_without_hardware for s in report.stages)
    if not (report.hardware or unknown):
        return []
    lines = ["  measured on:"]
    for hw_id, hw in report.hardware.items():
        shown = "not described in " + HARDWARE_FILE if hw is None else summary_line(hw)
        lines.append(f"    {hw_id}: {shown}")
    if unknown:
        lines.append(f"    {unknown} run(s) without a hardware_id (legacy): hardware unknown")
    return lines


def _legacy_lines(report: ArtifactReport) -> list[str]:
    """The legacy metadata the writer recorded, of the file and of each run."""
    if not (report.legacy_top_level or report.legacy_runs):
        return []
    lines = ["  legacy metadata, recorded by the writer (about the machine that wrote the file):"]
    if report.legacy_top_level:
        lines.append(f"    file: {_legacy_values(report.legacy_top_level)}")
    lines.extend(f"    {_where(run)}: {_legacy_values(run.values)}" for run in report.legacy_runs)
    return lines


def _where(run: LegacyRun) -> str:
    """``ippo_train run 3 (seed 3)``: the stage, with the run's index and label where known."""
    index = "" if run.run_idx is None else f" run {run.run_idx}"
    label = "" if run.label is None else f" ({run.label})"
    return f"{run.stage}{index}{label}"


def suite_line(reports: Sequence[ArtifactReport]) -> str:
    """``suite: 4 directories, 49 runs, 3 h 12 min in all (the sum of the runs), a wall
    span of 1 h 05 min (first start to last end), started 2026-... to 2026-...``.

    The sum counts runs that ran side by side (seeds in parallel, DataLoader workers)
    once each, and a run nested inside its parent's run not again (``suite_totals``);
    the wall span is the time the suite took, from the runs' ``started_at``.
    """
    runs, total, _ = suite_totals(reports)
    return (
        f"suite: {len(reports)} director{'y' if len(reports) == 1 else 'ies'}, "
        f"{_plural(runs, 'run')}, {format_duration(total)} in all"
        f"{_span(reports)}{_started(reports)}{_suite_progress(reports)}"
    )


def _span(reports: Sequence[ArtifactReport]) -> str:
    """`` (the sum of the runs), a wall span of 1 h 05 min (first start to last end)``;
    nothing where no run's start is known."""
    span = wall_span(reports)
    if span is None:
        return ""
    return (f" (the sum of the runs), a wall span of {format_duration(span[1] - span[0])} "
            "(first start to last end)")


def _started(reports: Sequence[ArtifactReport]) -> str:
    """``, started 2026-... to 2026-...``; nothing where no stage holds a start."""
    starts = [
        start for r in reports for s in r.stages
        for start in (s.first_started_at, s.last_started_at) if start
    ]
    if not starts:
        return ""
    first, last = start_range(starts)  # by time: the stages' forms may differ
    return f", started {first} to {last}"


def _suite_progress(reports: Sequence[ArtifactReport]) -> str:
    """``; 2 stages in progress, about ... to go``, or nothing when every stage is done."""
    going = [p for r in reports for p in r.progress.values() if not p.complete]
    if not going:
        return ""
    summed = [p for r in reports for p in _outermost(r, _going(r))]
    return f"; {_plural(len(going), 'stage')} in progress, {_to_go(suite_eta(summed))}"


def _going(report: ArtifactReport) -> list[StageStats]:
    """The directory's stages whose progress is known and not complete."""
    return [s for s in report.stages
            if s.name in report.progress and not report.progress[s.name].complete]


def render_text(reports: Sequence[ArtifactReport], *, runs: bool = False) -> str:
    """The human report: one block per artifact directory, a blank line between blocks, and
    the suite's line at the end (``runs``: each run listed too)."""
    if not reports:
        return ""
    blocks = ["\n".join(map(escape_text, _render_artifact(r, runs))) for r in reports]
    blocks.append(escape_text(suite_line(reports)))
    if (said := nested_line(suite_totals(reports)[2])) is not None:
        blocks[-1] += "\n" + said
    return "\n\n".join(blocks) + "\n"
