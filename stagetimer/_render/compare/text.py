"""The text ``stagetimer compare`` prints: pyperf ``compare_to``'s lines, and the hardware.

One line per stage compared::

    ippo_train: Mean +- std dev: [base] 12.4 s +- 0.300 s -> [new] 10.1 s +- 0.200 s: 1.23x faster
        (new/base 0.813, 95 % CI 0.791 to 0.836, q 0.003; 5 and 5 runs)

then, per pair, whether the hardware was the same by the fields that change a
duration, or which fields differ, in words, and the software that differs. The last
line counts the verdicts and says over how many comparisons the q-values were
adjusted. A "no significant difference" beside an interval that excludes 1 says why
(the adjustment over many comparisons, or the threshold).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

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
from stagetimer._escape import escape_text
from stagetimer._render.compute import used_side_by_side
from stagetimer._render.duration import Unit, unit_for
from stagetimer._render.json_text import layered_json
from stagetimer.hardware import Difference, format_differences

__all__ = [
    "SAME_HARDWARE",
    "format_comparison",
    "format_ratio",
    "hardware_words",
    "interval_words",
    "metadata_lines",
    "metadata_words",
    "render_json",
    "software_lines",
    "software_unknown",
    "software_words",
    "times",
    "why_no_verdict",
]

SAME_HARDWARE = "same hardware (by the fields that change timings)"


def _runs(n: int) -> str:
    return f"{n} run" if n == 1 else f"{n} runs"


def _side_text(label: str, side: SideStats, unit: Unit) -> str:
    if side.mean_seconds is None:
        return f"[{label}] no valid runs"
    mean = f"{unit.number(side.mean_seconds)} {unit.name}"
    if side.stdev_seconds is None:
        return f"[{label}] {mean} ({_runs(side.runs)})"
    return f"[{label}] {mean} +- {unit.number(side.stdev_seconds)} {unit.name}"


def times(ratio: float) -> str:
    """pyperf's words: a ratio new/base of 0.5 is "2.00x faster", 1.5 is "1.50x slower"
    (three significant digits, trailing zeros kept, as every ratio ``compare`` writes)."""
    if ratio < 1:
        return f"{format_ratio(1 / ratio)}x faster" if ratio > 0 else "infinitely faster"
    return f"{format_ratio(ratio)}x slower"


def format_ratio(value: float) -> str:
    """A ratio or a q-value in three significant digits, trailing zeros kept (``1.00``)."""
    return f"{value:#.3g}"


def interval_words(interval: tuple[float, float] | None) -> str:
    """A 95 % interval as ``0.791 to 0.836``; ``-`` for none."""
    if interval is None:
        return "-"
    return f"{format_ratio(interval[0])} to {format_ratio(interval[1])}"


def why_no_verdict(stage: StageComparison, threshold: float, comparisons: int) -> str | None:
    """Why "no significant difference" stands beside an interval that excludes 1; None
    when the interval includes 1 (nothing to explain)."""
    if stage.verdict != NO_DIFFERENCE or stage.ratio_ci is None or stage.q_value is None:
        return None
    low, high = stage.ratio_ci
    if low <= 1.0 <= high:
        return None
    if stage.q_value > SIGNIFICANCE:
        return (
            f"the 95 % interval excludes 1, but adjusted over {comparisons} comparisons "
            f"q = {format_ratio(stage.q_value)} > {SIGNIFICANCE:g}: one such interval in "
            "20 is expected by chance"
        )
    return (
        f"the interval excludes 1, but the change is below the {threshold * 100:g} % threshold"
    )


def _counts(stage: StageComparison) -> str:
    """``5 and 5 runs``, or ``4 pairs of runs, 1 and 0 unmatched`` where runs were paired."""
    if stage.pairs_of_runs is None:
        return f"{stage.base.runs} and {stage.new.runs} runs"
    counts = f"{stage.pairs_of_runs} pairs of runs"
    if any(stage.unmatched_runs):
        counts += f", {stage.unmatched_runs[0]} and {stage.unmatched_runs[1]} unmatched"
    return counts


def stage_unit(stage: StageComparison) -> Unit:
    """The unit both sides of a stage are written in: the one the larger mean reads best in."""
    return unit_for([s.mean_seconds for s in (stage.base, stage.new) if s.mean_seconds is not None])


def _both(stage: StageComparison) -> str:
    """``base ... -> new ...``: both sides in one unit (``stage_unit``)."""
    unit = stage_unit(stage)
    return f"{_side_text('base', stage.base, unit)} -> {_side_text('new', stage.new, unit)}"


#: why a stage has too few runs for a ratio, and what an interval needs; by whether its
#: runs were paired
_TOO_FEW = {True: ("no run is matched", "2 pairs of runs"),
            False: ("a side has no valid run", "2 runs per side")}


def _stage_line(stage: StageComparison, threshold: float, comparisons: int) -> str:
    both = _both(stage)
    name = escape_text(stage.name)
    counts = _counts(stage)
    why, need = _TOO_FEW[stage.pairs_of_runs is not None]
    if stage.ratio is None:
        return f"{name}: {both}: {TOO_FEW_RUNS} ({why})"
    ratio = f"new/base {format_ratio(stage.ratio)}"
    if stage.ratio_ci is None or stage.q_value is None:
        return (
            f"{name}: {both}: {TOO_FEW_RUNS} for a verdict ({ratio}; {counts}; "
            f"an interval needs {need})"
        )
    low, high = stage.ratio_ci
    detail = (
        f"({ratio}, 95 % CI {format_ratio(low)} to {format_ratio(high)}, "
        f"q {format_ratio(stage.q_value)}; {counts})"
    )
    if stage.verdict in (FASTER, SLOWER):
        return f"{name}: Mean +- std dev: {both}: {times(stage.ratio)} {detail}"
    line = f"{name}: Mean +- std dev: {both}: {NO_DIFFERENCE} {detail}"
    reason = why_no_verdict(stage, threshold, comparisons)
    return line if reason is None else f"{line}; {reason}"


def software_words(pair: Pair) -> list[str]:
    """What differs between the software of the sides, in words, not yet escaped (the
    text escapes it with ``escape_text``, Markdown with ``markdown_text``): one entry
    per pair of software ids that differ, ``"commit 1a2b3c4 → 5d6e7f8 (uncommitted
    changes); torch 2.4.1 → 2.5.0"``, led by the two ids where several pairs differ."""
    from stagetimer.software import format_software_differences

    groups: dict[tuple[str, str], list[Difference]] = {}
    for d in pair.software_differences:
        key = (d.base_software_id, d.new_software_id)
        groups.setdefault(key, []).append(Difference(d.field, d.base, d.new))
    if len(groups) == 1:
        return [format_software_differences(found) for found in groups.values()]
    return [
        f"{base_id} -> {new_id}: {format_software_differences(found)}"
        for (base_id, new_id), found in groups.items()
    ]


