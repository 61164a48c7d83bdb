"""``stagetimer report PATH…``: per artifact directory, each stage's runs and statistics."""

from __future__ import annotations

import argparse
import sys
from types import ModuleType
from typing import TYPE_CHECKING

from stagetimer._cli.stderr import error, write_html

if TYPE_CHECKING:
    from stagetimer._analysis.report import ArtifactReport
    from stagetimer._analysis.tree import Artifact

__all__ = ["run"]


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Print the report of every ``timings.json`` under ``args.paths``; 1 if one is unreadable."""
    from stagetimer._analysis.tree import scan_tree

    _check_html(args.html, parser)
    plot = None
    if args.plot is not None:
        plot = _plotter(args.plot, parser)
        if plot is None:
            return 1
    rescued: list[str] = []
    artifacts, problems = scan_tree(args.paths, rescued)
    for problem in problems:
        error("report", problem.line())
    _say_rescued(rescued)
    reports = _printed(artifacts, args, drawn=plot is not None or args.html is not None)
    if not _drawn(plot, reports, args):
        return 1
    return 1 if problems else 0


def _drawn(plot: ModuleType | None, reports: list[ArtifactReport],
           args: argparse.Namespace) -> bool:
    """Draw the plot and write the page asked for; False after saying why one could not
    be."""
    if plot is not None and not _draw(plot, reports, args.plot):
        return False
    return args.html is None or _page(reports, args)


def _check_html(path: str | None, parser: argparse.ArgumentParser) -> None:
    """A ``--html`` path that cannot be written is a usage error, before any reading."""
    if path is None:
        return
    from stagetimer._render.html.page import check_path

    if (unwritable := check_path(path)) is not None:
        parser.error(f"--html {path}: {unwritable}")


def _printed(artifacts: list[Artifact], args: argparse.Namespace, *,
             drawn: bool) -> list[ArtifactReport]:
    """Print the report (or ``--csv``'s rows); the reports, for a plot or a page
    (``drawn``) where the rows were printed."""
    from stagetimer._analysis.report import report_from

    if args.csv:
        from stagetimer._analysis.rows import records_from
        from stagetimer._render.csv_text import records_csv

        sys.stdout.write(records_csv(records_from(artifacts)))
        reports = report_from(artifacts) if drawn else []
    else:
        reports = report_from(artifacts)
        sys.stdout.write(_rendered(reports, args))
    sys.stdout.flush()
    return reports


def _page(reports: list[ArtifactReport], args: argparse.Namespace) -> bool:
    """Write the report's page; False after saying why it could not be written."""
    from stagetimer._analysis.attempts.timeline import suite_attempts
    from stagetimer._render.html.report import render_html

    return write_html(
        "report", args.html, lambda: render_html(reports, args.paths, suite_attempts(reports))
    )


def _plotter(path: str, parser: argparse.ArgumentParser) -> ModuleType | None:
    """The plotting module, checked before any reading or output: a path that cannot be
    written is a usage error; no matplotlib is said (None) and nothing else is done."""
    from stagetimer._errors import PlotUnavailableError
    from stagetimer._render import report_plot

    problem = report_plot.check_path(path)
    if problem is not None:
        parser.error(f"--plot {path}: {problem}")
    try:
        report_plot.load_pyplot()
    except PlotUnavailableError as exc:
        error("report", str(exc))
        return None
    return report_plot


def _say_rescued(directories: list[str]) -> None:
    for directory in directories:
        error(
            "report",
            f"{directory}: holds rescue files, records a failed save kept that are not "
            f"in timings.json yet; fold them in with: stagetimer recover {directory}",
        )


def _rendered(reports: list[ArtifactReport], args: argparse.Namespace) -> str:
    if args.json:
        from stagetimer._render.report_json import render_json

        return render_json(reports)
    from stagetimer._render.report_text import render_text

    return render_text(reports, runs=args.runs)


def _draw(plot: ModuleType, reports: list[ArtifactReport], path: str) -> bool:
    try:
        written = plot.plot_report(reports, path)
    except (ValueError, OSError) as exc:
        error("report", f"--plot {path}: {exc}")
        return False
    print(f"plot written to {', '.join(written)}", file=sys.stderr)
    return True
