"""A watched suite drawn: a text block per refresh, or one JSON line.

Paths, stage names and problem lines come from files and from Slurm: every text line
passes through ``escape_text`` and the JSON through ``json_escaped``, so a terminal
never acts on what they hold.
"""

from __future__ import annotations

import json
from typing import Any

from stagetimer._analysis.eta import Eta, StageProgress
from stagetimer._analysis.watch import Snapshot
from stagetimer._escape import escape_text
from stagetimer._render.duration import format_duration
from stagetimer._render.json_text import strict_json

__all__ = ["eta_text", "snapshot_json", "snapshot_lines", "snapshot_text"]

_HEADER = ("stage", "done", "running", "failed", "killed", "unknown", "pending", "elapsed",
           "to go (median, 90 %)")


def _eta(eta: Eta | None) -> dict[str, float] | None:
    return None if eta is None else {"p50": round(eta.p50, 3), "p90": round(eta.p90, 3)}


def snapshot_json(snapshot: Snapshot) -> str:
    """One JSON line: ``{"time", "directories": [{"path", "stages": [...]}],
    "eta_seconds"}``, as ``stagetimer watch --json`` prints each refresh."""
    value: dict[str, Any] = {
        "time": snapshot.time.isoformat().replace("+00:00", "Z"),
        "directories": [
            {"path": d.path, "stages": [_stage_json(s) for s in d.stages]}
            for d in snapshot.directories
        ],
        "eta_seconds": _eta(snapshot.eta),
    }
    return strict_json(lambda v, _: json.dumps(v, ensure_ascii=False, allow_nan=False), value)


def _stage_json(stage: StageProgress) -> dict[str, Any]:
    return {
        "name": stage.name, "done": stage.done, "running": stage.running,
        "failed": stage.failed, "killed": stage.killed, "unknown": stage.unknown,
        "pending": stage.pending, "elapsed_seconds": round(stage.elapsed_seconds, 3),
        "eta_seconds": _eta(stage.eta),
    }


def eta_text(stage: StageProgress) -> str:
    """``about 2 h 10 min (90 %: 2 h 40 min)``, ``done`` or ``no estimate yet``."""
    if stage.complete:
        return "done"
    if stage.eta is None:
        return "no estimate yet (none finished)"
    return f"{format_duration(stage.eta.p50)} ({format_duration(stage.eta.p90)})"


def snapshot_lines(snapshot: Snapshot) -> list[str]:
    """The block's lines, escaped: a heading, a table per directory, the problems."""
    when = snapshot.time.strftime("%Y-%m-%d %H:%M:%S UTC")
    if snapshot.complete:
        suite = "everything expected is done"
    elif snapshot.eta is None:
        suite = "no estimate yet"
    else:
        suite = (f"about {format_duration(snapshot.eta.p50)} to go "
                 f"(90 %: {format_duration(snapshot.eta.p90)})")
    lines = [f"stagetimer watch  {when}  suite: {suite}"]
    for directory in snapshot.directories:
        lines.append(directory.path)
        if not directory.stages:
            lines.append("  (no stage started yet)")
            continue
        rows = [_HEADER] + [
            (s.name, str(s.done), str(s.running), str(s.failed), str(s.killed),
             str(s.unknown), str(s.pending), format_duration(s.elapsed_seconds), eta_text(s))
            for s in directory.stages
        ]
        widths = [max(len(row[i]) for row in rows) for i in range(len(_HEADER))]
        for row in rows:
            cells = [row[0].ljust(widths[0])]
            cells += [cell.rjust(width) for cell, width in zip(row[1:-1], widths[1:-1],
                                                               strict=True)]
            lines.append("  " + "  ".join([*cells, row[-1]]).rstrip())
    lines += [f"could not read: {problem}" for problem in snapshot.problems]
    return [escape_text(line) for line in lines]


def snapshot_text(snapshot: Snapshot) -> str:
    """The block printed per refresh when standard output is not a terminal."""
    return "\n".join(snapshot_lines(snapshot)) + "\n"
