"""``stagetimer plan PATH…``: the ``--time`` and ``--mem`` to ask for, per stage and hardware."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from stagetimer._cli.stderr import error
from stagetimer._escape import escape_text

if TYPE_CHECKING:
    from stagetimer._analysis.plan import Suggestion

__all__ = ["run"]


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Print a suggestion per (hardware, stage) under ``args.paths``; 1 if one is unreadable."""
    from stagetimer._analysis.attempts.scan import scan_attempts
    from stagetimer._analysis.plan import plan_from
    from stagetimer._analysis.tree import scan_tree

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


# --- the output: a line per stage and hardware, or JSON ---


def plan_text(suggestions: Sequence[Suggestion], quantile: float) -> str:
    """``train on 3f2a...: --time=02:41:00 --mem=12G  (...margin...)`` per suggestion."""
    if not suggestions:
        return "no finished run to plan from\n"
    lines = [f"so that {quantile:.0%} of runs fit:"]
    for s in suggestions:
        lines += _suggestion_lines(s)
    return "\n".join(escape_text(line) for line in lines) + "\n"


def _suggestion_lines(s: Suggestion) -> list[str]:
    """One suggestion: what to ask for, how its time was found, and its memory's."""
    from stagetimer._analysis.plan import slurm_memory, slurm_time
    from stagetimer._render.duration import format_duration

    where = s.hardware_id or "unknown hardware"
    ask = f"--time={slurm_time(s.time_seconds)}"
    if s.memory_bytes is not None:
        ask += f" --mem={slurm_memory(s.memory_bytes)}"
    plain = "" if s.quantile_seconds is None else \
        f"the plain {s.quantile:.0%} quantile is {format_duration(s.quantile_seconds)}; "
    return [f"  {s.stage} on {where}: {ask}", f"    time: {plain}{s.margin()}", *_memory_lines(s)]


def _memory_lines(s: Suggestion) -> list[str]:
    """Where a suggestion's --mem comes from, or that none is suggested for lack of peaks."""
    from stagetimer._analysis.plan import slurm_memory

    if s.memory_bytes is not None and s.memory_quantile_bytes is not None:
        return [f"    memory: from {s.memory_runs} recorded peaks, the plain "
                f"quantile is {slurm_memory(s.memory_quantile_bytes)}"]
    if s.memory_runs == 0:
        return ["    memory: no peak recorded; --mem not suggested"]
    return []


def plan_json(suggestions: Sequence[Suggestion]) -> dict[str, Any]:
    """``{"suggestions": [{"stage", "hardware_id", "quantile", "time_seconds", "time",
    "memory_bytes", "mem", "ended", "censored", "margin"}]}``."""
    from stagetimer._analysis.plan import slurm_memory, slurm_time

    return {"suggestions": [
        {
            "stage": s.stage, "hardware_id": s.hardware_id, "quantile": s.quantile,
            "time_seconds": s.time_seconds, "time": slurm_time(s.time_seconds),
            "quantile_seconds": s.quantile_seconds, "memory_bytes": s.memory_bytes,
            "mem": None if s.memory_bytes is None else slurm_memory(s.memory_bytes),
            "ended": s.ended, "censored": s.censored, "margin": s.margin(),
        }
        for s in suggestions
    ]}
