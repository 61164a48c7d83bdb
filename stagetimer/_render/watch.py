"""A watched suite drawn: a text block per refresh, or one JSON line.

Paths, stage names and problem lines come from files and from Slurm: every text line
passes through ``escape_text`` and the JSON through ``json_escaped``, so a terminal
never acts on what they hold.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from stagetimer._analysis.eta import Eta, StageProgress
from stagetimer._analysis.watch import DirectoryProgress, Snapshot
from stagetimer._escape import escape_text
from stagetimer._render.duration import format_duration
from stagetimer._render.json_text import json_escaped, strict_json

__all__ = ["Drawn", "eta_text", "snapshot_json", "snapshot_lines", "snapshot_text"]

_K = TypeVar("_K")
_V = TypeVar("_V")

_HEADER = ("stage", "done", "running", "failed", "killed", "unknown", "pending", "elapsed",
           "to go (median, 90 %)")


def _eta(eta: Eta | None) -> dict[str, float] | None:
    return None if eta is None else {"p50": round(eta.p50, 3), "p90": round(eta.p90, 3)}


def snapshot_json(snapshot: Snapshot, drawn: Drawn | None = None) -> str:
    """One JSON line: ``{"time", "directories": [{"path", "stages": [...]}],
    "eta_seconds"}``, as ``stagetimer watch --json`` prints each refresh.

    ``drawn``: what the lines before this one wrote (a watch's refreshes): a directory's
    text is reused around its stages' elapsed times where nothing else changed."""
    if drawn is not None:
        try:
            return _json_reusing(snapshot, drawn)
        except ValueError:  # a value JSON cannot hold as it is: written the long way
            drawn.turn()
    value: dict[str, Any] = {
        "time": snapshot.time.isoformat().replace("+00:00", "Z"),
        "directories": [
            {"path": d.path, "stages": [_stage_json(s) for s in d.stages]}
            for d in snapshot.directories
        ],
        "eta_seconds": _eta(snapshot.eta),
    }
    return strict_json(lambda v, _: json.dumps(v, ensure_ascii=False, allow_nan=False), value)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def _json_reusing(snapshot: Snapshot, drawn: Drawn) -> str:
    """``snapshot_json``'s line, each directory's text kept between refreshes but for the
    elapsed times (the same text, built from pieces)."""
    directories = []
    for directory in snapshot.directories:
        key = (directory.path, tuple(
            (s.name, s.done, s.running, s.failed, s.killed, s.unknown, s.pending, s.eta)
            for s in directory.stages
        ))
        pieces = drawn.piece(key)
        if pieces is None:
            pieces = drawn.pieces[key] = _json_pieces(directory.path, directory.stages)
        text = [pieces[0]]
        for stage, piece in zip(directory.stages, pieces[1:], strict=True):
            text += [repr(round(stage.elapsed_seconds, 3)), piece]
        directories.append("".join(text))
    drawn.turn()
    line = (f'{{"time": {_dumps(snapshot.time.isoformat().replace("+00:00", "Z"))}, '
            f'"directories": [{", ".join(directories)}], '
            f'"eta_seconds": {_dumps(_eta(snapshot.eta))}}}')
    return json_escaped(line) + "\n"


def _json_pieces(path: str, stages: tuple[StageProgress, ...]) -> tuple[str, ...]:
    """A directory's JSON text cut where each stage's elapsed time goes."""
    pieces = [f'{{"path": {_dumps(path)}, "stages": [']
    for i, stage in enumerate(stages):
        value = _stage_json(stage)
        del value["elapsed_seconds"], value["eta_seconds"]
        head = _dumps(value)[:-1] + ', "elapsed_seconds": '
        if i:
            pieces[-1] += ", " + head
        else:
            pieces[-1] += head
        pieces.append(f', "eta_seconds": {_dumps(_eta(stage.eta))}}}')
    pieces[-1] += "]}"
    return tuple(pieces)


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


class Drawn:
    """What earlier blocks drew, to draw the next from: a directory's lines are drawn once
    for the cells they show, however many refreshes show them (a watch of 10,000
    unchanged directories redraws what moved)."""

    def __init__(self) -> None:
        self.tables: dict[tuple[str, tuple[tuple[object, ...], ...]], list[str]] = {}
        self.pieces: dict[tuple[str, tuple[object, ...]], tuple[str, ...]] = {}
        self._previous: dict[tuple[str, tuple[tuple[object, ...], ...]], list[str]] = {}
        self._previous_pieces: dict[tuple[str, tuple[object, ...]], tuple[str, ...]] = {}

    def turn(self) -> None:
        """One block drawn: keep only what it used (what is no longer shown goes)."""
        self._previous, self.tables = self.tables, {}
        self._previous_pieces, self.pieces = self.pieces, {}

    def piece(self, key: tuple[str, tuple[object, ...]]) -> tuple[str, ...] | None:
        return _kept(self.pieces, self._previous_pieces, key)

    def table(self, key: tuple[str, tuple[tuple[object, ...], ...]]) -> list[str] | None:
        return _kept(self.tables, self._previous, key)


def _kept(now: dict[_K, _V], before: dict[_K, _V], key: _K) -> _V | None:
    """``now[key]``, else ``before[key]`` kept into ``now``; None when neither holds it."""
    found = now.get(key)
    if found is None:
        found = before.get(key)
        if found is not None:
            now[key] = found
    return found


def _table(path: str, rows: tuple[tuple[str, ...], ...]) -> list[str]:
    """A directory's lines, escaped: its path and its stages' table."""
    if not rows:
        return [escape_text(path), escape_text("  (no stage started yet)")]
    table = (_HEADER, *rows)
    widths = [max(len(row[i]) for row in table) for i in range(len(_HEADER))]
    return [escape_text(path), *(escape_text(_aligned(row, widths)) for row in table)]


def _aligned(row: tuple[str, ...], widths: list[int]) -> str:
    """A row of the table: the stage left-aligned, the counts right-aligned, the estimate
    as it is."""
    counts = (cell.rjust(width) for cell, width in zip(row[1:-1], widths[1:-1], strict=True))
    return "  " + "  ".join([row[0].ljust(widths[0]), *counts, row[-1]]).rstrip()


def _suite_words(snapshot: Snapshot) -> str:
    """``about 2 h to go (90 %: 3 h)``, or why there is no estimate."""
    if snapshot.complete:
        return "everything expected is done"
    if snapshot.eta is None:
        return "no estimate yet"
    return (f"about {format_duration(snapshot.eta.p50)} to go "
            f"(90 %: {format_duration(snapshot.eta.p90)})")


def _directory_lines(directory: DirectoryProgress, drawn: Drawn) -> list[str]:
    """A directory's table, the one drawn before where its cells are the same."""
    key = (directory.path, tuple(
        (s.name, s.done, s.running, s.failed, s.killed, s.unknown, s.pending,
         format_duration(s.elapsed_seconds), s.complete, s.eta)
        for s in directory.stages
    ))
    table = drawn.table(key)
    if table is None:
        table = drawn.tables[key] = _table(directory.path, tuple(
            (s.name, str(s.done), str(s.running), str(s.failed), str(s.killed),
             str(s.unknown), str(s.pending), format_duration(s.elapsed_seconds),
             eta_text(s))
            for s in directory.stages
        ))
    return table


def snapshot_lines(snapshot: Snapshot, drawn: Drawn | None = None) -> list[str]:
    """The block's lines, escaped: a heading, a table per directory, the problems.

    ``drawn``: what the blocks before this one drew (a watch's refreshes), reused where a
    directory shows the same cells."""
    when = snapshot.time.strftime("%Y-%m-%d %H:%M:%S UTC")
    drawn = drawn if drawn is not None else Drawn()
    lines = [escape_text(f"stagetimer watch  {when}  suite: {_suite_words(snapshot)}")]
    for directory in snapshot.directories:
        lines += _directory_lines(directory, drawn)
    drawn.turn()
    lines += [escape_text(f"could not read: {problem}") for problem in snapshot.problems]
    lines += [escape_text(f"left out: {line}") for line in snapshot.left_out]
    return lines


def snapshot_text(snapshot: Snapshot, drawn: Drawn | None = None) -> str:
    """The block printed per refresh when standard output is not a terminal."""
    return "\n".join(snapshot_lines(snapshot, drawn)) + "\n"
