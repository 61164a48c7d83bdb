"""What ``history`` returns: attrs objects whose ``to_dict()`` is ``history --json``.

Kept apart from the arithmetic (``history``) so that each module reads in one sitting.
"""

from __future__ import annotations

from typing import Any

import attrs

from stagetimer._analysis.compare.metadata import MetadataDifference
from stagetimer._analysis.compare.model import SoftwareDifference

__all__ = ["BY_COMMIT", "BY_TIME", "ChangePoint", "History", "Point", "Series", "WhatChanged"]

#: how the points of a series are ordered
BY_COMMIT = "commit"
BY_TIME = "time"


@attrs.frozen
class Point:
    """One software id (``by="commit"``) or one suite (``by="time"``) of a series."""

    #: None for a point of runs that name no software (grouped by their directory)
    software_id: str | None
    #: the commit its software was built from, where recorded
    commit: str | None
    #: the earliest ``started_at`` of its runs, ISO text in UTC (None where no run has one)
    first_started_at: str | None
    #: each seed's seconds (a seed's ranks as its slowest), in the order read
    seeds: tuple[float, ...]
    median_seconds: float
    #: the artifact directories its runs come from
    directories: tuple[str, ...] = ()
    #: its place in the commit graph (0 in time order): which change is the newest
    rank: int = attrs.field(default=0, eq=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """``{"software_id", "commit", "first_started_at", "seeds", "median_seconds"}``."""
        return {
            "software_id": self.software_id,
            "commit": self.commit,
            "first_started_at": self.first_started_at,
            "seeds": list(self.seeds),
            "median_seconds": self.median_seconds,
        }

    def name(self) -> str:
        """The point in a few characters: its commit, else its software id, else its
        directory."""
        if self.commit is not None:
            return self.commit[:10]
        if self.software_id is not None:
            return self.software_id
        return self.directories[0] if self.directories else "?"


@attrs.frozen
class WhatChanged:
    """The differences between the software of the last point before a change and the
    first after it: the likely causes."""

    #: ``git log --oneline before..after`` (at most 20, newest first), where at hand
    commits: tuple[str, ...] = ()
    #: how many commits lie between them (0: the same commit, or not known)
    commit_count: int = 0
    #: code, Python, packages and accelerator libraries that differ
    software: tuple[SoftwareDifference, ...] = ()
    #: metadata keys of the stage whose values differ
    metadata: tuple[MetadataDifference, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """``{"commits", "commit_count", "software", "metadata"}``."""
        return {
            "commits": list(self.commits),
            "commit_count": self.commit_count,
            "software": [
                {"field": d.field, "before": d.base, "after": d.new} for d in self.software
            ],
            "metadata": [
                {"key": d.key, "before": list(d.base), "after": list(d.new)}
                for d in self.metadata
            ],
        }


@attrs.frozen
class ChangePoint:
    """A change of a series' level between two successive points."""

    #: the last point before and the first after
    before: Point
    after: Point
    #: where ``after`` is in its series' points
    index: int
    #: the medians of every seed of the segments on either side (to the neighbouring
    #: change points)
    median_before: float
    median_after: float
    #: geometric-mean ratio after / before of those seeds, and its 95 % interval
    #: (Welch's t on log-seconds, as ``compare``)
    ratio: float
    ratio_interval: tuple[float, float] | None
    p_value: float
    #: ``p_value`` adjusted by Benjamini-Hochberg over every test of the call
    q_value: float
    differences: WhatChanged

    def to_dict(self) -> dict[str, Any]:
        """The change as ``history --json`` prints it."""
        return {
            "before": _ref(self.before),
            "after": _ref(self.after),
            "median_before": self.median_before,
            "median_after": self.median_after,
            "ratio": self.ratio,
            "ratio_interval": None if self.ratio_interval is None else list(self.ratio_interval),
            "q_value": self.q_value,
            "differences": self.differences.to_dict(),
        }


def _ref(point: Point) -> dict[str, Any]:
    return {
        "software_id": point.software_id,
        "commit": point.commit,
        "first_started_at": point.first_started_at,
    }


@attrs.frozen
class Series:
    """One stage on one hardware description: its points in order and its changes."""

    stage: str
    #: None for runs that name no hardware description
    hardware_id: str | None
    #: the hardware in words (host, CPU model, GPUs), "" where not described
    hardware_name: str
    points: tuple[Point, ...]
    #: oldest first
    changes: tuple[ChangePoint, ...] = ()
    #: why there was no detection (fewer than 4 points), or None
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{"stage", "hardware_id", "points", "changes"}``."""
        return {
            "stage": self.stage,
            "hardware_id": self.hardware_id,
            "points": [p.to_dict() for p in self.points],
            "changes": [c.to_dict() for c in self.changes],
        }


@attrs.frozen
class History:
    """What ``history`` found: every series, and how its points were ordered."""

    series: tuple[Series, ...]
    #: ``"commit"`` (the commit graph) or ``"time"`` (earliest ``started_at``, or each
    #: suite in time order with ``by="time"``)
    order: str
    #: what the reader should know: why time order, runs without software, hardware splits
    notes: tuple[str, ...] = ()
    #: the smallest relative change reported (0.02: 2 %)
    threshold: float = 0.02
    #: how many tests the Benjamini-Hochberg adjustment ran over
    tests: int = 0

    def to_dict(self) -> dict[str, Any]:
        """``{"series": [...], "order", "notes", "threshold", "tests"}``."""
        return {
            "series": [s.to_dict() for s in self.series],
            "order": self.order,
            "notes": list(self.notes),
            "threshold": self.threshold,
            "tests": self.tests,
        }

    def changes(self) -> list[tuple[Series, ChangePoint]]:
        """Every change point, newest first (the first point after it latest in the
        commit graph, else in time)."""
        found = [(s, c) for s in self.series for c in s.changes]
        return sorted(
            found,
            key=lambda sc: (sc[1].after.rank, sc[1].after.first_started_at or "",
                            sc[1].index),
            reverse=True,
        )

    def slower_than(self, fraction: float) -> list[tuple[Series, ChangePoint]]:
        """The series whose newest segment is slower than the one before it by more than
        ``fraction`` (q <= 0.05: every change reported has it)."""
        return [
            (s, s.changes[-1]) for s in self.series
            if s.changes and s.changes[-1].ratio > 1 + fraction
        ]
