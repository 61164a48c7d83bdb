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

from stagetimer._analysis.compare.model import (
    FASTER,
    NO_DIFFERENCE,
    SIGNIFICANCE,
    SLOWER,
    TOO_FEW_RUNS,
    Comparison,
    Pair,
    StageComparison,
)
from stagetimer._escape import escape_text
from stagetimer._render.compare.text import SAME_HARDWARE, hardware_words
from stagetimer._render.output_file import write_figure
from stagetimer._render.report_plot import (
    load_pyplot,
    quiet_floats,
)

__all__ = ["plot_comparison"]

_COLOURS = {FASTER: "#1a7f37", SLOWER: "#cf222e"}
_NEUTRAL = "#57606a"
#: ratios worth a tick on the log axis
_TICKS = (
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 0.67, 0.8, 0.9, 0.95, 1.0,
    1.05, 1.1, 1.25, 1.5, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0,
)  # fmt: skip
_COARSE_TICKS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0)


def _hardware(pair: Pair) -> str:
    """A pair's hardware in words: what differs, or the same, or not known."""
    words = "; ".join(hardware_words(pair))
    if words:
        return f"hardware differs: {words}"
    known = bool(pair.base_hardware_ids and pair.new_hardware_ids) and not (
        pair.undescribed_hardware_ids
    )
    return SAME_HARDWARE if known else "hardware not described on one side"


def _caption(comparison: Comparison) -> str:
    """The hardware differences in words, pairs with the same differences on one line."""
    groups: dict[str, list[str]] = {}
    for pair in comparison.pairs:
        groups.setdefault(_hardware(pair), []).append(_label(pair))
    if len(groups) == 1:
        ((words, labels),) = groups.items()
        scope = f"all {len(labels)} pairs: " if len(labels) > 1 else ""
        return textwrap.fill(scope + words, 110)
    lines = [f"{', '.join(labels)}: {words}" for words, labels in groups.items()]
    wrapped = [textwrap.fill(line, 110) for line in lines[:8]]
    if len(lines) > 8:
        wrapped.append(f"... and {len(lines) - 8} more (see stagetimer compare)")
    return "\n".join(wrapped)


def _short_labels(paths: list[str], width: int = 28) -> list[str]:
    """The pairs' paths without the components all share, the middle elided past ``width``."""
    parts = [path.split("/") for path in paths]
    shared = _shared(parts)
    return [_elided_path(p[shared:], width) for p in parts]


def _shared(parts: list[list[str]]) -> int:
    """How many leading components all the paths (two or more) share, leaving each at
    least one."""
    shared = 0
    while len(parts) > 1 and all(len(p) > shared + 1 for p in parts):
        if len({p[shared] for p in parts}) != 1:
            break
        shared += 1
    return shared


def _elided_path(components: list[str], width: int) -> str:
    """A path, its middle elided past ``width`` where it has more than two components."""
    label = "/".join(components)
    if len(label) > width and len(components) > 2:
        return f"{components[0]}/…/{components[-1]}"
    return label


def _label(pair: Pair) -> str:
    if pair.relpath is not None:
        return pair.relpath
    return os.path.basename(os.path.normpath(pair.new)) or pair.new


def _legend(axes: Any, verdicts: set[str]) -> None:
    from matplotlib.lines import Line2D

    handles = []
    for verdict in (FASTER, SLOWER, NO_DIFFERENCE, TOO_FEW_RUNS):
        if verdict in verdicts:
            colour = _COLOURS.get(verdict, _NEUTRAL)
            hollow = verdict == TOO_FEW_RUNS
            marker = Line2D(
                [], [], color=colour, marker="o", fillstyle="none" if hollow else "full",
                linestyle="",
            )  # fmt: skip
            handles.append((marker, verdict))
    axes.legend(
        [h for h, _ in handles], [v for _, v in handles], fontsize=8, loc="best", framealpha=0.8
    )


#: ratios are drawn within these (a ratio of 1e-300 or an infinite bound is drawn at the
#: edge): matplotlib's log axis and the logarithms below need finite, positive numbers
_SHOWN = (1e-12, 1e12)


def _shown(value: float) -> float:
    return min(max(value, _SHOWN[0]), _SHOWN[1]) if value == value else 1.0


def _ratio_axis(axes: Any, rows: list[tuple[Pair, StageComparison]]) -> None:
    """Limits around every ratio, interval and 1, with room for the labels; ticks as "1.1x"."""
    values = [1.0]
    for _, stage in rows:
        values.append(_shown(stage.ratio or 1.0))
        values.extend(map(_shown, stage.ratio_ci or ()))
    low, high = math.log(min(values)), math.log(max(values))
    span = max(high - low, math.log(1.1))
    left, right = math.exp(low - 0.08 * span), math.exp(high + 0.3 * span)
    axes.set_xlim(left, right)
    shown = [t for t in _ticks(low, high, right / left) if left <= t <= right]
    axes.set_xticks(shown, [f"{t:g}x" for t in shown])
    axes.xaxis.set_minor_locator(_null_locator())


