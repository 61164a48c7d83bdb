"""``stagetimer compute PATH…``: the compute statement a paper's checklist asks for."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from stagetimer._cli.stderr import error

if TYPE_CHECKING:
    from stagetimer._analysis.tree import Artifact, Problem

__all__ = ["run"]


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Print what the runs under ``args.paths`` cost; 1 if a path or sidecar is unreadable."""
    from stagetimer._analysis.tree import scan_tree

    artifacts, problems = scan_tree(args.paths)
    for problem in problems:
        error("compute", problem.line())
    if artifacts:
        problems += _print_statement(artifacts, args)
    return 1 if problems else 0


def _print_statement(artifacts: list[Artifact], args: argparse.Namespace) -> list[Problem]:
    """Print the statement of ``artifacts``, with what failed and killed attempts lost
    ("of which N lost"); the markers that could not be read, each said here (the walk's
    problems were said by the caller)."""
    from stagetimer._analysis.attempts.scan import scan_attempts
    from stagetimer._analysis.compute import add_lost, statement_from
    from stagetimer._render.compute import render_compute

    statement = statement_from(artifacts)
    found, more = scan_attempts(args.paths, with_markers_only=True)
    bad_markers = [p for p in more if p.error is None]
    for problem in bad_markers:
        error("compute", problem.line())
    described = {hw_id: hw for a in artifacts for hw_id, hw in a.hardware.hardware.items()}
    add_lost(statement, found, described)
    sys.stdout.write(render_compute(statement, args.format))
    return bad_markers
