"""``stagetimer table PATH…``: a row per artifact directory, a column per stage."""

from __future__ import annotations

import argparse
import sys

from stagetimer._cli.stderr import error

__all__ = ["run"]


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Print the table of the directories under ``args.paths``; 1 if one is unreadable."""
    from stagetimer._analysis.table import build_table
    from stagetimer._analysis.tree import scan_tree
    from stagetimer._render.table import render_table

    artifacts, problems = scan_tree(args.paths)
    for problem in problems:
        error("table", problem.line())
    if artifacts:
        sys.stdout.write(render_table(build_table(artifacts, median=args.median), args.format))
    return 1 if problems else 0
