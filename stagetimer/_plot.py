"""``stagetimer report --plot``: stage totals per artifact directory as horizontal bars.

One panel per artifact directory, all sharing the seconds axis so directories
(algorithms) compare at a glance. A bar is a stage's total; its segments, split
by thin white lines, are the runs in file order. Stages of the same kind share a
colour across panels (every ``*_train`` stage is "training"). matplotlib is an
optional extra (``stagetimer[plot]``), imported only here, with the Agg backend.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from stagetimer._report import ArtifactReport, format_seconds
from stagetimer.stages import AUTO_RESUME_SUFFIX

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["FORMATS", "PlotUnavailableError", "load_pyplot", "plot_report"]

FORMATS = (".png", ".svg")
INSTALL_HINT = "pip install 'stagetimer[plot]'"


class PlotUnavailableError(RuntimeError):
    """matplotlib cannot be imported; the message says how to install it."""


def load_pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend, or ``PlotUnavailableError``."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise PlotUnavailableError(
            f"--plot needs matplotlib ({exc}); install it with: {INSTALL_HINT}"
        ) from None
    return plt


def _kind(stage: str) -> str:
    """The colour group of a stage: the training stages of all algorithms are one kind."""
    base = stage.removesuffix(AUTO_RESUME_SUFFIX)
    return "training" if base.endswith("_train") else base


def _short_paths(paths: Sequence[str]) -> list[str]:
    """The directories relative to what they share, so the panel titles stay short."""
    if len(paths) < 2:
        return [os.path.normpath(p) for p in paths]
    absolute = [os.path.abspath(p) for p in paths]
    common = os.path.commonpath(absolute)
    return [os.path.relpath(p, common) for p in absolute]


def _draw_panel(
    ax: Axes, report: ArtifactReport, title: str, colours: dict[str, Any], xmax: float
) -> None:
    names = [s.name for s in report.stages]
    positions = list(range(len(names)))
    for y, stats in zip(positions, report.stages, strict=True):
        colour = colours[_kind(stats.name)]
        hatch = "//" if stats.name.endswith(AUTO_RESUME_SUFFIX) else None
        # One bar per stage, the runs split by white lines drawn in one call (a bar per
        # run costs seconds for thousands of runs). A line after a sliver would hide it.
        ax.barh(
            y, stats.total_seconds, height=0.7, color=colour, hatch=hatch,
            edgecolor="white", linewidth=0,  # the edge colour is the hatch colour
        )
        ends, end = [], 0.0
        for seconds in stats.run_seconds[:-1]:
            end += seconds
            if seconds > xmax * 0.015:
                ends.append(end)
        if ends:
            ax.vlines(ends, y - 0.35, y + 0.35, colors="white", linewidth=0.8)
        runs = f"{stats.runs} run" + ("" if stats.runs == 1 else "s")
        label = f"{format_seconds(stats.total_seconds)}  ({runs})"
        ax.text(
            stats.total_seconds + xmax * 0.01, y, label,
            va="center", ha="left", fontsize=8, color="0.25",
        )
    ax.set_yticks(positions, names, fontsize=9)
    ax.set_ylim(len(names) - 0.4, -0.6)  # first recorded stage on top
    ax.set_title(title, loc="left", fontsize=10, fontweight="bold")
    ax.grid(axis="x", color="0.9", linewidth=0.8)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def plot_report(reports: Sequence[ArtifactReport], path: str) -> None:
    """Draw ``reports`` into ``path`` (``.png`` or ``.svg``); ``PlotUnavailableError`` without
    matplotlib, ``ValueError`` for another suffix or when there is nothing to draw."""
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in FORMATS:
        raise ValueError(f"{path}: the plot must be a .png or .svg file")
    shown = [r for r in reports if r.stages]
    if not shown:
        raise ValueError("no stage was recorded in the reported directories: nothing to plot")
    plt = load_pyplot()
    kinds = list(dict.fromkeys(_kind(s.name) for r in shown for s in r.stages))
    palette = plt.get_cmap("tab10").colors
    colours = {kind: palette[i % len(palette)] for i, kind in enumerate(kinds)}
    xmax = max(s.total_seconds for r in shown for s in r.stages) or 1.0
    heights = [len(r.stages) + 1.2 for r in shown]
    fig, axes = plt.subplots(
        len(shown), 1, sharex=True, squeeze=False,
        figsize=(9, 1.0 + 0.28 * sum(heights)),
        gridspec_kw={"height_ratios": heights},
    )
    titles = _short_paths([r.path for r in shown])
    for ax, report, title in zip(axes[:, 0], shown, titles, strict=True):
        _draw_panel(ax, report, title, colours, xmax)
    last = axes[-1, 0]
    last.set_xlim(0, xmax * 1.3)  # room for the total written after the longest bar
    last.set_xlabel("wall-clock seconds (a bar is a stage's total; its segments are the runs)")
    fig.suptitle("Time per stage and artifact directory", fontsize=12, fontweight="bold")
    fig.tight_layout()
    try:
        fig.savefig(path, format=suffix[1:], dpi=120)
    finally:
        plt.close(fig)
