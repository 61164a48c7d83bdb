"""``stagetimer report --plot``: the suite at a glance, as a PNG or SVG for a slide.

One panel per stage family, side by side: training (each directory's own
``*_train``), ``checkpoint_save``, ``nashconv``, and the other stages. The rows
are the artifact directories, grouped under their environment (the path without
its last part). In the first three panels a bar is the mean per seed; its hatched
end is the seeds' auto-resume continuation (``<stage>_auto_resume``, the same
run_idx), so directories with more or fewer resumed seeds still compare; each dot
is one seed (its run plus its continuation) and the whisker ± one standard
deviation. The other stages are drawn the same way, one thin bar per stage in each
row, one colour each: a bar is always a mean per seed, never a sum of unlike things.
A whisker reaching past the bar's own length (sd > mean) is flagged with its value.
A panel whose values span more than 100x is drawn on a log scale. Past ``ROWS_PER_PAGE`` rows the
picture is split into pages, ``x-1.png``, ``x-2.png``, ... matplotlib is an
optional extra (``stagetimer[plot]``), imported only here, with the Agg backend.
The rows and their pages are computed in ``report_plot_rows``; this module draws them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from stagetimer._analysis.report import ArtifactReport
from stagetimer._errors import PlotUnavailableError
from stagetimer._escape import escape_text
from stagetimer._render.duration import Unit, unit_for
from stagetimer._render.output_file import unwritable, write_figure
from stagetimer._render.report_plot_rows import FAMILIES, ROWS_PER_PAGE, Bar, Row
from stagetimer._render.report_plot_rows import layout as _layout  # the tests read these two
from stagetimer._render.report_plot_rows import rows as _rows  # here, beside _page

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = [
    "FORMATS",
    "ROWS_PER_PAGE",
    "PlotUnavailableError",
    "check_path",
    "load_pyplot",
    "page_paths",
    "plot_report",
    "quiet_floats",
]

FORMATS = (".png", ".svg")
INSTALL_HINT = "pip install 'stagetimer[plot]'"
_LOG_SPAN = 100.0
_COLOURS = {"training": "#3b6ea8", "checkpoint_save": "#d9822b", "nashconv": "#4a9c5d"}
_OTHER_PALETTE = ("#8c6bb1", "#c45a7c", "#6b8e9f", "#b59b4a", "#7f7f7f", "#4aa3a3")


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


def check_path(path: str) -> str | None:
    """Why a picture cannot be written at ``path``, or None: it needs a ``.png`` or
    ``.svg`` name in an existing, writable directory. Called before any work is done
    (``report --plot`` and ``compare --plot``; matplotlib is checked apart)."""
    if os.path.splitext(path)[1].lower() not in FORMATS:
        return "the file name must end in .png or .svg"
    return unwritable(path, "picture")


def page_paths(path: str, pages: int) -> list[str]:
    """``x.png`` for one page; ``x-1.png``, ``x-2.png``, ... for several."""
    if pages == 1:
        return [path]
    stem, suffix = os.path.splitext(path)
    return [f"{stem}-{i}{suffix}" for i in range(1, pages + 1)]



def _plural(count: int) -> str:
    return f"{count} director{'y' if count == 1 else 'ies'}"


def _common(paths: Sequence[str]) -> str:
    """What the directories share, relative to the working directory when inside it."""
    absolute = [os.path.abspath(p) for p in paths]
    common = os.path.dirname(absolute[0]) if len(absolute) == 1 else os.path.commonpath(absolute)
    here = os.getcwd()
    if common == here or common.startswith(here + os.sep):
        return os.path.relpath(common, here)
    return common



def _panels(rows: Sequence[Row]) -> list[str]:
    present = [f for f in FAMILIES if any(f in r.bars for r in rows)]
    if any(r.others for r in rows):
        present.append("other stages")
    return present


def _span_is_wide(values: Sequence[float]) -> bool:
    positive = [v for v in values if v > 0]
    return bool(positive) and max(positive) / min(positive) > _LOG_SPAN


def _draw_bar(
    ax: Axes, y: float, bar: Bar, colour: Any, unit: Unit, log: bool, height: float
) -> bool:
    """One bar: the mean per seed, its continuation hatched, the seeds as dots, the
    whisker ± 1 sd (flagged with its value when it is longer than the bar)."""
    scale = unit.seconds
    ax.barh(y, bar.base / scale, height=height, color=colour, linewidth=0)
    if bar.resumed > 0:
        ax.barh(y, bar.resumed / scale, left=bar.base / scale, height=height, color="white",
                edgecolor=colour, hatch="////", linewidth=0.8)
    if bar.stdev:
        _draw_whisker(ax, y, bar.stdev, (bar.base + bar.resumed) / scale, unit, log)
    ax.scatter([s / scale for s in bar.seeds], [y] * len(bar.seeds), s=9, color="0.1",
               zorder=4, linewidths=0)
    return bar.stdev is not None and bar.stdev > bar.base + bar.resumed


def _draw_whisker(ax: Axes, y: float, stdev: float, mean: float, unit: Unit, log: bool) -> None:
    """The whisker ± 1 sd about ``mean`` (in ``unit``s), flagged with its value when it is
    longer than the bar."""
    spread = stdev / unit.seconds
    low = max(mean - spread, mean / 10 if log else 0.0)
    ax.plot([low, mean + spread], [y, y], color="0.15", linewidth=1.0,
            solid_capstyle="butt", zorder=3)
    if spread > mean:  # a whisker longer than the bar: say so, it is easy to miss
        ax.annotate(
            f"\N{PLUS-MINUS SIGN}{unit.number(stdev)} {unit.name}", (mean + spread, y),
            xytext=(3, 0), textcoords="offset points", fontsize=7, color="#cf222e",
            va="center", fontweight="bold",
        )


def _draw_family(
    ax: Axes, lines: Sequence[tuple[str, Row | None]], family: str, unit: Unit, log: bool
) -> bool:
    """The panel of one family; whether a whisker was flagged."""
    colour = _COLOURS[family]
    flagged = False
    for y, (_, row) in enumerate(lines):
        if row is None or family not in row.bars:
            continue
        flagged |= _draw_bar(ax, y, row.bars[family], colour, unit, log, 0.62)
    return flagged


def _draw_others(
    ax: Axes, lines: Sequence[tuple[str, Row | None]], colours: dict[str, Any], unit: Unit,
    log: bool,
) -> bool:
    """Each other stage a thin bar of its own within the row, in the order of the legend;
    whether a whisker was flagged."""
    flagged = False
    for y, (_, row) in enumerate(lines):
        if row is not None and row.others:
            flagged |= _draw_row_others(ax, y, row.others, colours, unit, log)
    return flagged


def _draw_row_others(
    ax: Axes, y: int, others: dict[str, Bar], colours: dict[str, Any], unit: Unit, log: bool
) -> bool:
    """A row's other stages, thin bars side by side within its height; whether a whisker
    was flagged."""
    present = [n for n in colours if n in others]
    height = 0.62 / len(present)
    flagged = False
    for i, name in enumerate(present):
        offset = -0.31 + height * (i + 0.5)
        flagged |= _draw_bar(ax, y + offset, others[name], colours[name], unit, log, height * 0.9)
    return flagged


def _values(rows: Sequence[Row], panel: str) -> list[float]:
    """What a panel draws: its seeds' times and its whiskers' ends."""
    bars = _bars(rows, panel)
    return [v for b in bars for v in (*b.seeds, b.base + b.resumed + (b.stdev or 0.0))]


def _bars(rows: Sequence[Row], panel: str) -> list[Bar]:
    if panel == "other stages":
        return [b for r in rows for b in r.others.values()]
    return [r.bars[panel] for r in rows if panel in r.bars]


def _figure(plt: Any, lines: Sequence[tuple[str, Row | None]], labels: list[str],
            panels: int) -> tuple[Any, Any, float, float]:
    """The figure and its axes, one per panel, sized for the labels and the lines; and
    its width and height in inches."""
    label_inches = 0.25 + 0.075 * max(map(len, labels))  # 8.5 pt text, about 0.075 in a char
    panel_inches = 3.0
    # Room for the title and the legend's one line even with a single panel.
    panel_inches = max(panel_inches, (8.5 - label_inches - 0.3) / panels)
    width = label_inches + panel_inches * panels + 0.3
    top_inches, bottom_inches = 1.15, 0.55
    height = top_inches + bottom_inches + 0.24 * len(lines)
    fig, axes = plt.subplots(1, panels, sharey=True, squeeze=False, figsize=(width, height))
    fig.subplots_adjust(
        left=label_inches / width, right=1 - 0.3 / width, top=1 - top_inches / height,
        bottom=bottom_inches / height, wspace=0.12 * panels / max(panels - 1, 1),
    )
    return fig, axes, width, height


def _draw_panel(
    ax: Axes, rows: Sequence[Row], lines: Sequence[tuple[str, Row | None]], panel: str,
    colours: dict[str, Any],
) -> None:
    """One panel's bars, on a log scale when its values span more than 100x, and its axes."""
    values = _values(rows, panel)
    log = _span_is_wide(values)
    unit = unit_for(values)
    if panel == "other stages":
        flagged = _draw_others(ax, lines, colours, unit, log)
    else:
        flagged = _draw_family(ax, lines, panel, unit, log)
    _scale(ax, max(values, default=1.0) / unit.seconds, log, flagged)
    ax.set_title(panel, loc="left", fontsize=10, fontweight="bold")
    ax.set_xlabel(f"{unit.name} per seed", fontsize=9)
    ax.grid(axis="x", color="0.88", linewidth=0.7, which="both" if log else "major")
    ax.set_axisbelow(True)
    ax.tick_params(axis="x", labelsize=8)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def _scale(ax: Axes, top: float, log: bool, flagged: bool) -> None:
    """A panel's x axis up to ``top``, with room for a flag's text right of the longest
    whisker."""
    if not log:
        ax.set_xlim(0, top * (1.4 if flagged else 1.12) or 1.0)
        return
    ax.set_xscale("log")
    if flagged:
        ax.set_xlim(right=top * 30)


