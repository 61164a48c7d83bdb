"""When the runs of a report happened: the earliest start and the latest end (``wall_span``).

Reads ``started_at`` as the writer stores it (ISO 8601, UTC, ``...Z``); a suite holds
100,000 runs, so only the stages that could end last are read run by run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from itertools import repeat
from typing import Any

from stagetimer._analysis.raw import raw_seconds
from stagetimer._analysis.report_model import ArtifactReport
from stagetimer._store.rules import is_valid_seconds

__all__ = ["wall_span"]

_get: Callable[[dict[str, Any], str], Any] = dict.get
# map(_get, runs, _STARTED_AT): each run's started_at, gathered in C (repeat() is endless)
_STARTED_AT = repeat("started_at")


def _timestamp(text: Any) -> float | None:
    """``started_at`` (ISO 8601, UTC, ``...Z``) as POSIX seconds; None when unreadable."""
    if type(text) is not str:
        return None
    try:
        # Python 3.10's fromisoformat does not read "Z"
        moment = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def _stage_end(report: ArtifactReport, name: str) -> float | None:
    """The latest start + seconds over the stage's runs (None: no run has both)."""
    runs = report.stored_runs(name)
    ends = [
        start + seconds
        for text, seconds in zip(map(_get, runs, _STARTED_AT), raw_seconds({"runs": runs}),
                                 strict=True)
        if is_valid_seconds(seconds) and (start := _timestamp(text)) is not None
    ]
    return max(ends, default=None)


def _one_form(texts: list[str]) -> bool:
    """The writer's one form (``...Z``, one length): then the strings sort as the times do."""
    return len({len(t) for t in texts}) == 1 and all(t.endswith("Z") for t in texts)


def wall_span(reports: Iterable[ArtifactReport]) -> tuple[float, float] | None:
    """The POSIX times of the earliest start and of the latest end (start + seconds) over
    the runs with a readable ``started_at`` and a valid duration; None when none has one.

    A suite holds 100,000 runs, and parsing every start would cost more than the rest of
    the report. Each stage already knows its first and last start and its longest run:
    its last start plus its longest run bounds its end, so only the stages whose bound
    lies past the latest end found so far are read run by run. A stage's first and last
    start in the writer's one form (``...Z``, one length) are taken to be the earliest
    and latest (one writer writes one form); the other stages are always read run by run.
    """
    stages = [
        (report, stats) for report in reports for stats in report.stages
        if stats.first_started_at is not None and stats.last_started_at is not None
        and stats.max_seconds is not None
    ]
    if not stages:
        return None
    firsts = [stats.first_started_at for _, stats in stages if stats.first_started_at]
    if _one_form(firsts):
        first = _timestamp(min(firsts))
    else:
        first = min((t for t in map(_timestamp, firsts) if t is not None), default=None)
    bounds: list[tuple[float, int]] = []
    parsed: dict[str, float | None] = {}  # suites repeat their timestamps across directories
    for position, (_, stats) in enumerate(stages):
        edges = [stats.first_started_at or "", stats.last_started_at or ""]
        latest = None
        if _one_form(edges):
            latest = parsed.get(edges[1], math.nan)
            if latest is not None and math.isnan(latest):
                latest = parsed[edges[1]] = _timestamp(edges[1])
        bound = math.inf if latest is None else latest + (stats.max_seconds or 0.0)
        bounds.append((bound, position))
    bounds.sort(reverse=True)
    last: float | None = None
    for bound, position in bounds:
        if last is not None and bound <= last:
            break  # no stage left can end later
        report, stats = stages[position]
        end = _stage_end(report, stats.name)
        if end is not None and (last is None or end > last):
            last = end
    return None if first is None or last is None else (first, last)
