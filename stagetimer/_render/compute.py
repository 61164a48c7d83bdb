"""What stages cost, as text: the report's "used:" lines and ``stagetimer compute``.

The compute statement comes as plain text (default), GitHub Markdown, LaTeX (booktabs)
or JSON; each form ends with a sentence a person can paste into a paper's compute
statement. Text from the files (CPU and GPU names) is escaped for the terminal and, in
LaTeX, for TeX.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stagetimer._analysis.compute import (
    FAMILIES,
    Amounts,
    ComputeStatement,
    HardwareCompute,
    StageUse,
    stage_use,
)
from stagetimer._analysis.nesting import NESTED_NOTE
from stagetimer._analysis.report import ArtifactReport
from stagetimer._escape import escape_text
from stagetimer._render.duration import format_duration
from stagetimer._render.json_text import indented_json
from stagetimer._render.latex_text import latex_text
from stagetimer._render.markdown_text import markdown_text
from stagetimer._system.units import format_energy, significant
from stagetimer.hardware import format_bytes

__all__ = ["render_compute", "sentence", "use_line", "used_lines", "used_side_by_side"]

_HEADER = ("stages", "runs", "wall time", "GPU-hours", "CPU core-hours", "GPU energy")
def use_line(use: StageUse) -> str:
    """``ippo_train: CPU use 1.85 (CPU time / wall time), children 12.3 s CPU, peak
    14.2 GiB of 16 GiB, GPU energy 312 kJ`` (the report's "used:" block)."""
    parts = []
    if use.cpu_use is not None:
        parts.append(f"CPU use {significant(use.cpu_use)} (CPU time / wall time)")
    if use.children_cpu_seconds:
        parts.append(f"children {format_duration(use.children_cpu_seconds)} CPU")
    if use.peak_bytes is not None:
        parts.append(_peak(use.peak_bytes, use.limit_bytes))
    if use.energy_joules is not None:
        energy = f"GPU energy {format_energy(use.energy_joules)}"
        parts.append(energy + _measured_for(use.energy_runs, use.runs, ""))
    return f"{use.name}: " + ", ".join(parts)


def _peak(peak_bytes: int, limit_bytes: int | None) -> str:
    """``peak 14.2 GiB of 16 GiB``, or ``... (no memory limit known)``."""
    limit = f"of {format_bytes(limit_bytes)}" if limit_bytes else "(no memory limit known)"
    return f"peak {format_bytes(peak_bytes)} {limit}"


def _measured_for(measured: int, runs: int, words: str) -> str:
    """`` (3 of 4 runs)`` after an energy measured for only some runs; nothing for all."""
    return f" ({words}{measured} of {runs} runs)" if measured < runs else ""


def used_lines(report: ArtifactReport) -> list[str]:
    """The report's ``used:`` block: one line per stage whose runs recorded resources."""
    uses = [stage_use(s.name, report.stored_runs(s.name), report.hardware) for s in report.stages]
    shown = [f"    {use_line(use)}" for use in uses if use is not None]
    return ["  used:", *shown] if shown else []


_CHILDREN = "children_cpu_seconds_mean"  # shown only where a child used CPU
_SIDE_FIGURES = (
    ("cpu_use", "CPU use", significant),
    ("children_cpu_seconds_mean", "children CPU per run", format_duration),
    ("memory_peak_bytes_max", "peak", format_bytes),
    ("gpu_energy_joules_mean", "GPU energy per run", format_energy),
)


def used_side_by_side(sides: dict[str, Any]) -> str:
    """``CPU use 0.98 -> 1.9, peak 3.2 GiB -> 2.9 GiB`` for a stage of ``compare`` (no
    verdict); ``-`` where a side did not record a figure."""
    parts = (_side_figure(sides, *figure) for figure in _SIDE_FIGURES)
    return ", ".join(part for part in parts if part is not None)


def _side_figure(
    sides: dict[str, Any], key: str, words: str, shown: Callable[[Any], str]
) -> str | None:
    """``peak 3.2 GiB -> 2.9 GiB``; None where neither side recorded the figure (or, for
    children's CPU, where no child used any)."""
    values = [(sides.get("base") or {}).get(key), (sides.get("new") or {}).get(key)]
    if values == [None, None] or (key == _CHILDREN and not any(values)):
        return None
    base, new = ("-" if v is None else shown(v) for v in values)
    return f"{words} {base} -> {new}"


def _machine(hw: HardwareCompute) -> str:
    """``4 x NVIDIA H100 80GB HBM3 with AMD EPYC 9654 (64 logical CPUs, 512 GiB memory
    limit)``."""
    cpu = hw.cpu_model or "an unnamed CPU"
    details = [f"{hw.logical_cpus} logical CPUs"]
    details.append(
        f"{format_bytes(hw.memory_limit_bytes)} memory limit"
        if hw.memory_limit_bytes else "no memory limit known"
    )
    if not hw.gpu_count:
        return f"{cpu} ({', '.join(details)}; no GPU)"
    names = " + ".join(hw.gpu_names) or "unnamed GPU"
    return f"{hw.gpu_count} \N{MULTIPLICATION SIGN} {names} with {cpu} ({', '.join(details)})"


def _hours(value: float) -> str:
    return significant(value) if value >= 0.01 or value == 0 else f"{value:.2g}"


def _cells(name: str, amounts: Amounts, gpus: bool) -> list[str]:
    energy = "-"
    if amounts.energy_runs:
        energy = f"{_hours(amounts.energy_kwh)} kWh"
        energy += _measured_for(amounts.energy_runs, amounts.runs, "")
    cpu = _hours(amounts.cpu_core_hours)
    if amounts.cpu_recorded_runs < amounts.runs:
        cpu += "*"  # estimated from wall time x logical CPUs, at least in part
    return [
        name, str(amounts.runs), format_duration(amounts.wall_seconds),
        _hours(amounts.gpu_hours) if gpus else "-", cpu, energy,
    ]


def _rows(hw: HardwareCompute) -> list[list[str]]:
    rows = [
        _cells(name, hw.families[name], bool(hw.gpu_count))
        for name in FAMILIES if name in hw.families
    ]
    rows.append(_cells("all", hw.total, bool(hw.gpu_count)))
    return rows


def _footnote(hw: HardwareCompute) -> str:
    return f"CPU core-hours: {hw.total.cpu_source}" + (
        " (* marks estimates)" if hw.total.cpu_recorded_runs < hw.total.runs else ""
    )


def sentence(statement: ComputeStatement) -> str:
    """The sentence to paste: ``Experiments ran on 4 x NVIDIA H100 ... ; training took 312
    GPU-hours in all; in total 350 GPU-hours, ...``."""
    if not statement.hardware:
        return "No run with a described hardware was found."
    return " ".join(
        f"Experiments ran on {_machine(hw)}; they took {_took(hw)}{_with_lost(hw)}{_training(hw)}."
        for hw in statement.hardware
    )


def _took(hw: HardwareCompute) -> str:
    """``3 h of wall time, 12 GPU-hours, 48 CPU core-hours, 3.1 kWh of GPU energy``."""
    total = hw.total
    what = [f"{format_duration(total.wall_seconds)} of wall time"]
    if hw.gpu_count:
        what.append(f"{_hours(total.gpu_hours)} GPU-hours")
    what.append(f"{_hours(total.cpu_core_hours)} CPU core-hours")
    if total.energy_runs:
        energy = f"{_hours(total.energy_kwh)} kWh of GPU energy"
        what.append(energy + _measured_for(total.energy_runs, total.runs, "measured for "))
    return ", ".join(what)


def _training(hw: HardwareCompute) -> str:
    """``; training took 312 GPU-hours in all`` (its wall time on a machine without a GPU);
    nothing where no stage is of the training family."""
    training = hw.families.get("training")
    if training is None:
        return ""
    if hw.gpu_count:
        return f"; training took {_hours(training.gpu_hours)} GPU-hours in all"
    return f"; training took {format_duration(training.wall_seconds)} of wall time"


def _with_lost(hw: HardwareCompute) -> str:
    """``; with 2 failed or killed attempts, 51.2 GPU-hours, of which 1.2 lost`` (nothing
    where no attempt was lost)."""
    if not hw.lost_attempts:
        return ""
    attempts = f"{hw.lost_attempts} failed or killed attempt{'s' if hw.lost_attempts > 1 else ''}"
    if hw.gpu_count:
        whole = hw.total.gpu_hours + hw.lost_gpu_hours
        return (f"; with {attempts}, {_hours(whole)} GPU-hours, of which "
                f"{_hours(hw.lost_gpu_hours)} lost")
    whole_seconds = hw.total.wall_seconds + hw.lost_seconds
    return (f"; with {attempts}, {format_duration(whole_seconds)} of wall time, of which "
            f"{format_duration(hw.lost_seconds)} lost")


def _lost_note(hw: HardwareCompute) -> list[str]:
    """The line under a description's table that says what failed and killed attempts
    lost (the table sums finished runs only)."""
    said = _with_lost(hw)
    return [f"In all{said[1:]}."] if said else []


def _text(statement: ComputeStatement, notes: list[str], paste: str) -> list[str]:
    """The plain-text form: a table per hardware, the warnings and notes, the sentence."""
    lines: list[str] = []
    for hw in statement.hardware:
        lines += [f"{hw.hardware_id}: {_machine(hw)}"]
        lines += _aligned([list(_HEADER), *_rows(hw)])
        lines += [f"  {_footnote(hw)}", *(f"  {n}" for n in _lost_note(hw)), ""]
    return [*lines, *(f"warning: {f}" for f in statement.flags), *notes, "", "To paste:", paste]


def _aligned(rows: list[list[str]]) -> list[str]:
    """The text table's lines: the first column left-aligned, the figures right-aligned."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(_HEADER))]
    return [
        "  " + "  ".join([row[0].ljust(widths[0]),
                          *(c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True))]).rstrip()
        for row in rows
    ]


def _markdown(statement: ComputeStatement, notes: list[str], paste: str) -> list[str]:
    """The GitHub Markdown form."""
    lines: list[str] = []
    for hw in statement.hardware:
        lines += [f"**{markdown_text(_machine(hw))}** (`{hw.hardware_id}`)", ""]
        lines.append("| " + " | ".join(_HEADER) + " |")
        lines.append("|" + "|".join([":---"] + ["---:"] * (len(_HEADER) - 1)) + "|")
        lines += ["| " + " | ".join(markdown_text(c) for c in row) + " |" for row in _rows(hw)]
        lines += ["", markdown_text(_footnote(hw)), *map(markdown_text, _lost_note(hw)), ""]
    return [
        *lines, *(f"**Warning:** {markdown_text(f)}\n" for f in statement.flags),
        *(f"_{n}_\n" for n in notes), paste,
    ]


def _latex(statement: ComputeStatement, notes: list[str], paste: str) -> list[str]:
    """The LaTeX (booktabs) form, the notes as comments."""
    lines = ["% the compute statement; needs \\usepackage{booktabs}"]
    for hw in statement.hardware:
        lines += [
            f"% {latex_text(hw.hardware_id)}", f"{latex_text(_machine(hw))}\\par", "",
            "\\begin{tabular}{lrrrrr}", "\\toprule",
            " & ".join(map(latex_text, _HEADER)) + r" \\", "\\midrule",
            *(" & ".join(map(latex_text, row)) + r" \\" for row in _rows(hw)),
            "\\bottomrule", "\\end{tabular}\\par", f"{latex_text(_footnote(hw))}\\par",
            *(f"{latex_text(n)}\\par" for n in _lost_note(hw)), "",
        ]
    return [
        *lines, *(f"% Warning: {latex_text(f)}" for f in statement.flags),
        *(f"% {n}" for n in notes), latex_text(paste),
    ]


def _left_out(statement: ComputeStatement) -> list[str]:
    """The notes on what the statement left out, each where its count is not zero."""
    notes = (
        (statement.undescribed_runs, "{} run(s) left out: hardware not described"),
        (statement.invalid_runs, "{} run(s) left out: seconds no writer stores"),
        (statement.unattributed_lost_attempts,
         "{} failed or killed attempt(s) could not be attributed to a hardware description: "
         "(not described) lost " + format_duration(statement.unattributed_lost_seconds)),
        (statement.odd_attempts, "{} failed or killed attempt(s) left out: their markers hold "
                                 "values no writer could have written"),
        (statement.nested_runs, NESTED_NOTE + " ({} run(s) inside another run)"),
    )
    return [note.format(count) for count, note in notes if count]


_FORMS = {"markdown": _markdown, "latex": _latex}


def render_compute(statement: ComputeStatement, form: str = "text") -> str:
    """The statement as ``text``, ``markdown``, ``latex`` or ``json``."""
    if form == "json":
        data = statement.to_dict()
        data["sentence"] = sentence(statement)
        return indented_json(data)
    lines = _FORMS.get(form, _text)(statement, _left_out(statement), sentence(statement))
    return "\n".join(map(escape_text, lines)) + "\n"

