"""What the stages used, on the report's page: a table and a chart per figure (CPU use,
memory peak against the limit, GPU energy), from ``stage_use`` as the text report's
"used:" lines have them."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from stagetimer._analysis.compute import StageUse, stage_use
from stagetimer._analysis.report import ArtifactReport
from stagetimer._render.duration import format_duration
from stagetimer._render.html.page import html_text
from stagetimer._render.html.svg import Bar, bars
from stagetimer._system.units import format_energy, significant
from stagetimer.hardware import Hardware, format_bytes

__all__ = ["resources_section", "uses"]

_ROWS = 200


def uses(reports: Sequence[ArtifactReport], *, pooled: bool) -> list[tuple[str, StageUse]]:
    """``(row name, use)`` per directory and stage that recorded resources; ``pooled``: per
    stage name, over every directory's runs."""
    if pooled:
        return _pooled_uses(reports)
    found: list[tuple[str, StageUse]] = []
    for r in reports:
        for s in r.stages:
            use = stage_use(s.name, r.stored_runs(s.name), r.hardware)
            if use is not None:
                found.append((s.name if len(reports) == 1 else f"{r.relpath}: {s.name}", use))
    return found


def _pooled_uses(reports: Sequence[ArtifactReport]) -> list[tuple[str, StageUse]]:
    """``(stage name, use)`` per stage name, over every directory's runs."""
    runs: dict[str, list[object]] = {}
    hardware: dict[str, Hardware | None] = {}
    for r in reports:
        hardware.update(r.hardware)
        for s in r.stages:
            runs.setdefault(s.name, []).extend(r.stored_runs(s.name))
    found = ((name, stage_use(name, stored, hardware))  # type: ignore[arg-type]
             for name, stored in runs.items())
    return [(name, use) for name, use in found if use is not None]


def _cell(value: float | None, shown: Callable[[float], str]) -> str:
    return "<td>-</td>" if value is None else f"<td>{html_text(shown(value))}</td>"


def _table(rows: Sequence[tuple[str, StageUse]]) -> str:
    head = "".join(f'<th scope="col">{h}</th>' for h in (
        "CPU use", "children CPU", "memory peak", "memory limit", "GPU energy"))
    body = "".join(
        f'<tr><th scope="row">{html_text(name)}</th>'
        f"{_cell(u.cpu_use, significant)}{_cell(u.children_cpu_seconds, format_duration)}"
        f"{_cell(u.peak_bytes, format_bytes)}{_cell(u.limit_bytes, format_bytes)}"
        f"{_cell(u.energy_joules, format_energy)}</tr>"
        for name, u in rows
    )
    return (f'<table id="resources"><thead><tr><th scope="col" class="t">stage</th>{head}'
            f"</tr></thead><tbody>{body}</tbody></table>\n")


def resources_section(reports: Sequence[ArtifactReport], *, pooled: bool) -> str:
    """The "Resources" section; empty when no stage recorded any."""
    rows = uses(reports, pooled=pooled)
    if not rows:
        return ""
    shown = rows[:_ROWS]
    parts = ["<h2>Resources</h2>\n<p>CPU use is CPU time over wall time (above 1: several "
             "threads busy); the memory peak is the largest of a run, the red line that run's "
             "memory limit; GPU energy is summed over the runs that recorded it.</p>",
             _table(rows)]
    charts = (
        _chart("CPU use", _cpu_bars(shown), "CPU use of {} stages, CPU time over wall time",
               "cpu", significant),
        _chart("Memory peak against the limit", _memory_bars(shown),
               "Memory peak of {} stages, each against its memory limit where known", "peak",
               format_bytes),
        _chart("GPU energy", _energy_bars(shown), "GPU energy of {} stages", "energy",
               format_energy),
    )
    parts.extend(chart for chart in charts if chart)
    return "\n".join(parts) + "\n"


def _chart(title: str, made: list[Bar], alt: str, kind: str,
           shown: Callable[[float], str]) -> str:
    """A titled chart of ``made``'s bars (``alt`` given their count); empty for none."""
    if not made:
        return ""
    return f"<h3>{title}</h3>" + bars(made, alt=alt.format(len(made)), kind=kind, shown=shown)


def _cpu_bars(shown: Sequence[tuple[str, StageUse]]) -> list[Bar]:
    return [Bar(n, u.cpu_use, f"{n}: CPU use {significant(u.cpu_use)}")
            for n, u in shown if u.cpu_use is not None]


def _memory_bars(shown: Sequence[tuple[str, StageUse]]) -> list[Bar]:
    return [
        Bar(n, float(u.peak_bytes), f"{n}: memory peak {format_bytes(u.peak_bytes)}",
            None if u.limit_bytes is None else float(u.limit_bytes),
            "" if u.limit_bytes is None else f"{n}: memory limit {format_bytes(u.limit_bytes)}")
        for n, u in shown if u.peak_bytes is not None
    ]


def _energy_bars(shown: Sequence[tuple[str, StageUse]]) -> list[Bar]:
    return [Bar(n, u.energy_joules, f"{n}: GPU energy {format_energy(u.energy_joules)} "
                f"({u.energy_runs} of {u.runs} runs)")
            for n, u in shown if u.energy_joules is not None]
