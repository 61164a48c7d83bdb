"""``stagetimer compare BASE NEW``: is NEW faster than BASE, stage by stage?"""

from __future__ import annotations

import argparse
import sys
from types import ModuleType
from typing import TYPE_CHECKING

from stagetimer._cli.stderr import error, errors, html_refused, read_or_say, write_html

if TYPE_CHECKING:
    from stagetimer._analysis.compare.model import Comparison

__all__ = ["REGRESSION", "run"]

#: the exit status of ``--fail-if-slower`` finding a regression (2 is argparse's usage error)
REGRESSION = 3


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Print the comparison; 1 if a side is unreadable, 3 if ``--fail-if-slower`` trips."""
    if html_refused("compare", args.html):
        return 1
    plot = None
    if args.plot is not None:
        plot = _plotter(args.plot)
        if plot is None:
            return 1
    comparison = _compared(args)
    if comparison is None:
        return 1
    sys.stdout.write(_rendered(comparison, args))
    sys.stdout.flush()
    if not _written(plot, comparison, args):
        return 1
    if args.fail_if_slower is not None and _slower(comparison, args.fail_if_slower):
        return REGRESSION
    return 0


def _written(plot: ModuleType | None, comparison: Comparison, args: argparse.Namespace) -> bool:
    """Draw the plot and write the page asked for; False after saying why one failed."""
    if plot is not None and not _draw(plot, comparison, args.plot):
        return False
    return args.html is None or _page(comparison, args)


def _rendered(comparison: Comparison, args: argparse.Namespace) -> str:
    if args.markdown:
        from stagetimer._render.compare.markdown import render_markdown

        return render_markdown(comparison)
    from stagetimer._render.compare.text import format_comparison, render_json

    return render_json(comparison) if args.json else format_comparison(comparison)


def _plotter(path: str) -> ModuleType | None:
    """The plotting module, or None after saying why ``path`` cannot be drawn (before any
    work is done)."""
    from stagetimer._errors import PlotUnavailableError
    from stagetimer._render import report_plot
    from stagetimer._render.compare import plot as compare_plot

    problem = report_plot.check_path(path)
    if problem is not None:
        error("compare", f"--plot {path}: {problem}")
        return None
    try:
        report_plot.load_pyplot()
    except PlotUnavailableError as exc:
        error("compare", f"--plot {path}: {exc}")
        return None
    return compare_plot


def _compared(args: argparse.Namespace) -> Comparison | None:
    """The comparison, or None after one line naming what could not be read."""
    from stagetimer._analysis.compare.suites import compare

    return read_or_say("compare", args.base, lambda: compare(
        args.base, args.new, threshold=args.threshold / 100, paired=args.paired))


def _draw(plot: ModuleType, comparison: Comparison, path: str) -> bool:
    try:
        plot.plot_comparison(comparison, path)
    except (ValueError, OSError) as exc:
        error("compare", f"--plot {path}: {exc}")
        return False
    print(f"plot written to {path}", file=sys.stderr)
    return True


def _page(comparison: Comparison, args: argparse.Namespace) -> bool:
    """Write the comparison's page; False after saying why it could not be written."""
    from stagetimer._render.html.compare import render_html

    return write_html(
        "compare", args.html, lambda: render_html(comparison, args.base, args.new)
    )


def _slower(comparison: Comparison, percent: float) -> bool:
    """Name each stage slower than the gate allows; whether there was one."""
    return errors("compare", [
        f"{pair.new}: stage {stage.name} is {stage.ratio:.3g}x the base's time "
        f"(more than {percent:g} % slower; q = {stage.q_value:.3g} over "
        f"{comparison.comparisons} comparisons)"
        for pair, stage in comparison.slower_than(percent / 100)
    ])
