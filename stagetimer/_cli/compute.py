"""``stagetimer compute PATH…``: the compute statement a paper's checklist asks for."""

from __future__ import annotations

import argparse
import sys

from stagetimer._cli.stderr import error

__all__ = ["run"]


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Print what the runs under ``args.paths`` cost; 1 if a path or sidecar is unreadable."""
    from stagetimer._analysis.attempts.scan import scan_attempts
    from stagetimer._analysis.compute import add_lost, statement_from
    from stagetimer._analysis.tree import scan_tree
    from stagetimer._render.compute import render_compute

    artifacts, problems = scan_tree(args.paths)
    for problem in problems:
        error("compute", problem.line())
    if artifacts:
        statement = statement_from(artifacts)
        # What failed and killed attempts lost: "of which N lost". The walk's problems
        # were said above; a bad marker is said here.
        found, more = scan_attempts(args.paths, with_markers_only=True)
        bad_markers = [p for p in more if p.error is None]
        for problem in bad_markers:
            error("compute", problem.line())
        problems += bad_markers
        described = {hw_id: hw for a in artifacts for hw_id, hw in a.hardware.hardware.items()}
        add_lost(statement, found, described)
        sys.stdout.write(render_compute(statement, args.format))
    return 1 if problems else 0
