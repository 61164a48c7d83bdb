"""``stagetimer table``: the table a paper prints, one row per artifact directory.

Rows are named by the directories' paths relative to what they all share; when
every path has the same depth, each level is a column of its own (a suite reads as
environment | scenario | algorithm), and levels equal in every row are left out.
There is a column per stage, in the order stages were first seen, each cell the
mean ± sample standard deviation and the number of runs (``--median``: the median
and the quartiles), in one unit per column; and a total per row. Only durations a
writer could have stored enter (see ``_summary``).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence

import attrs

from stagetimer._duration import Unit, unit_for
from stagetimer._escape import escape_text
from stagetimer._summary import Summary, summarise, valid_seconds
from stagetimer._tree import Artifact, collector_paused, relative_paths
from stagetimer._tree_read import raw_seconds, raw_stages
from stagetimer.stages import TRAINING_SUFFIX

__all__ = ["FORMATS", "SuiteTable", "build_table", "render_table"]

FORMATS = ("markdown", "latex", "csv")


@attrs.frozen
class SuiteTable:
    """What every format of the table is drawn from."""

    #: the names of the label columns and, per row, its labels
    label_columns: tuple[str, ...]
    labels: tuple[tuple[str, ...], ...]
    paths: tuple[str, ...]
    stages: tuple[str, ...]
    #: per row, stage -> summary (absent: the directory has no such stage)
    cells: tuple[dict[str, Summary], ...]
    totals: tuple[float, ...]
    median: bool


def _labels(artifacts: Sequence[Artifact]) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    relative = relative_paths([a.path for a in artifacts])
    split = [tuple(r.split("/")) for r in relative]
    if len({len(s) for s in split}) != 1 or len(split[0]) == 1:
        return ("directory",), [(r,) for r in relative]
    depth = len(split[0])
    varying = [i for i in range(depth) if len({s[i] for s in split}) > 1] or [depth - 1]
    names = [f"level {i + 1}" for i in varying]
    last = varying[-1]
    if last == depth - 1 and all(
        f"{s[last]}{TRAINING_SUFFIX}" in a.data
        for s, a in zip(split, artifacts, strict=True)
    ):
        names[-1] = "algorithm"
    return tuple(names), [tuple(s[i] for i in varying) for s in split]


def build_table(artifacts: Iterable[Artifact], *, median: bool = False) -> SuiteTable:
    """The table of ``artifacts`` (from ``load_tree``)."""
    with collector_paused():
        return _build(list(artifacts), median)


def _build(shown: list[Artifact], median: bool) -> SuiteTable:
    stages: dict[str, None] = {}
    cells: list[dict[str, Summary]] = []
    totals: list[float] = []
    for artifact in shown:
        row = {}
        for name, stage in raw_stages(artifact.data):
            stages.setdefault(name)
            row[name] = summarise(valid_seconds(raw_seconds(stage)))
        cells.append(row)
        totals.append(sum(s.total for s in row.values()))
    names, labels = _labels(shown) if shown else (("directory",), [])
    return SuiteTable(
        label_columns=names,
        labels=tuple(labels),
        paths=tuple(a.path for a in shown),
        stages=tuple(stages),
        cells=tuple(cells),
        totals=tuple(totals),
        median=median,
    )


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
        assert summary.median is not None and summary.q1 is not None and summary.q3 is not None
        return (
            f"{unit.number(summary.median)} [{unit.number(summary.q1)}, "
            f"{unit.number(summary.q3)}] ({summary.runs})"
        )
    centre = summary.median if median else summary.mean
    assert centre is not None
    if summary.stdev is None:
        return f"{unit.number(centre)} ({summary.runs})"
    return f"{unit.number(centre)} {pm} {unit.number(summary.stdev)} ({summary.runs})"


def _text_rows(table: SuiteTable, pm: str) -> tuple[list[str], list[list[str]]]:
    units = _units(table)
    total_unit = unit_for(list(table.totals))
    header = [
        *table.label_columns,
        *(f"{name} ({unit.name})" for name, unit in zip(table.stages, units, strict=True)),
        f"total ({total_unit.name})",
    ]
    rows = []
    for labels, row, total in zip(table.labels, table.cells, table.totals, strict=True):
        rows.append([
            *labels,
            *(_cell(row.get(n), u, table.median, pm) for n, u in zip(table.stages, units,
                                                                    strict=True)),
            total_unit.number(total),
        ])
    return header, rows


def _what(table: SuiteTable) -> str:
    if table.median:
        return "median [first quartile, third quartile] (runs)"
    return "mean \N{PLUS-MINUS SIGN} sample standard deviation (runs)"


def _markdown(table: SuiteTable) -> str:
    header, rows = _text_rows(table, "\N{PLUS-MINUS SIGN}")
    labels = len(table.label_columns)

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(escape_text(c).replace("|", "\\|") for c in cells) + " |"

    align = ["---"] * labels + ["---:"] * (len(header) - labels)
    out = [line(header), "| " + " | ".join(align) + " |", *map(line, rows)]
    out.append("")
    out.append(f"Each cell: {_what(table)}.")
    return "\n".join(out) + "\n"


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    "\N{MICRO SIGN}": r"$\mu$", "\N{PLUS-MINUS SIGN}": r"$\pm$",
}


def _latex_text(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(c, c) for c in escape_text(text))


def _latex(table: SuiteTable) -> str:
    header, rows = _text_rows(table, "\N{PLUS-MINUS SIGN}")
    labels = len(table.label_columns)

    def line(cells: Sequence[str]) -> str:
        return " & ".join(map(_latex_text, cells)) + r" \\"

    spec = "l" * labels + "r" * (len(header) - labels)
    out = [
        f"% {_what(table)}; needs \\usepackage{{booktabs}}",
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


def _csv(table: SuiteTable) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    columns = ["artifact", *table.label_columns]
    kinds = ["mean", "stdev", "runs"] + (["median", "q1", "q3"] if table.median else [])
    for name in table.stages:
        columns += [f"{name}_{k}_seconds" if k != "runs" else f"{name}_runs" for k in kinds]
    columns.append("total_seconds")
    writer.writerow([escape_text(c) for c in columns])
    for path, labels, row, total in zip(
        table.paths, table.labels, table.cells, table.totals, strict=True
    ):
        cells = [escape_text(path), *map(escape_text, labels)]
        for name in table.stages:
            s = row.get(name)
            if s is None:
                cells += [""] * len(kinds)
                continue
            values = {"mean": s.mean, "stdev": s.stdev, "median": s.median, "q1": s.q1,
                      "q3": s.q3}
            cells += [str(s.runs) if k == "runs" else _number(values[k]) for k in kinds]
        cells.append(repr(total))
        writer.writerow(cells)
    return out.getvalue()


def render_table(table: SuiteTable, form: str = "markdown") -> str:
    """The table as GitHub Markdown, LaTeX (booktabs) or CSV (raw seconds)."""
    if form == "markdown":
        return _markdown(table)
    if form == "latex":
        return _latex(table)
    if form == "csv":
        return _csv(table)
    raise ValueError(f"table format {form!r}: expected one of {', '.join(FORMATS)}")
