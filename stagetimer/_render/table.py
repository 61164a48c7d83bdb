"""``stagetimer table`` drawn: GitHub Markdown, LaTeX (booktabs) or CSV.

Each cell is the mean ± sample standard deviation and the number of runs
(``--median``: the median and the quartiles), in one unit per column; each row's
total is a duration (``5 min 32 s``). Names from the files are written so that each
format shows them as they are: Markdown escapes (``markdown_text``), LaTeX escapes
that compile whatever the name (a row may not start with ``[``, which ``\\`` would
read as its optional argument), and CSV cells a spreadsheet will not run as formulas.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Sequence

from stagetimer._analysis.nesting import NESTED_NOTE
from stagetimer._analysis.stats import Summary
from stagetimer._analysis.table import SuiteTable
from stagetimer._render.csv_text import spreadsheet_safe
from stagetimer._render.duration import Unit, format_duration, unit_for
from stagetimer._render.latex_text import latex_text
from stagetimer._render.markdown_text import markdown_text

__all__ = ["FORMATS", "render_table"]

FORMATS = ("markdown", "latex", "csv")


def _centre(summary: Summary, median: bool) -> float | None:
    return summary.median if median else summary.mean


def _units(table: SuiteTable) -> list[Unit]:
    units = []
    for name in table.stages:
        values = [_centre(row[name], table.median) for row in table.cells if name in row]
        units.append(unit_for([v for v in values if v is not None]))
    return units


def _cell(summary: Summary | None, unit: Unit, median: bool, pm: str) -> str:
    if summary is None or summary.runs == 0:
        return ""
    if median and summary.runs > 1:
        return _quartiles(summary, unit)
    centre = _centre(summary, median)
    assert centre is not None
    if summary.stdev is None:
        return f"{unit.number(centre)} ({summary.runs})"
    return f"{unit.number(centre)} {pm} {unit.number(summary.stdev)} ({summary.runs})"


def _quartiles(summary: Summary, unit: Unit) -> str:
    """``412 [398, 430] (5)``: the median, the quartiles and the runs (two or more)."""
    assert summary.median is not None and summary.q1 is not None and summary.q3 is not None
    return (
        f"{unit.number(summary.median)} [{unit.number(summary.q1)}, "
        f"{unit.number(summary.q3)}] ({summary.runs})"
    )


def _same(text: str) -> str:
    return text


def _text_rows(
    table: SuiteTable, name: Callable[[str], str], sign: Callable[[str], str] = _same
) -> tuple[list[str], list[list[str]]]:
    """The header and the rows as text, each name from the files passed through ``name``
    (the format's escape) and the numbers' own signs (±, µ, the quartiles' brackets)
    through ``sign`` (LaTeX's are not text)."""
    units = _units(table)
    header = [
        *map(name, table.label_columns),
        *(f"{name(stage)} ({sign(unit.name)})" for stage, unit in zip(table.stages, units,
                                                                        strict=True)),
        "total",
    ]
    rows = []
    pm = "\N{PLUS-MINUS SIGN}"
    for labels, row, total in zip(table.labels, table.cells, table.totals, strict=True):
        rows.append([
            *map(name, labels),
            *(sign(_cell(row.get(n), u, table.median, pm))
              for n, u in zip(table.stages, units, strict=True)),
            sign(format_duration(total)),
        ])
    return header, rows


def _what(table: SuiteTable) -> str:
    what = (
        "median [first quartile, third quartile] (runs)" if table.median
        else "mean \N{PLUS-MINUS SIGN} sample standard deviation (runs)"
    )
    if table.folded:
        what += "; continuations folded in: a sample is one seed's time (its runs summed)"
    return what


def _nested_note(table: SuiteTable) -> str | None:
    """Said once, under the table, where a total counted nested runs inside their parents."""
    if not table.nested_runs:
        return None
    runs = f"{table.nested_runs} run" + ("" if table.nested_runs == 1 else "s")
    return f"{NESTED_NOTE} ({runs} inside another run)"


def _markdown(table: SuiteTable) -> str:
    header, rows = _text_rows(table, markdown_text)
    labels = len(table.label_columns)

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(cells) + " |"

    align = ["---"] * labels + ["---:"] * (len(header) - labels)
    out = [line(header), "| " + " | ".join(align) + " |", *map(line, rows)]
    out.append("")
    out.append(f"Each cell: {_what(table)}.")
    if (said := _nested_note(table)) is not None:
        out.append(f"Total: {said}.")
    return "\n".join(out) + "\n"


def _latex(table: SuiteTable) -> str:
    header, rows = _text_rows(table, latex_text, latex_text)
    labels = len(table.label_columns)

    def line(cells: Sequence[str]) -> str:
        return " & ".join(cells) + r" \\"

    spec = "l" * labels + "r" * (len(header) - labels)
    out = [
        f"% {_what(table)}; needs \\usepackage{{booktabs}}",
        *([] if (said := _nested_note(table)) is None else [f"% total: {said}"]),
        f"\\begin{{tabular}}{{{spec}}}",
        r"\toprule",
        line(header),
        r"\midrule",
        *map(line, rows),
        r"\bottomrule",
        r"\end{tabular}",
    ]
    return "\n".join(out) + "\n"


def _number(value: float | None) -> str:
    return "" if value is None else repr(value)


def _csv_cells(s: Summary | None, kinds: list[str]) -> list[str]:
    """A stage's cells of a directory's CSV row: empty where it has no runs."""
    if s is None:
        return [""] * len(kinds)
    values = {"mean": s.mean, "stdev": s.stdev, "median": s.median, "q1": s.q1, "q3": s.q3}
    return [str(s.runs) if k == "runs" else _number(values[k]) for k in kinds]


def _csv_columns(table: SuiteTable, kinds: list[str]) -> list[str]:
    """``artifact``, the label columns, ``<stage>_<kind>_seconds`` and ``<stage>_runs`` per
    stage, ``total_seconds``."""
    stages = [f"{name}_{k}_seconds" if k != "runs" else f"{name}_runs"
              for name in table.stages for k in kinds]
    return ["artifact", *table.label_columns, *stages, "total_seconds"]


def _csv(table: SuiteTable) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    kinds = ["mean", "stdev", "runs"] + (["median", "q1", "q3"] if table.median else [])
    writer.writerow([spreadsheet_safe(c) for c in _csv_columns(table, kinds)])
    for path, labels, row, total in zip(
        table.paths, table.labels, table.cells, table.totals, strict=True
    ):
        cells = [spreadsheet_safe(path), *map(spreadsheet_safe, labels)]
        for name in table.stages:
            cells += _csv_cells(row.get(name), kinds)
        cells.append(repr(total))
        writer.writerow(cells)
    return out.getvalue()


_FORMS: dict[str, Callable[[SuiteTable], str]] = {
    "markdown": _markdown, "latex": _latex, "csv": _csv,
}


def render_table(table: SuiteTable, form: str = "markdown") -> str:
    """The table as GitHub Markdown, LaTeX (booktabs) or CSV (raw seconds)."""
    render = _FORMS.get(form)
    if render is not None:
        return render(table)
    raise ValueError(f"table format {form!r}: expected one of {', '.join(FORMATS)}")
