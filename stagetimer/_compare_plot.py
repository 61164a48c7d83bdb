"""``stagetimer compare --plot``: each stage's ratio new/base with its 95 % interval.

One row per compared stage (pairs of a tree one after the other), the ratio as a
dot, its interval as a bar, a vertical line at 1 (no change), the verdict's
colour, and the hardware differences in words beneath. The ratio axis is
logarithmic, so 0.5x and 2x lie equally far from 1. matplotlib is the optional
``stagetimer[plot]`` extra, imported only here, with the Agg backend.
"""

from __future__ import annotations

import math
import os
import textwrap
from typing import Any

from stagetimer._compare import FASTER, SLOWER, Comparison, Pair, StageComparison
from stagetimer._compare_text import SAME_HARDWARE
from stagetimer._plot import FORMATS, PlotUnavailableError, load_pyplot
from stagetimer.hardware import Difference, format_differences

__all__ = ["check_target", "plot_comparison"]

_COLOURS = {FASTER: "#1a7f37", SLOWER: "#cf222e"}
_NEUTRAL = "#57606a"
#: ratios worth a tick on the log axis
_TICKS = (
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 0.67, 0.8, 0.9, 0.95, 1.0,
    1.05, 1.1, 1.25, 1.5, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0,
)  # fmt: skip


def check_target(path: str) -> str | None:
    """Why the plot cannot be written to ``path`` (checked before any work), or None."""
    if os.path.splitext(path)[1].lower() not in FORMATS:
        return "the file name must end in .png or .svg"
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        return f"its directory {directory} does not exist"
    if not os.access(directory, os.W_OK):
        return f"its directory {directory} is not writable"
    if os.path.isdir(path):
        return "is a directory"
    try:
        load_pyplot()
    except PlotUnavailableError as exc:
        return str(exc)
    return None


def _caption(comparison: Comparison) -> str:
    lines = []
    several = len(comparison.pairs) > 1
    for pair in comparison.pairs:
        words = format_differences([Difference(d.field, d.base, d.new) for d in _unique(pair)])
        where = f"{_label(pair)}: " if several else ""
        if words:
            lines.append(f"{where}hardware differs: {words}")
        elif pair.base_hardware_ids and pair.new_hardware_ids:
            if not several:
                lines.append(SAME_HARDWARE)
        else:
            lines.append(f"{where}hardware unknown on one side")
    if several and len(lines) < len(comparison.pairs):
        lines.append(f"other pairs: {SAME_HARDWARE}")
    wrapped = [textwrap.fill(line, 110) for line in lines[:12]]
    if len(lines) > 12:
        wrapped.append(f"... and {len(lines) - 12} more (see stagetimer compare)")
    return "\n".join(wrapped)


def _unique(pair: Pair) -> list[Difference]:
    seen: dict[tuple[str, str, str], Difference] = {}
    for d in pair.hardware_differences:
        seen.setdefault((d.field, repr(d.base), repr(d.new)), Difference(d.field, d.base, d.new))
    return list(seen.values())


def _label(pair: Pair) -> str:
    return os.path.basename(os.path.normpath(pair.new)) or pair.new


def _ratio_axis(axes: Any, rows: list[tuple[Pair, StageComparison]]) -> None:
    """Limits around every ratio, interval and 1, with room for the labels; ticks as "1.1x"."""
    values = [1.0]
    for _, stage in rows:
        values.append(stage.ratio or 1.0)
        values.extend(stage.ratio_ci or ())
    low, high = math.log(min(values)), math.log(max(values))
    span = max(high - low, math.log(1.1))
    axes.set_xlim(math.exp(low - 0.08 * span), math.exp(high + 0.3 * span))
    shown = [t for t in _TICKS if math.exp(low - 0.08 * span) <= t <= math.exp(high + 0.3 * span)]
    axes.set_xticks(shown, [f"{t:g}x" for t in shown])
    axes.xaxis.set_minor_locator(_null_locator())


def _null_locator() -> Any:
    from matplotlib.ticker import NullLocator

    return NullLocator()


def plot_comparison(comparison: Comparison, path: str) -> None:
    """Draw the ratios of ``comparison`` into ``path`` (.png or .svg)."""
    plt = load_pyplot()
    rows = [
        (pair, stage)
        for pair in comparison.pairs
        for stage in pair.stages
        if stage.ratio is not None
    ]
    if not rows:
        raise ValueError("no stage has runs on both sides: nothing to plot")
    several = len(comparison.pairs) > 1
    labels = [f"{_label(pair)}: {stage.name}" if several else stage.name for pair, stage in rows]
    caption = _caption(comparison)
    height = 1.2 + 0.35 * len(rows) + 0.18 * caption.count("\n")
    figure, axes = plt.subplots(figsize=(8.0, min(max(height, 2.6), 60.0)))
    try:
        for y, (_, stage) in enumerate(rows):
            colour = _COLOURS.get(stage.verdict, _NEUTRAL)
            ratio = stage.ratio
            assert ratio is not None
            if stage.ratio_ci is not None:
                low, high = stage.ratio_ci
                axes.errorbar(
                    [ratio], [y], xerr=[[ratio - low], [high - ratio]],
                    fmt="o", color=colour, ecolor=colour, capsize=4,
                )  # fmt: skip
            else:
                axes.plot([ratio], [y], marker="o", fillstyle="none", color=colour)
            axes.annotate(
                f"{ratio:.3g} ({stage.verdict})", (ratio, y), xytext=(6, 6),
                textcoords="offset points", fontsize=8, color=colour,
            )  # fmt: skip
        axes.axvline(1.0, color="black", linewidth=1)
        axes.set_xscale("log")
        _ratio_axis(axes, rows)
        axes.set_yticks(range(len(rows)), labels)
        axes.invert_yaxis()
        axes.set_xlabel("time ratio new / base (95 % interval; < 1 is faster)")
        threshold = f"{comparison.threshold * 100:g} %"
        axes.set_title(f"stagetimer compare (threshold {threshold})", fontsize=10)
        axes.grid(axis="x", which="both", alpha=0.3)
        figure.text(0.01, 0.01, caption, fontsize=8, va="bottom", ha="left", wrap=True)
        figure.tight_layout(rect=(0, 0.04 + 0.03 * (caption.count("\n") + 1), 1, 1))
        figure.savefig(path)
    finally:
        plt.close(figure)
