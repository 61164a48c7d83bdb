"""``stagetimer compute PATH…``: the compute statement a paper's checklist asks for."""

from __future__ import annotations

import argparse
import sys

from stagetimer._cli.stderr import error

__all__ = ["run"]


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Print what the runs under ``args.paths`` cost; 1 if a path or sidecar is unreadable."""
    from stagetimer._analysis.compute import statement_from
    from stagetimer._analysis.tree import scan_tree
    from stagetimer._render.compute import render_compute

    artifacts, problems = scan_tree(args.paths)
    for problem in problems:
        error("compute", problem.line())
    if artifacts:
        sys.stdout.write(render_compute(statement_from(artifacts), args.format))
    return 1 if problems else 0
