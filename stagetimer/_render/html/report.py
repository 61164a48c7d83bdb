"""``stagetimer report --html``: the report as one page.

The stage table of every directory (the figures of the text report, in its units),
each stage's runs as a chart (every run a mark, the median and the range over them),
the suite's timeline and ``lost``'s summary of its attempts, what the stages used, the
hardware and the warnings. A suite of
more than ``PER_DIRECTORY`` directories is charted per stage name, its directories'
runs pooled; a chart never holds more than ``ROWS`` rows (the table holds them all).
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Sequence
from typing import Any

from stagetimer._analysis.attempts.lost import LostSummary, lost_summary
from stagetimer._analysis.attempts.scan import Attempt
from stagetimer._analysis.attempts.timeline import drawable
from stagetimer._analysis.report import ArtifactReport, StageStats
from stagetimer._analysis.run_parts import run_parts
from stagetimer._render.duration import format_duration
from stagetimer._render.html.page import html_text, page
from stagetimer._render.html.resources import resources_section
from stagetimer._render.html.svg import MARKS_PER_ROW, Mark, Row, chart, log_or_linear
from stagetimer._render.html.timeline import timeline
from stagetimer._render.lost_text import HEADER as LOST_HEADER
from stagetimer._render.lost_text import notes as lost_notes
from stagetimer._render.lost_text import summary_rows
from stagetimer._render.report_text import (
    directory_progress,
    nested_line,
    rank_line,
    runs_cell,
    suite_line,
    suite_totals,
)
from stagetimer._store.rules import is_valid_seconds

__all__ = ["PER_DIRECTORY", "ROWS", "render_html"]

#: up to this many directories, each gets a chart of its own
PER_DIRECTORY = 12
#: the most rows a chart draws
ROWS = 200
_HEADER = ("runs", "total", "mean", "median", "sd", "min", "max")


def _cells(s: StageStats) -> str:
    runs = runs_cell(s) + ("*" if s.flagged_runs else "")
    figures = (s.total_seconds, s.mean_seconds, s.median_seconds, s.stdev_seconds,
               s.min_seconds, s.max_seconds)
    return f"<td>{runs}</td>" + "".join(f"<td>{format_duration(v)}</td>" for v in figures)


def stage_table(reports: Sequence[ArtifactReport]) -> str:
    """Every directory's stages: one ``<tbody>`` per directory, its path the group header."""
    head = "".join(f'<th scope="col">{h}</th>' for h in _HEADER)
    parts = [
        '<p class="filter js-only"><label>Filter directories and stages: '
        '<input type="search" data-filter="stages"></label></p>',
        '<table id="stages"><thead><tr><th scope="col" class="t">stage</th>'
        f"{head}</tr></thead>",
    ]
    parts.extend(_directory_rows(r) for r in reports)
    parts.append("</table>")
    if any(s.flagged_runs for r in reports for s in r.stages):
        parts.append('<p class="note">* some runs hold values no writer stores; they are '
                     "left out of the figures (see the warnings).</p>")
    return "\n".join(parts) + "\n"


def _directory_rows(r: ArtifactReport) -> str:
    """A directory's ``<tbody>``: its path, then a row per stage."""
    rows = "".join(
        f'\n<tr><th scope="row">{html_text(s.name)}</th>{_cells(s)}</tr>' for s in r.stages
    )
    return (f'<tbody><tr><th scope="rowgroup" colspan="8" class="path">'
            f"{html_text(r.path)}</th></tr>{rows}\n</tbody>")


def _mark(stage: str, run: dict[str, Any], seconds: float) -> Mark:
    words = [stage]
    if (idx := run.get("run_idx")) is not None:
        words.append(f"run {idx}")
    if (text := run.get("label")) is not None:
        words.append(f"label {text}")
    if (rank := run.get("rank")) is not None:
        words.append(f"rank {rank}")
    return Mark(seconds, f"{', '.join(map(str, words))}: {format_duration(seconds)}")


def _row(name: str, runs: list[tuple[float, dict[str, Any]]]) -> Row:
    """The row of a stage's runs (seconds, the run as stored): each run a mark with its
    tooltip, or (past ``MARKS_PER_ROW``, drawn as a histogram) its value alone."""
    if not runs:
        return Row(name, (), summary=f"{name}: no valid run")
    values = [seconds for seconds, _ in runs]
    if len(runs) > MARKS_PER_ROW:
        marks = [Mark(seconds, "") for seconds in values]
    else:
        marks = [_mark(name, run, seconds) for seconds, run in runs]
    median = statistics.median(values)
    low, high = min(values), max(values)
    summary = (f"{name}: {_counted(runs)}, median {format_duration(median)}, from "
               f"{format_duration(low)} to {format_duration(high)}")
    return Row(name, tuple(marks), median, (low, high), summary)


