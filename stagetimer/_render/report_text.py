"""The text report: one block per artifact directory, then one line for the whole suite.

Every line passes through ``escape_text``: stage names, labels, metadata, paths and
hardware strings come from files someone else wrote, and a terminal must never act
on what they hold.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from stagetimer._analysis.report import ArtifactReport, StageStats
from stagetimer._escape import escape_text
from stagetimer._format import HARDWARE_FILE
from stagetimer._render.compute import used_lines
from stagetimer._render.duration import format_duration
from stagetimer._store.records import RunTiming
from stagetimer._store.rules import is_valid_seconds

__all__ = ["progress_line", "rank_line", "render_text", "suite_line"]

_HEADER = ["stage", "runs", "total", "mean", "median", "sd", "min", "max"]


def _legacy_values(values: dict[str, Any]) -> str:
    return ", ".join(f"{key}={json.dumps(value)}" for key, value in values.items())


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def progress_line(stats: StageStats) -> str | None:
    """``ippo_train 3 of 10 seeds, about 2 h 10 min to go at the median so far``, for a
    stage whose recorder was told how many runs to expect; None otherwise."""
    expected = stats.expected_runs
    if expected is None:
        return None
    done = stats.runs - stats.flagged_runs
    head = f"{stats.name} {done} of {expected} seeds"
    if done >= expected:
        return f"{head}, done"
    if stats.median_seconds is None:
        return f"{head}, none finished yet"
    left = (expected - done) * stats.median_seconds
    return f"{head}, about {format_duration(left)} to go at the median so far"


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


def _table(report: ArtifactReport) -> list[str]:
    several = len(report.hardware) > 1
    header = [*_HEADER, "hardware"] if several else _HEADER
    rows = [header]
    fmt = format_duration
    for s in report.stages:
        runs = str(s.runs) if not s.flagged_runs else f"{s.runs}*"
        row = [
            s.name, runs, *map(fmt, (
                s.total_seconds, s.mean_seconds, s.median_seconds, s.stdev_seconds,
                s.min_seconds, s.max_seconds,
            )),
        ]
        if several:
            row.append(", ".join(s.hardware_ids) or "-")
        rows.append(row)
    widths = [max(map(len, column)) for column in zip(*rows, strict=False)]
    # One format per table: the first column left-aligned, the numbers right-aligned
    # (str.format pads as ljust/rjust do), the hardware column as it is.
    template = "  " + "  ".join(
        [f"{{0:<{widths[0]}}}", *(f"{{{i}:>{widths[i]}}}" for i in range(1, 8))]
        + (["{8}"] if several else [])
    )
    lines = [template.format(*row).rstrip() for row in rows]
    if any(s.flagged_runs for s in report.stages):
        lines.append("  * some runs hold values no writer stores; see the warnings")
    return lines


def _metadata_text(metadata: dict[str, Any]) -> str:
    return " ".join(
        f"{k}={v}" if isinstance(v, str) else f"{k}={json.dumps(v)}" for k, v in metadata.items()
    )


def _run_rows(report: ArtifactReport) -> list[str]:
    rows = [["stage", "run_idx", "label", "started_at", "seconds", "metadata"]]
    for s in report.stages:
        runs: Sequence[RunTiming] = report.runs(s.name)
        for run in runs:
            seconds = format_duration(run.seconds)
            if not is_valid_seconds(run.seconds):
                seconds += " (invalid)"
            label = run.label or "-"
            if run.rank is not None:  # each rank's run of a distributed launch is listed
                rank = f"rank {run.rank} of {run.world_size}"
                label = rank if run.label is None else f"{run.label} ({rank})"
            rows.append([
                s.name, "-" if run.run_idx is None else str(run.run_idx), label,
                run.started_at or "-", seconds, _metadata_text(run.metadata),
            ])
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = ["  runs:"]
    for row in rows:
        cells = [row[0].ljust(widths[0]), row[1].rjust(widths[1]), row[2].ljust(widths[2]),
                 row[3].ljust(widths[3]), row[4].rjust(widths[4]), row[5]]
        lines.append("    " + "  ".join(cells).rstrip())
    return lines


def _render_artifact(report: ArtifactReport, runs: bool) -> list[str]:
    from stagetimer.hardware import summary_line

    lines = [report.path]
    if not report.stages:
        lines.append("  (no stages recorded)")
    else:
        lines += _table(report)
    for s in report.stages:
        if (progress := progress_line(s)) is not None:
            lines.append(f"  progress: {progress}")
    lines.extend(f"  ranks: {line}" for s in report.stages if (line := rank_line(s)) is not None)
    lines += used_lines(report)  # what the stages used besides wall time
    unknown = sum(s.runs_without_hardware for s in report.stages)
    if report.hardware or unknown:
        lines.append("  measured on:")
        for hw_id, hw in report.hardware.items():
            shown = "not described in " + HARDWARE_FILE if hw is None else summary_line(hw)
            lines.append(f"    {hw_id}: {shown}")
        if unknown:
            lines.append(f"    {unknown} run(s) without a hardware_id (legacy): hardware unknown")
    lines.extend(f"  warning: {warning}" for warning in report.warnings)
    if report.legacy_top_level or report.legacy_runs:
        lines.append(
            "  legacy metadata, recorded by the writer (about the machine that wrote the file):"
        )
        if report.legacy_top_level:
            lines.append(f"    file: {_legacy_values(report.legacy_top_level)}")
        for run in report.legacy_runs:
            where = run.stage
            if run.run_idx is not None:
                where += f" run {run.run_idx}"
            if run.label is not None:
                where += f" ({run.label})"
            lines.append(f"    {where}: {_legacy_values(run.values)}")
    if runs and report.stages:
        lines += _run_rows(report)
    return lines


def suite_line(reports: Sequence[ArtifactReport]) -> str:
    """``suite: 4 directories, 49 runs, 3 h 12 min in all, started 2026-... to 2026-...``."""
    runs = sum(s.runs for r in reports for s in r.stages)
    total = sum(s.total_seconds for r in reports for s in r.stages)
    firsts = [s.first_started_at for r in reports for s in r.stages if s.first_started_at]
    lasts = [s.last_started_at for r in reports for s in r.stages if s.last_started_at]
    line = (
        f"suite: {len(reports)} director{'y' if len(reports) == 1 else 'ies'}, "
        f"{_plural(runs, 'run')}, {format_duration(total)} in all"
    )
    if firsts:
        line += f", started {min(firsts)} to {max(lasts)}"
    pending = [
        (s.expected_runs - (s.runs - s.flagged_runs)) * s.median_seconds
        for r in reports for s in r.stages
        if s.expected_runs is not None and s.median_seconds is not None
        and s.runs - s.flagged_runs < s.expected_runs
    ]
    if pending:
        line += (
            f"; {_plural(len(pending), 'stage')} in progress, about "
            f"{format_duration(sum(pending))} to go at their medians"
        )
    return line


def render_text(reports: Sequence[ArtifactReport], *, runs: bool = False) -> str:
    """The human report: one block per artifact directory, a blank line between blocks, and
    the suite's line at the end (``runs``: each run listed too)."""
    if not reports:
        return ""
    blocks = ["\n".join(map(escape_text, _render_artifact(r, runs))) for r in reports]
    blocks.append(escape_text(suite_line(reports)))
    return "\n\n".join(blocks) + "\n"
