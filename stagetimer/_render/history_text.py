"""``stagetimer history``: text, ``--json`` and ``--markdown``.

Text: how the points were ordered and what to know, the change points newest first (the
stage and hardware, the points on either side, the ratio with its interval and q-value,
what changed there), then one line per series with its current level. ``--json``:
``History.to_dict()``, the same bytes for the same files. ``--markdown``: the same as
tables for a pull request or an issue.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stagetimer._analysis.history.model import ChangePoint, History, Point, Series
from stagetimer._escape import escape_text
from stagetimer._render.compare.text import format_ratio, times
from stagetimer._render.duration import format_duration
from stagetimer._render.json_text import layered_json
from stagetimer._render.markdown_text import markdown_text

__all__ = [
    "change_words",
    "format_history",
    "point_label",
    "ratio_range",
    "render_json",
    "render_markdown",
    "series_label",
]

def point_label(point: Point) -> str:
    """``4c1d2e9a1f (2026-12-06 06:38)``: the point and when its first run started."""
    when = point.first_started_at
    if when is None:
        return point.name()
    return f"{point.name()} ({when[:16].replace('T', ' ')})"


def series_label(series: Series) -> str:
    """``train on hw-2ab6c2646d55 (node1, AMD EPYC)``."""
    hardware = series.hardware_id[:15] if series.hardware_id else "undescribed hardware"
    name = f" ({series.hardware_name})" if series.hardware_name else ""
    return f"{series.stage} on {hardware}{name}"


def change_words(change: ChangePoint) -> list[str]:
    """What changed at ``change``, one entry per kind (not escaped)."""
    from stagetimer.hardware import Difference
    from stagetimer.software import format_software_differences

    what = change.differences
    words: list[str] = []
    if what.commit_count:
        words.append(_commits(what.commit_count, what.commits))
    if what.software:
        found = [Difference(d.field, d.base, d.new) for d in what.software]
        words.append("software: " + format_software_differences(found))
    for d in what.metadata:
        before = ", ".join(map(_value, d.base))
        after = ", ".join(map(_value, d.new))
        words.append(f"metadata {d.key}: {before} -> {after}")
    return words


def _commits(count: int, commits: Sequence[str]) -> str:
    """``7 commits: a1b2c3 fix; ...; and 2 more`` (the first five shown)."""
    more = count - min(5, len(commits))
    return (f"{count} commit{'s' if count != 1 else ''}: {'; '.join(commits[:5])}"
            + (f"; and {more} more" if more > 0 else ""))


def _value(value: Any) -> str:
    return value if isinstance(value, str) else repr(value)


def _interval(change: ChangePoint) -> str:
    if change.ratio_interval is None:
        return "no interval (one seed a side)"
    low, high = change.ratio_interval
    return f"95 % interval {format_ratio(low)}-{format_ratio(high)}"


def _change_lines(series: Series, change: ChangePoint) -> list[str]:
    lines = [
        f"{series_label(series)}: {times(change.ratio)} "
        f"({_interval(change)}, q = {format_ratio(change.q_value)})",
        f"  between {point_label(change.before)} and {point_label(change.after)}: "
        f"median {format_duration(change.median_before)} -> "
        f"{format_duration(change.median_after)}",
    ]
    words = change_words(change)
    lines.extend(f"  {w}" for w in words)
    if not words:
        lines.append("  no difference recorded between the two points' software or metadata")
    return lines


def _level(series: Series) -> str:
    """The series' current level: the median of its newest segment, and since when."""
    if not series.points:
        return "no points"
    since = series.changes[-1].index if series.changes else 0
    seeds = sorted(s for p in series.points[since:] for s in p.seeds)
    middle = seeds[len(seeds) // 2] if len(seeds) % 2 else (
        seeds[len(seeds) // 2 - 1] + seeds[len(seeds) // 2]) / 2
    return f"{format_duration(middle)} since {point_label(series.points[since])}"


def format_history(history: History) -> str:
    """The text ``stagetimer history`` prints."""
    points = sum(len(s.points) for s in history.series)
    lines = [f"history: {len(history.series)} series, {points} points, in {_order(history)}"]
    lines.extend(f"note: {n}" for n in history.notes)
    lines.append("")
    lines += _changes_text(history)
    lines.append("")
    lines.append("series:")
    lines.extend(_series_text(series) for series in history.series)
    return "".join(escape_text(line) + "\n" for line in lines)


def _changes_text(history: History) -> list[str]:
    """The change points, newest first, under a line saying how they were found."""
    changes = history.changes()
    if not changes:
        return [f"no change point (q <= 0.05 over {history.tests} tests, at least "
                f"{history.threshold * 100:g} %)"]
    lines = [f"change points, newest first ({len(changes)}; q <= 0.05 over "
             f"{history.tests} tests, at least {history.threshold * 100:g} %):"]
    for series, change in changes:
        lines.extend(_change_lines(series, change))
    return lines


def _series_text(series: Series) -> str:
    count = len(series.points)
    note = f"; {series.note}" if series.note else ""
    return (f"  {series_label(series)}: {count} point{'s' if count != 1 else ''}, "
            f"{len(series.changes)} change{'s' if len(series.changes) != 1 else ''}, "
            f"now {_level(series)}{note}")


def render_json(history: History) -> str:
    """``history.to_dict()`` as strict JSON, each point and change on one line."""
    return layered_json(history.to_dict())


def _order(history: History) -> str:
    return "commit order" if history.order == "commit" else "time order"


def ratio_range(change: ChangePoint) -> str:
    """A change's 95 % interval as ``0.791-0.836``; ``-`` for none."""
    if change.ratio_interval is None:
        return "-"
    return f"{format_ratio(change.ratio_interval[0])}-{format_ratio(change.ratio_interval[1])}"


def _change_markdown(series: Series, change: ChangePoint) -> str:
    what = "<br>".join(markdown_text(w) for w in change_words(change)) or "-"
    return (
        f"| {markdown_text(series_label(series))} "
        f"| {markdown_text(point_label(change.before))} "
        f"| {markdown_text(point_label(change.after))} "
        f"| {format_duration(change.median_before)} "
        f"| {format_duration(change.median_after)} "
        f"| {times(change.ratio)} | {ratio_range(change)} | {format_ratio(change.q_value)} "
        f"| {what} |"
    )


def render_markdown(history: History) -> str:
    """The change points and the series as GitHub Markdown tables."""
    changes = history.changes()
    lines = [f"**stagetimer history**: {len(history.series)} series in {_order(history)}, "
             f"{len(changes)} change point{'s' if len(changes) != 1 else ''} "
             f"(q ≤ 0.05 over {history.tests} tests)", ""]
    if history.notes:
        lines += [*(f"- {markdown_text(n)}" for n in history.notes), ""]
    if changes:
        lines += ["| series | before | after | median before | median after | ratio | "
                  "95 % interval | q | what changed |",
                  "|---|---|---|---:|---:|---:|---|---:|---|",
                  *(_change_markdown(series, change) for series, change in changes), ""]
    lines += ["| series | points | changes | now |", "|---|---:|---:|---|"]
    lines += [_series_markdown(series) for series in history.series]
    return "\n".join(lines) + "\n"


def _series_markdown(series: Series) -> str:
    """A series' row of the Markdown table."""
    now = markdown_text(_level(series) + (f"; {series.note}" if series.note else ""))
    return (f"| {markdown_text(series_label(series))} | {len(series.points)} "
            f"| {len(series.changes)} | {now} |")