def _counted(runs: list[tuple[float, dict[str, Any]]]) -> str:
    """``5 runs``, or, where runs repeat a seed or label, how many seeds they are of."""
    parts = run_parts([run.get("run_idx") for _, run in runs],
                      [run.get("label") for _, run in runs])
    return f"{len(runs)} runs" if parts is None else f"{parts[0]} runs ({len(runs)} {parts[2]})"


def _stage_runs(report: ArtifactReport, name: str) -> list[tuple[float, dict[str, Any]]]:
    """The stage's runs with a valid duration: (seconds, the run as stored)."""
    runs = []
    for run in report.stored_runs(name):
        seconds = run.get("seconds")
        if type(seconds) in (int, float) and is_valid_seconds(float(seconds)):
            runs.append((float(seconds), run))
    return runs


def _chart_groups(reports: Sequence[ArtifactReport]) -> tuple[str, list[tuple[str, list[Row]]]]:
    """What the runs' charts say they show, and their rows: one chart per directory, or
    one for the suite with each stage name's runs pooled."""
    if len(reports) > PER_DIRECTORY:
        intro = (f"Each stage's runs, the {len(reports)} directories' runs of a stage name "
                 "pooled in one row")
        return intro, [("", _pooled_rows(reports))]
    groups = [(r.path, [_row(s.name, _stage_runs(r, s.name)) for s in r.stages])
              for r in reports]
    return "Each stage's runs per directory", groups


def _pooled_rows(reports: Sequence[ArtifactReport]) -> list[Row]:
    """A row per stage name, of every directory's runs of it."""
    pooled: dict[str, list[tuple[float, dict[str, Any]]]] = {}
    for r in reports:
        for s in r.stages:
            pooled.setdefault(s.name, []).extend(_stage_runs(r, s.name))
    return [_row(name, runs) for name, runs in pooled.items()]


def _group_chart(title: str, rows: list[Row]) -> list[str]:
    """One group's chart of its first ``ROWS`` rows, under its title."""
    shown = rows[:ROWS]
    values = [m.value for row in shown for m in row.marks]
    scale = log_or_linear(values)
    axis = "logarithmic" if scale.log else "linear"
    what = f" of {title}" if title else ""
    alt = f"Runs{what}: {len(shown)} stages, {len(values)} runs, on a {axis} time axis"
    parts = [f'<h3 class="path">{html_text(title)}</h3>'] if title else []
    if len(rows) > ROWS:
        alt += f"; {len(rows) - ROWS} more stages are in the table only"
        parts.append(f'<p class="note">The first {ROWS} of {len(rows)} stages are drawn; '
                     "all are in the table.</p>")
    if shown:
        parts.append(chart(shown, scale, alt=alt))
    return parts


def _runs_charts(reports: Sequence[ArtifactReport]) -> str:
    intro, groups = _chart_groups(reports)
    parts = [f"<h2>Runs</h2>\n<p>{intro}: every run a dot, the median a black tick, the "
             "range from the fastest to the slowest run a band. Hover a mark for its value. "
             f"A row of more than {MARKS_PER_ROW} runs is drawn as a histogram of them.</p>"]
    for title, rows in groups:
        parts += _group_chart(title, rows)
    return "\n".join(parts) + "\n"


def _details(reports: Sequence[ArtifactReport]) -> str:
    """Per directory: progress, ranks, the hardware it was measured on and its warnings."""
    parts = ["<h2>Hardware and warnings</h2>"]
    for r in reports:
        if items := _detail_items(r):
            listed = "".join(f"<li>{html_text(i)}</li>" for i in items[:ROWS])
            more = f"<li>{len(items) - ROWS} more</li>" if len(items) > ROWS else ""
            parts.append(f'<h3 class="path">{html_text(r.path)}</h3><ul>{listed}{more}</ul>')
    return "\n".join(parts) + "\n" if len(parts) > 1 else ""


def _detail_items(r: ArtifactReport) -> list[str]:
    from stagetimer.hardware import summary_line

    items = []
    if (progress := directory_progress(r)) is not None:
        items.append(f"progress: {progress}")
    items.extend(f"ranks: {line}" for s in r.stages if (line := rank_line(s)) is not None)
    items.extend(
        f"measured on {hw_id}: " + ("not described" if hw is None else summary_line(hw))
        for hw_id, hw in r.hardware.items()
    )
    items.extend(f"warning: {w}" for w in r.warnings)
    return items


def _lost_summary(reports: Sequence[ArtifactReport], attempts: Sequence[Attempt]) -> LostSummary:
    """``lost``'s summary of the attempts, told each described hardware's GPUs and host."""
    described = {hw_id: hw for r in reports for hw_id, hw in r.hardware.items()
                 if hw is not None}
    return lost_summary(attempts, {k: len(hw.gpus) for k, hw in described.items()},
                        {k: hw.host for k, hw in described.items()})