def hardware_words(pair: Pair) -> list[str]:
    """What differs between the hardware of the sides, in words, not yet escaped: one
    entry per pair of hardware ids that differ, ``"memory.limit_bytes: 16 GiB → 64 GiB"``,
    led by the two ids where a side's runs name several."""
    groups: dict[tuple[str, str], list[Difference]] = {}
    for d in pair.hardware_differences:
        key = (d.base_hardware_id, d.new_hardware_id)
        groups.setdefault(key, []).append(Difference(d.field, d.base, d.new))
    if len(pair.base_hardware_ids) > 1 or len(pair.new_hardware_ids) > 1:
        return [f"{b} -> {n}: {format_differences(found)}" for (b, n), found in groups.items()]
    return [format_differences(found) for found in groups.values()]


def software_unknown(pair: Pair) -> str | None:
    """Which side's runs name no software description, where only one side's do."""
    if bool(pair.base_software_ids) == bool(pair.new_software_ids):
        return None
    return "base" if not pair.base_software_ids else "new"


def software_lines(pair: Pair) -> list[str]:
    """What differs between the software of the two sides, as the text prints it.

    ``["Software differs: commit 1a2b3c4 → 5d6e7f8 (uncommitted changes); torch 2.4.1 →
    2.5.0"]``; ``["Same software."]``; nothing when neither side recorded its software.
    """
    if not pair.base_software_ids and not pair.new_software_ids:
        return []  # written before software was recorded, or by recorders told not to
    side = software_unknown(pair)
    if side is not None:
        return [f"Software unknown: the {side} side's runs name no software description."]
    words = [escape_text(w) for w in software_words(pair)]
    if not words:
        return ["Same software."]
    if len(words) > 1:
        return ["Software differs:", *(f"  {w}" for w in words)]
    return [f"Software differs: {words[0]}"]


def metadata_words(pair: Pair) -> list[str]:
    """Each metadata key whose values differ, ``"load mp: fork → spawn"``, not yet escaped."""
    return [
        f"{d.stage} {d.key}: {_values_text(d.base)} → {_values_text(d.new)}"
        for d in pair.metadata_differences
    ]


def metadata_lines(pair: Pair) -> list[str]:
    """``["Metadata differs: load mp: fork → spawn"]``, or nothing (the text)."""
    words = metadata_words(pair)
    if not words:
        return []
    return [f"Metadata differs: {escape_text('; '.join(words))}"]


def _values_text(values: tuple[Any, ...]) -> str:
    return ", ".join(v if isinstance(v, str) else json.dumps(v) for v in values)


