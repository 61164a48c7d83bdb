"""``stagetimer table PATH…``: a row per artifact directory, a column per stage."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from stagetimer._cli.stderr import error

if TYPE_CHECKING:
    from stagetimer._analysis.table import SuiteTable
    from stagetimer._analysis.tree import Artifact

__all__ = ["run"]


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Print the table of the directories under ``args.paths``; 1 if one is unreadable."""
    from stagetimer._analysis.tree import scan_tree
    from stagetimer._render.table import render_table

    artifacts, problems = scan_tree(args.paths)
    table = _built(artifacts, args, parser) if artifacts else None
    for problem in problems:
        error("table", problem.line())
    if table is not None:
        sys.stdout.write(render_table(table, args.format))
    return 1 if problems else 0


def _built(artifacts: list[Artifact], args: argparse.Namespace,
           parser: argparse.ArgumentParser) -> SuiteTable:
    """The table of ``artifacts``; a usage error when the options do not fit them."""
    from stagetimer._analysis.table import TableRequestError, build_table
    from stagetimer._escape import escape_text

    try:
        return build_table(
            artifacts, median=args.median, levels=args.levels, stages=args.stages,
            fold_continuations=args.fold_continuations,
        )
    except TableRequestError as exc:
        parser.error(escape_text(str(exc)))
