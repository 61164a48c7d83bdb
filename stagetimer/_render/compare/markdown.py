"""``stagetimer compare --markdown``: the comparison as a pull-request comment.

One summary line (the verdicts, how many comparisons, the test), then the
regressions, then the improvements, each a table; then the rest folded in a
``<details>`` block; then the hardware, the software and the metadata that differ
between the sides, and the directories found on one side only. Every name passes through
``markdown_text``, so GitHub shows it as it is written.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from stagetimer._analysis.compare.model import (
    FASTER,
    NO_DIFFERENCE,
    SIGNIFICANCE,
    SLOWER,
    TOO_FEW_RUNS,
    Comparison,
    Pair,
    SideStats,
    StageComparison,
)
from stagetimer._render.compare.text import (
    format_ratio,
    hardware_words,
    interval_words,
    metadata_words,
    software_unknown,
    software_words,
    stage_unit,
    times,
    why_no_verdict,
)
from stagetimer._render.duration import Unit
from stagetimer._render.markdown_text import markdown_text

__all__ = ["render_markdown"]

_PM = "\N{PLUS-MINUS SIGN}"
_Row = tuple[Pair, StageComparison]


def _side(side: SideStats, unit: Unit) -> str:
    if side.mean_seconds is None:
        return "no valid runs"
    mean = f"{unit.number(side.mean_seconds)} {unit.name}"
    if side.stdev_seconds is None:
        return f"{mean} ({side.runs})"
    return f"{mean} {_PM} {unit.number(side.stdev_seconds)} {unit.name} ({side.runs})"


def _change(stage: StageComparison) -> str:
    if stage.ratio is None:
        return TOO_FEW_RUNS
    if stage.verdict in (FASTER, SLOWER):
        return f"**{times(stage.ratio)}**"
    return f"{format_ratio(stage.ratio)}x"


def _table(rows: Sequence[_Row], comparison: Comparison, several: bool) -> list[str]:
    header = ["stage", "base", "new", "new/base", "95 % CI", "q"]
    if several:
        header.insert(0, "directory")
    lines = [
        "| " + " | ".join(header) + " |",
        "| " + " | ".join(["---"] * (1 + several) + ["---:"] * 3 + ["---", "---:"]) + " |",
    ]
    for pair, stage in rows:
        unit = stage_unit(stage)
        cells = [
            markdown_text(stage.name), _side(stage.base, unit), _side(stage.new, unit),
            _change(stage), interval_words(stage.ratio_ci), _q(stage, comparison),
        ]
        if several:
            cells.insert(0, markdown_text(pair.relpath or pair.new))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _q(stage: StageComparison, comparison: Comparison) -> str:
    """The q-value, marked where the interval excludes 1 without a verdict (``_notes``)."""
    q = "-" if stage.q_value is None else format_ratio(stage.q_value)
    if why_no_verdict(stage, comparison.threshold, comparison.comparisons) is None:
        return q
    return q + " " + (_MANY if stage.q_value and stage.q_value > SIGNIFICANCE else _SMALL)


_MANY, _SMALL = "\N{DAGGER}", "\N{DOUBLE DAGGER}"


def _notes(rows: Sequence[_Row], comparison: Comparison) -> list[str]:
    """What the marks beside a q-value mean, for the marks used."""
    reasons = [
        reason for _, stage in rows
        if (reason := why_no_verdict(stage, comparison.threshold, comparison.comparisons))
    ]
    notes = []
    if any(r.startswith("the 95 %") for r in reasons):
        notes.append(
            f"{_MANY} The 95 % interval excludes 1, but q > {SIGNIFICANCE:g} after adjusting "
            f"over {comparison.comparisons} comparisons: among that many, some intervals "
            "exclude 1 by chance."
        )
    if any(r.startswith("the interval") for r in reasons):
        notes.append(
            f"{_SMALL} The interval excludes 1, but the change is below the "
            f"{comparison.threshold * 100:g} % threshold."
        )
    return ["", *notes] if notes else []


def _summary(comparison: Comparison, rows: Sequence[_Row]) -> str:
    verdicts = Counter(stage.verdict for _, stage in rows)
    said = [
        f"{verdicts[SLOWER]} slower", f"{verdicts[FASTER]} faster",
        f"{verdicts[NO_DIFFERENCE]} {NO_DIFFERENCE}",
    ]
    if verdicts[TOO_FEW_RUNS]:
        said.append(f"{verdicts[TOO_FEW_RUNS]} with {TOO_FEW_RUNS}")
    test = (
        f"paired t over {comparison.pairs_of_runs} pairs of runs" if comparison.paired
        else "Welch's t on log-seconds"
    )
    mark = ":x:" if verdicts[SLOWER] else ":white_check_mark:"
    return (
        f"{mark} **stagetimer compare**: {', '.join(said)} "
        f"({len(comparison.pairs)} pair{'s' if len(comparison.pairs) != 1 else ''} of "
        f"directories; {comparison.comparisons} comparisons, {test}, a verdict needs the "
        f"Benjamini-Hochberg q {chr(0x2264)} {SIGNIFICANCE:g} and a change of at least "
        f"{comparison.threshold * 100:g} %)"
    )


def _pair_differences(pair: Pair, several: bool) -> list[str]:
    """A pair's hardware, software and metadata differences as list items."""
    where = f"{markdown_text(pair.relpath or pair.new)}: " if several else ""
    side = software_unknown(pair)
    unknown = [] if side is None else [f"- {where}software not described on the {side} side"]
    return [
        *_hardware_items(pair, where), *unknown,
        *(f"- {where}software: {markdown_text(w)}" for w in software_words(pair)),
        *(f"- {where}metadata: {markdown_text(w)}" for w in metadata_words(pair)),
    ]