def _hardware_lines(pair: Pair) -> list[str]:
    if not pair.base_hardware_ids or not pair.new_hardware_ids:
        side = "base" if not pair.base_hardware_ids else "new"
        return [f"Hardware unknown: the {side} side's runs name no hardware description."]
    unknown = _undescribed(pair)
    words = hardware_words(pair)
    if words:
        return [*unknown, "Hardware differs:", *(f"  {escape_text(w)}" for w in words)]
    if unknown:
        return [*unknown, "No difference among the descriptions there are."]
    return [SAME_HARDWARE[0].upper() + SAME_HARDWARE[1:] + "."]


def _undescribed(pair: Pair) -> list[str]:
    """The line naming the hardware ids the runs name that have no description, if any."""
    if not pair.undescribed_hardware_ids:
        return []
    listed = ", ".join(escape_text(i) for i in pair.undescribed_hardware_ids)
    return [f"Hardware unknown for {listed}: no description in timings_hardware.json."]


def _pair_block(pair: Pair, comparison: Comparison, *, header: bool) -> list[str]:
    lines = [f"{escape_text(pair.base)} (base) -> {escape_text(pair.new)} (new)"] if header else []
    lines.extend(_stage_lines(pair, comparison))
    for side, names in (("base", pair.base_only_stages), ("new", pair.new_only_stages)):
        if names:
            listed = ", ".join(escape_text(name) for name in names)
            lines.append(f"Only in {side}, not compared: {listed}")
    lines.extend(_hardware_lines(pair))
    lines.extend(software_lines(pair))
    lines.extend(metadata_lines(pair))
    return lines


def _stage_lines(pair: Pair, comparison: Comparison) -> list[str]:
    """A line per stage on both sides, with what it used where it recorded resources."""
    if not pair.stages:
        return ["no stage is recorded on both sides"]
    lines = []
    for stage in pair.stages:
        lines.append(_stage_line(stage, comparison.threshold, comparison.comparisons))
        if stage.resources is not None:
            lines.append(f"  used: {used_side_by_side(stage.resources)}")
    return lines


def format_comparison(comparison: Comparison) -> str:
    """The comparison as text, one paragraph per pair, then the unpaired directories and
    a count of the verdicts."""
    blocks = _pair_blocks(comparison)
    for side, paths in (("base", comparison.unpaired.base), ("new", comparison.unpaired.new)):
        if paths:
            listed = "\n".join(f"  {escape_text(path)}" for path in paths)
            blocks.append(f"Only in {side} ({len(paths)}), not compared:\n{listed}")
    blocks.append(_verdicts_line(comparison))
    return "\n\n".join(blocks) + "\n"


def _pair_blocks(comparison: Comparison) -> list[str]:
    """A paragraph per pair: one pair and nothing unpaired under a ``base:``/``new:``
    head, else each pair under its own line."""
    single = len(comparison.pairs) == 1 and not (
        comparison.unpaired.base or comparison.unpaired.new
    )
    if not single:
        return ["\n".join(_pair_block(pair, comparison, header=True))
                for pair in comparison.pairs]
    pair = comparison.pairs[0]
    head = [f"base: {escape_text(pair.base)}", f"new:  {escape_text(pair.new)}"]
    return ["\n".join([*head, "", *_pair_block(pair, comparison, header=False)])]


def _verdicts_line(comparison: Comparison) -> str:
    """How many pairs and stages, each verdict's count, the threshold and the test."""
    if not comparison.pairs:
        return "No artifact directory is at the same path on both sides."
    verdicts = Counter(stage.verdict for pair in comparison.pairs for stage in pair.stages)
    order = (FASTER, SLOWER, NO_DIFFERENCE, TOO_FEW_RUNS)
    counts = ", ".join(f"{verdicts[v]} {v}" for v in order if verdicts[v])
    threshold = f"{comparison.threshold * 100:g} %"
    return (
        f"{len(comparison.pairs)} pair(s), {sum(verdicts.values())} stage(s): "
        f"{counts or 'none compared'} (threshold {threshold}; {_tests(comparison)})"
    )


def _tests(comparison: Comparison) -> str:
    """How the verdicts were reached: the test, and over how many comparisons."""
    n = comparison.comparisons
    how = (
        f"paired t over {comparison.pairs_of_runs} pairs of runs matched by run_idx, label "
        "and rank" if comparison.paired else "Welch's t on log-seconds"
    )
    return (
        f"{how}; {n} comparison{'' if n == 1 else 's'}, a verdict needs the "
        f"Benjamini-Hochberg q <= {SIGNIFICANCE:g} over all of them"
    )


def render_json(comparison: Comparison) -> str:
    """``comparison.to_dict()`` as strict JSON text (no NaN or infinity: null; no raw
    control characters; bytes that were not UTF-8 as escapes), indented down to the
    pairs' lists, each stage and each difference on one line."""
    return layered_json(comparison.to_dict())