def _lost_section(reports: Sequence[ArtifactReport], attempts: Sequence[Attempt]) -> str:
    """``stagetimer lost``'s summary, the same attribution and figures: per hardware
    description and stage with an attempt that did not finish (the first ``ROWS``),
    productive and lost time by cause, the effective-time ratio; then all of them."""
    summary = _lost_summary(reports, attempts)
    ratio = summary.total.effective_ratio
    said = "none recorded" if ratio is None else f"{ratio:.3f}"
    parts = [
        "<h2>Lost time</h2>",
        "<p>What the attempts cost, as stagetimer lost gives it: productive time "
        "(finished attempts), time lost by failed and killed ones by cause (a killed one "
        "counted from its start to its last sign of life, the most it can have lost "
        "beside it), and the effective-time ratio, productive ÷ (productive + lost): "
        f"{html_text(said)} in all.</p>",
    ]
    rows = summary_rows(summary)
    shown = [row for group, row in zip(summary.groups, rows, strict=False)
             if set(group.attempts) - {"finished"}]
    if not shown:
        count = summary.total.attempts.get("finished", 0)
        parts.append(f"<p>Nothing was lost: all {count:,} attempts finished.</p>")
    else:
        parts += _lost_table(shown, rows[-1], finished=len(summary.groups) - len(shown))
    parts += [f'<p class="note">{html_text(n)}.</p>' for n in lost_notes(summary)]
    return "\n".join(parts) + "\n"


def _lost_table(shown: list[list[str]], total: list[str], *, finished: int) -> list[str]:
    """The table of the first ``ROWS`` stages that lost time and their sum, and notes on
    the stages left out of it."""
    head = "".join(f'<th scope="col">{html_text(h)}</th>' for h in LOST_HEADER)
    body = [
        f'<tr><th scope="row">{html_text(row[0])}</th><td class="t">{html_text(row[1])}'
        "</td>" + "".join(f"<td>{html_text(c)}</td>" for c in row[2:]) + "</tr>"
        for row in [*shown[:ROWS], total]
    ]
    parts = [f'<table id="lost"><thead><tr>{head}</tr></thead><tbody>'
             f'{"".join(body)}</tbody></table>']
    if len(shown) > ROWS:
        parts.append(f'<p class="note">The first {ROWS} of {len(shown)} stages with an '
                     "attempt that did not finish are shown; all is their sum.</p>")
    if finished:
        parts.append(f'<p class="note">{finished:,} stages whose attempts all finished '
                     "are in all only.</p>")
    return parts


def _timeline_section(reports: Sequence[ArtifactReport],
                      attempts: Sequence[Attempt]) -> list[str]:
    placed = [a for a in attempts if drawable(a)]
    if not placed:
        return ["<p>No run has a start time to draw.</p>"]
    svg, sentence = timeline(placed, _hosts(reports))
    return [f"<p>{html_text(sentence)} Each attempt a bar on its node and rank: "
            "finished in blue, failed in red, killed in purple up to its last sign "
            "of life (its faint end: the interval the evidence leaves; a dashed "
            "end: nothing bounds when it ended), running or unknown in grey.</p>", svg]


def _hosts(reports: Sequence[ArtifactReport]) -> dict[str, str]:
    """Hardware id -> the host its description names, for the descriptions that name one."""
    return {hw_id: hw.host for r in reports for hw_id, hw in r.hardware.items()
            if hw is not None and hw.host}


def render_html(
    reports: Sequence[ArtifactReport], paths: Sequence[str | os.PathLike[str]],
    attempts: Sequence[Attempt],
) -> str:
    """The report of ``reports`` (found under ``paths``) as one self-contained page."""
    named = ", ".join(os.fsdecode(p) for p in paths)
    body = [f"<h1>stagetimer report</h1>\n<p class=\"path\">{html_text(named)}</p>"]
    if not reports:
        body.append("<p>No timings.json was found under these paths.</p>")
        return page(f"stagetimer report: {named}", "\n".join(body) + "\n")
    body.append(f"<p>{html_text(suite_line(reports))}</p>")
    if (said := nested_line(suite_totals(reports)[2])) is not None:
        body.append(f'<p class="note">{html_text(said)}.</p>')
    body.append("<h2>Stages</h2>\n<p>Durations in the text report's units; sd is the "
                "sample standard deviation, each seed counted once.</p>")
    body.append(stage_table(reports))
    body.append(_runs_charts(reports))
    body.append("<h2>Timeline</h2>")
    body += _timeline_section(reports, attempts)
    if attempts:
        body.append(_lost_section(reports, attempts))
    body.append(resources_section(reports, pooled=len(reports) > PER_DIRECTORY))
    body.append(_details(reports))
    return page(f"stagetimer report: {named}", "\n".join(body))