def _label_lines(first: Axes, lines: Sequence[tuple[str, Row | None]], labels: list[str]) -> None:
    """The rows' labels on the first panel, group headings in bold."""
    first.set_yticks(range(len(lines)), labels, fontsize=8.5)
    for tick, (_, row) in zip(first.get_yticklabels(), lines, strict=True):
        if row is None:
            tick.set_fontweight("bold")
    first.tick_params(axis="y", length=0)
    first.set_ylim(len(lines) - 0.4, -0.6)


def _legend_and_title(
    plt: Any, fig: Any, title: str, colours: dict[str, Any], width: float, height: float
) -> None:
    """The legend's one line (the marks, then the other stages' colours) under the title."""
    from matplotlib.patches import Patch

    handles = [
        Patch(color=_COLOURS["training"], label="mean per seed"),
        Patch(facecolor="white", edgecolor="0.3", hatch="////", label="auto-resume continuation"),
        plt.Line2D([], [], marker="o", linestyle="", color="0.1", markersize=3.5,
                   label="one seed"),
        plt.Line2D([], [], color="0.15", linewidth=1.0, label="\N{PLUS-MINUS SIGN} 1 sd"),
        *(Patch(color=colour, label=name) for name, colour in colours.items()),
    ]
    fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(0.1 / width, 1 - 0.42 / height),
               ncol=min(len(handles), 8), fontsize=8, frameon=False, handlelength=1.6,
               borderaxespad=0)
    fig.suptitle(title, x=0.1 / width, y=1 - 0.1 / height, ha="left", va="top", fontsize=12,
                 fontweight="bold")


