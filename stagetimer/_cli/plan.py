"""``stagetimer plan PATH…``: the ``--time`` and ``--mem`` to ask for, per stage and hardware."""

from __future__ import annotations

import argparse
import json
import sys

from stagetimer._cli.stderr import error

__all__ = ["run"]


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Print a suggestion per (hardware, stage) under ``args.paths``; 1 if one is unreadable."""
    from stagetimer._analysis.attempts.scan import scan_attempts
    from stagetimer._analysis.plan import plan_from
    from stagetimer._analysis.tree import scan_tree
    from stagetimer._render.plan import plan_json, plan_text

    artifacts, problems = scan_tree(args.paths)
    for problem in problems:
        error("plan", problem.line())
    # the attempts killed by their time limit: durations of at least the time they ran
    found, _ = scan_attempts(args.paths)  # what they could not read: said by lost
    suggestions = plan_from(artifacts, found, args.quantile)
    if args.json:
        sys.stdout.write(json.dumps(plan_json(suggestions), indent=2) + "\n")
    else:
        sys.stdout.write(plan_text(suggestions, args.quantile))
    return 1 if problems else 0
