"""``stagetimer table PATH…``: a row per artifact directory, a column per stage."""

from __future__ import annotations

import argparse
import sys

from stagetimer._cli.stderr import error

__all__ = ["run"]


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Print the table of the directories under ``args.paths``; 1 if one is unreadable."""
    from stagetimer._analysis.table import TableRequestError, build_table
    from stagetimer._analysis.tree import scan_tree
    from stagetimer._escape import escape_text
    from stagetimer._render.table import render_table

    artifacts, problems = scan_tree(args.paths)
    if artifacts:
        try:
            table = build_table(
                artifacts, median=args.median, levels=args.levels, stages=args.stages,
                fold_continuations=args.fold_continuations,
            )
        except TableRequestError as exc:  # the options do not fit these directories
            parser.error(escape_text(str(exc)))
    for problem in problems:
        error("table", problem.line())
    if artifacts:
        sys.stdout.write(render_table(table, args.format))
    return 1 if problems else 0