def _page(
    plt: Any, rows: Sequence[Row], lines: Sequence[tuple[str, Row | None]], title: str,
    colours: dict[str, Any],
) -> Any:
    """One page of the picture: a panel per family present, the rows' labels, the legend."""
    panels = _panels(rows)
    labels = [row.label if row is not None else group for group, row in lines]
    fig, axes, width, height = _figure(plt, lines, labels, len(panels))
    for ax, panel in zip(axes[0], panels, strict=True):
        _draw_panel(ax, rows, lines, panel, colours)
    _label_lines(axes[0][0], lines, labels)
    _legend_and_title(plt, fig, title, colours, width, height)
    return fig


def quiet_floats() -> Any:
    """numpy's floating-point warnings off for a ``with`` block (this thread only)."""
    import numpy  # matplotlib's own dependency

    return numpy.errstate(all="ignore")


def _other_colours(rows: Sequence[Row]) -> dict[str, str]:
    """A colour for each other measure the rows show, in the order they first appear."""
    other_names = list(dict.fromkeys(n for r in rows for n in r.others))
    return {n: _OTHER_PALETTE[i % len(_OTHER_PALETTE)] for i, n in enumerate(other_names)}


def _title(shown: Sequence[ArtifactReport]) -> str:
    """``Wall-clock time per stage: exp/ippo``, or ``...: 4 directories under exp``."""
    common = escape_text(_common([r.path for r in shown]))
    if len(shown) == 1:
        return f"Wall-clock time per stage: {escape_text(shown[0].path)}"
    return f"Wall-clock time per stage: {_plural(len(shown))} under {common}"


def plot_report(reports: Sequence[ArtifactReport], path: str) -> list[str]:
    """Draw ``reports`` into ``path`` (or its pages); returns the files written.

    ``PlotUnavailableError`` without matplotlib, ``ValueError`` for a path
    ``check_path`` refuses or when there is nothing to draw.
    """
    check_path(path)
    shown = [r for r in reports if any(s.runs for s in r.stages)]
    if not shown:
        raise ValueError("no stage was recorded in the reported directories: nothing to plot")
    plt = load_pyplot()
    rows = _rows(shown)
    colours = _other_colours(rows)
    pages = _layout(rows)
    paths = page_paths(path, len(pages))
    suffix = os.path.splitext(path)[1].lower()[1:]
    title = _title(shown)
    for number, (lines, target) in enumerate(zip(pages, paths, strict=True), 1):
        numbered = title if len(pages) == 1 else f"{title} (page {number} of {len(pages)})"
        # Text stays text in an SVG (searchable, editable on a slide), not glyph outlines.
        # Durations up to 1.8e308 s are allowed: the axis transforms of such a panel
        # overflow inside matplotlib, which numpy reports as RuntimeWarnings on standard
        # error; the picture is still drawn, so they are silenced here (numpy.errstate is
        # this thread's floating-point mode, put back on leaving).
        with plt.rc_context({"svg.fonttype": "none"}), quiet_floats():
            fig = _page(plt, rows, lines, numbered, colours)
            try:
                write_figure(fig, target, suffix, dpi=110)
            finally:
                plt.close(fig)
    return paths
