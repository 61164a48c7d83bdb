"""``stagetimer history PATH…``: since when is a stage slower, and what changed there?"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from stagetimer._cli.compare import REGRESSION
from stagetimer._cli.stderr import error, errors, html_refused, read_or_say, write_html

if TYPE_CHECKING:
    from stagetimer._analysis.history.model import History

__all__ = ["run"]


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Print the history; 1 if a path is unreadable or the stage unknown, 3 if
    ``--fail-if-slower`` trips."""
    if html_refused("history", args.html):
        return 1
    found = _history(args)
    if found is None:
        return 1
    sys.stdout.write(_rendered(found, args))
    sys.stdout.flush()
    if args.html is not None and not _page(found, args.html):
        return 1
    if args.fail_if_slower is not None and _slower(found, args.fail_if_slower):
        return REGRESSION
    return 0


def _history(args: argparse.Namespace) -> History | None:
    """The history, or None after one line naming what could not be read."""
    from stagetimer._analysis.history.series import history
    from stagetimer._errors import InvalidSettingError

    try:
        return read_or_say("history", args.paths[0], lambda: history(
            args.paths, stage=args.stage, by=args.by, repo=args.repo, since=args.since,
            threshold=args.threshold / 100))
    except InvalidSettingError as exc:
        error("history", str(exc))
    return None


def _rendered(found: History, args: argparse.Namespace) -> str:
    from stagetimer._render import history_text

    if args.format == "json":
        return history_text.render_json(found)
    if args.format == "markdown":
        return history_text.render_markdown(found)
    return history_text.format_history(found)


def _page(found: History, path: str) -> bool:
    """Write the page; False after saying why it could not be written."""
    from stagetimer._render.html.history import render_html

    return write_html("history", path, lambda: render_html(found))


def _slower(found: History, percent: float) -> bool:
    """Name each series whose newest segment is slower than the gate allows."""
    from stagetimer._render.history_text import point_label, series_label

    return errors("history", [
        f"{series_label(series)} is {change.ratio:.3g}x slower since "
        f"{point_label(change.after)} (more than {percent:g} %; q = "
        f"{change.q_value:.3g} over {found.tests} tests)"
        for series, change in found.slower_than(percent / 100)
    ])