def _ticks(low: float, high: float, width: float) -> tuple[float, ...]:
    """The ticks for ratios from e**``low`` to e**``high`` on an axis ``width`` times as
    wide at its right as at its left: wide ranges get the coarse ticks only, so that the
    labels never overlap; beyond the listed ticks, powers of ten."""
    if width > 1e4:
        return tuple(10.0**k for k in range(math.floor(low / math.log(10)),
                                            math.ceil(high / math.log(10)) + 1))
    return _TICKS if width < 4 else _COARSE_TICKS


def _null_locator() -> Any:
    from matplotlib.ticker import NullLocator

    return NullLocator()


def _title(comparison: Comparison) -> str:
    """What is compared with what: the two folders (the trees' roots for a tree), the
    threshold and the test."""
    if len(comparison.pairs) == 1 and comparison.pairs[0].relpath is None:
        base, new = comparison.pairs[0].base, comparison.pairs[0].new
    else:
        base = _root(comparison, "base")
        new = _root(comparison, "new")
    base, new = _elided(escape_text(base)), _elided(escape_text(new))
    return (
        f"new: {new}\nvs base: {base}\n(threshold {comparison.threshold * 100:g} %, "
        f"verdict at Benjamini-Hochberg q \N{LESS-THAN OR EQUAL TO} {SIGNIFICANCE:g} over "
        f"{comparison.comparisons} comparisons)"
    )


def _root(comparison: Comparison, side: str) -> str:
    """The folder a tree was given as: a pair's path without its relative path."""
    for pair in comparison.pairs:
        path = pair.base if side == "base" else pair.new
        if pair.relpath and pair.relpath != "." and path.endswith(pair.relpath):
            return path[: -len(pair.relpath)].rstrip("/") or "/"
        return path
    return "?"


def _elided(text: str, width: int = 90) -> str:
    return text if len(text) <= width else "\N{HORIZONTAL ELLIPSIS}" + text[-(width - 1):]


def _row_labels(comparison: Comparison, rows: list[tuple[Pair, StageComparison]]) -> list[str]:
    """Each row's stage name, after its pair's short label where there are several pairs."""
    if len(comparison.pairs) <= 1:
        return [stage.name for _, stage in rows]
    short = _short_labels([pair.relpath or _label(pair) for pair in comparison.pairs])
    names = {id(pair): label for pair, label in zip(comparison.pairs, short, strict=True)}
    return [f"{names[id(pair)]}  {stage.name}" for pair, stage in rows]


def _draw_ratio(axes: Any, y: int, stage: StageComparison) -> None:
    """Row ``y``: the stage's ratio as a dot on its interval, and its value beside them."""
    colour = _COLOURS.get(stage.verdict, _NEUTRAL)
    assert stage.ratio is not None
    ratio = _shown(stage.ratio)
    end = ratio
    if stage.ratio_ci is not None:
        low, high = map(_shown, stage.ratio_ci)
        axes.errorbar(
            [ratio], [y], xerr=[[ratio - low], [high - ratio]],
            fmt="o", color=colour, ecolor=colour, capsize=4,
        )  # fmt: skip
        end = max(high, ratio)
    else:
        axes.plot([ratio], [y], marker="o", fillstyle="none", color=colour)
    # Beside the whisker's end, not over it.
    axes.annotate(
        f"{stage.ratio:.3g}x", (end, y), xytext=(6, 0), va="center",
        textcoords="offset points", fontsize=8, color=colour,
    )  # fmt: skip


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
    labels = _row_labels(comparison, rows)
    caption = _caption(comparison)
    caption_lines = caption.count("\n") + 1
    axes_height = 1.3 + 0.32 * len(rows)
    bottom_inches = 0.3 + 0.17 * caption_lines  # the caption, below the axis label
    figure, axes = plt.subplots(figsize=(9.0, min(axes_height + bottom_inches + 0.4, 60.0)))
    height = figure.get_figheight()
    try:
        for y, (_, stage) in enumerate(rows):
            _draw_ratio(axes, y, stage)
        axes.axvline(1.0, color="black", linewidth=1)
        _legend(axes, {stage.verdict for _, stage in rows})
        axes.set_xscale("log")
        _ratio_axis(axes, rows)
        axes.set_yticks(range(len(rows)), labels)
        axes.invert_yaxis()
        axes.set_xlabel("time ratio new / base (95 % interval; < 1 is faster)")
        axes.set_title(_title(comparison), fontsize=10, loc="left")
        axes.grid(axis="x", which="both", alpha=0.3)
        figure.text(0.01, 0.12 / height, caption, fontsize=8, va="bottom", ha="left")
        figure.tight_layout(rect=(0, bottom_inches / height, 1, 1))
        with quiet_floats():  # see report_plot: extreme ratios overflow in the transforms
            write_figure(figure, path)
    finally:
        plt.close(figure)