def _hardware_items(pair: Pair, where: str) -> list[str]:
    """A pair's hardware differences as list items, or that one side is not described."""
    if pair.hardware_differences:
        return [f"- {where}hardware: {markdown_text(w)}" for w in hardware_words(pair)]
    if not pair.base_hardware_ids or not pair.new_hardware_ids:
        return [f"- {where}hardware not described on one side"]
    return []


def _differences(comparison: Comparison, several: bool) -> list[str]:
    lines = [line for pair in comparison.pairs for line in _pair_differences(pair, several)]
    if not lines:
        if not any(p.base_software_ids or p.new_software_ids for p in comparison.pairs):
            return ["Same hardware on both sides (by the fields that change timings); "
                    "the software was not recorded."]
        return ["Same hardware and software on both sides (by the fields that change timings)."]
    return ["#### Differences between the sides", "", *lines]


def _unpaired(comparison: Comparison) -> list[str]:
    lines = []
    for side, paths in (("base", comparison.unpaired.base), ("new", comparison.unpaired.new)):
        if paths:
            lines += [
                f"<details><summary>Only in {side} ({len(paths)}), not compared</summary>", "",
                *(f"- {markdown_text(p)}" for p in paths), "", "</details>", "",
            ]
    return lines


def _verdict_tables(rows: Sequence[_Row], comparison: Comparison, several: bool) -> list[str]:
    """The regressions' table, the improvements', then the rest's folded away."""
    lines = []
    for title, verdict in (("Regressions", SLOWER), ("Improvements", FASTER)):
        chosen = [row for row in rows if row[1].verdict == verdict]
        if chosen:
            lines += [f"#### {title} ({len(chosen)})", "",
                      *_table(chosen, comparison, several), ""]
    rest = [row for row in rows if row[1].verdict not in (SLOWER, FASTER)]
    return lines + _folded(rest, comparison, several)


def _folded(rest: Sequence[_Row], comparison: Comparison, several: bool) -> list[str]:
    """The stages with neither verdict, their table folded away; nothing for none."""
    if not rest:
        return []
    return [
        f"<details><summary>{len(rest)} other stage{'s' if len(rest) != 1 else ''}: "
        f"{NO_DIFFERENCE} or {TOO_FEW_RUNS}</summary>", "",
        *_table(rest, comparison, several), *_notes(rest, comparison), "", "</details>", "",
    ]


def render_markdown(comparison: Comparison) -> str:
    """The comparison as GitHub Markdown for a pull-request comment."""
    rows = [(pair, stage) for pair in comparison.pairs for stage in pair.stages]
    several = len(comparison.pairs) > 1
    lines = [_summary(comparison, rows), ""]
    if not several and comparison.pairs:
        pair = comparison.pairs[0]
        lines += [f"Base: {markdown_text(pair.base)}  ", f"New: {markdown_text(pair.new)}", ""]
    lines += _verdict_tables(rows, comparison, several)
    lines += [*_differences(comparison, several), ""]
    lines += _unpaired(comparison)
    return "\n".join(lines).rstrip("\n") + "\n"
