"""What stages cost, as text: the report's "used:" lines and ``stagetimer compute``.

The compute statement comes as plain text (default), GitHub Markdown, LaTeX (booktabs)
or JSON; each form ends with a sentence a person can paste into a paper's compute
statement. Text from the files (CPU and GPU names) is escaped for the terminal and, in
LaTeX, for TeX.
"""

from __future__ import annotations

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
        limit = (
            f"of {format_bytes(use.limit_bytes)}" if use.limit_bytes else "(no memory limit known)"
        )
        parts.append(f"peak {format_bytes(use.peak_bytes)} {limit}")
    if use.energy_joules is not None:
        energy = f"GPU energy {format_energy(use.energy_joules)}"
        if use.energy_runs < use.runs:
            energy += f" ({use.energy_runs} of {use.runs} runs)"
        parts.append(energy)
    return f"{use.name}: " + ", ".join(parts)


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
    parts = []
    for key, words, shown in _SIDE_FIGURES:
        values = [None if side is None else side.get(key) for side in
                  (sides.get("base"), sides.get("new"))]
        if any(v is not None for v in values) and (key != _CHILDREN or any(values)):
            base, new = ("-" if v is None else shown(v) for v in values)
            parts.append(f"{words} {base} -> {new}")
    return ", ".join(parts)


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
        if amounts.energy_runs < amounts.runs:
            energy += f" ({amounts.energy_runs} of {amounts.runs} runs)"
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
    said = []
    for hw in statement.hardware:
        total = hw.total
        what = [f"{format_duration(total.wall_seconds)} of wall time"]
        if hw.gpu_count:
            what.append(f"{_hours(total.gpu_hours)} GPU-hours")
        what.append(f"{_hours(total.cpu_core_hours)} CPU core-hours")
        if total.energy_runs:
            energy = f"{_hours(total.energy_kwh)} kWh of GPU energy"
            if total.energy_runs < total.runs:
                energy += f" (measured for {total.energy_runs} of {total.runs} runs)"
            what.append(energy)
        text = f"Experiments ran on {_machine(hw)}; they took " + ", ".join(what)
        text += _with_lost(hw)
        training = hw.families.get("training")
        if training is not None and hw.gpu_count:
            text += f"; training took {_hours(training.gpu_hours)} GPU-hours in all"
        elif training is not None:
            text += f"; training took {format_duration(training.wall_seconds)} of wall time"
        said.append(text + ".")
    return " ".join(said)


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


def _text(statement: ComputeStatement) -> list[str]:
    lines: list[str] = []
    for hw in statement.hardware:
        lines += [f"{hw.hardware_id}: {_machine(hw)}"]
        rows = [list(_HEADER), *_rows(hw)]
        widths = [max(len(r[i]) for r in rows) for i in range(len(_HEADER))]
        for row in rows:
            cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:],
                                                                              strict=True)]
            lines.append("  " + "  ".join(cells).rstrip())
        lines += [f"  {_footnote(hw)}", *(f"  {n}" for n in _lost_note(hw)), ""]
    return lines


def _markdown(statement: ComputeStatement) -> list[str]:
    lines: list[str] = []
    for hw in statement.hardware:
        lines += [f"**{markdown_text(_machine(hw))}** (`{hw.hardware_id}`)", ""]
        lines.append("| " + " | ".join(_HEADER) + " |")
        lines.append("|" + "|".join([":---"] + ["---:"] * (len(_HEADER) - 1)) + "|")
        lines += ["| " + " | ".join(markdown_text(c) for c in row) + " |" for row in _rows(hw)]
        lines += ["", markdown_text(_footnote(hw)), *map(markdown_text, _lost_note(hw)), ""]
    return lines


def _latex(statement: ComputeStatement) -> list[str]:
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
    return lines


def _left_out(statement: ComputeStatement) -> list[str]:
    notes = []
    if statement.undescribed_runs:
        notes.append(f"{statement.undescribed_runs} run(s) left out: hardware not described")
    if statement.invalid_runs:
        notes.append(f"{statement.invalid_runs} run(s) left out: seconds no writer stores")
    if statement.unattributed_lost_attempts:
        notes.append(
            f"{statement.unattributed_lost_attempts} failed or killed attempt(s) could not be "
            "attributed to a hardware description: (not described) lost "
            f"{format_duration(statement.unattributed_lost_seconds)}")
    if statement.odd_attempts:
        notes.append(f"{statement.odd_attempts} failed or killed attempt(s) left out: their "
                     "markers hold values no writer could have written")
    if statement.nested_runs:
        notes.append(f"{NESTED_NOTE} ({statement.nested_runs} run(s) inside another run)")
    return notes


def render_compute(statement: ComputeStatement, form: str = "text") -> str:
    """The statement as ``text``, ``markdown``, ``latex`` or ``json``."""
    if form == "json":
        data = statement.to_dict()
        data["sentence"] = sentence(statement)
        return indented_json(data)
    paste = sentence(statement)
    notes = _left_out(statement)
    flags = statement.flags
    if form == "markdown":
        lines = [
            *_markdown(statement), *(f"**Warning:** {markdown_text(f)}\n" for f in flags),
            *(f"_{n}_\n" for n in notes), paste,
        ]
    elif form == "latex":
        lines = [
            *_latex(statement), *(f"% Warning: {latex_text(f)}" for f in flags),
            *(f"% {n}" for n in notes), latex_text(paste),
        ]
    else:
        lines = [*_text(statement), *(f"warning: {f}" for f in flags), *notes, "", "To paste:",
                 paste]
    return "\n".join(map(escape_text, lines)) + "\n"

