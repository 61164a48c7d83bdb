"""When the runs of a report happened: the earliest start and the latest end (``wall_span``).

Reads ``started_at`` as the writer stores it (ISO 8601, UTC, ``...Z``); a suite holds
100,000 runs, so only the stages that could end last are read run by run.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from itertools import repeat
from typing import Any

from stagetimer._analysis.raw import raw_seconds
from stagetimer._analysis.report_model import ArtifactReport, StageStats
from stagetimer._store.rules import is_valid_seconds

__all__ = ["posix_seconds", "start_range", "wall_span"]

_get: Callable[[dict[str, Any], str], Any] = dict.get
# map(_get, runs, _STARTED_AT): each run's started_at, gathered in C (repeat() is endless)
_STARTED_AT = repeat("started_at")
#: a stage of a report: the report, the stage's statistics
_Stage = tuple[ArtifactReport, StageStats]


def posix_seconds(text: Any) -> float | None:
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


def start_range(starts: list[str]) -> tuple[str | None, str | None]:
    """The earliest and the latest of a stage's ``started_at`` strings (None: none).

    In the writer's one form (``...Z``, one length) the strings sort as the times do: the
    usual stage is two passes in C. Otherwise (offsets, other precisions, a string that
    is no time) each is read, and the earliest and latest readable ones are given; the
    least and greatest strings only where none is readable.
    """
    if not starts:
        return None, None
    if not _one_form(starts):
        read = [(moment, text) for text in starts if (moment := posix_seconds(text)) is not None]
        if read:
            return min(read)[1], max(read)[1]
    return min(starts), max(starts)


def _stage_span(report: ArtifactReport, name: str) -> tuple[float, float] | None:
    """The earliest start and the latest start + seconds over the stage's stored runs (every
    rank's) with a readable start and a valid duration; None when no run has both."""
    runs = report.stored_runs(name)
    starts = [
        (start, seconds)
        for text, seconds in zip(map(_get, runs, _STARTED_AT), raw_seconds({"runs": runs}),
                                 strict=True)
        if is_valid_seconds(seconds) and (start := posix_seconds(text)) is not None
    ]
    if not starts:
        return None
    return min(start for start, _ in starts), max(start + seconds for start, seconds in starts)


_LAST, _JUST_Z = operator.itemgetter(-1), {"Z"}  # each string's last character, in C


def _one_form(texts: list[str]) -> bool:
    """The writer's one form (``...Z``, one length): then the strings sort as the times do.
    Two passes in C (one suite: 10,000 stages' starts)."""
    return (
        bool(texts) and len(set(map(len, texts))) == 1 and texts[0] != ""
        and set(map(_LAST, texts)) == _JUST_Z
    )


def _same_form(first: str, other: str) -> bool:
    """``_one_form([first, other])`` without building the list (once per stage)."""
    return len(first) == len(other) and first.endswith("Z") and other.endswith("Z")


def _summarised(stats: StageStats) -> bool:
    """Whether the stage's own first and last start and longest run stand for its runs: its
    first and last start are in the writer's one form (one writer writes one form), every
    run has a valid duration, and no rank's run is left out of them (a stage of ranks
    counts each seed as its slowest rank)."""
    first, last = stats.first_started_at, stats.last_started_at
    return (
        first is not None and last is not None and _same_form(first, last)
        and not stats.flagged_runs and stats.rank_spread is None
    )


def _timestamp_in(parsed: dict[str, float | None], text: str) -> float | None:
    """``posix_seconds(text)``, kept in ``parsed``: suites repeat their timestamps across
    directories."""
    found = parsed.get(text, math.nan)
    if found is not None and math.isnan(found):
        found = parsed[text] = posix_seconds(text)
    return found


def _earliest(
    summarised: list[_Stage], spans: list[tuple[float, float]], parsed: dict[str, float | None]
) -> float | None:
    """The earliest start: of the spans read run by run, and of the summarised stages' first
    starts (in one form across the suite, the first string is the earliest)."""
    starts = [span[0] for span in spans] + _first_starts(summarised, parsed)
    return min((t for t in starts if t is not None), default=None)


def _first_starts(summarised: list[_Stage], parsed: dict[str, float | None],
                  ) -> list[float | None]:
    """The summarised stages' first starts: the least of them alone where all are in the
    one form and it is readable, else each stage's (``_stage_starts``)."""
    firsts = [stats.first_started_at or "" for _, stats in summarised]
    earliest = _timestamp_in(parsed, min(firsts)) if _one_form(firsts) else None
    return [earliest] if earliest is not None else _stage_starts(summarised, parsed)


def _stage_starts(summarised: list[_Stage], parsed: dict[str, float | None],
                  ) -> list[float | None]:
    """Each summarised stage's first start, where its first starts are in several forms."""
    starts: list[float | None] = []
    for report, stats in summarised:
        start = _timestamp_in(parsed, stats.first_started_at or "")
        if start is None:  # unreadable: the stage's earliest readable start, run by run
            span = _stage_span(report, stats.name)
            start = None if span is None else span[0]
        starts.append(start)
    return starts


def _latest(
    summarised: list[_Stage], spans: list[tuple[float, float]], parsed: dict[str, float | None]
) -> float | None:
    """The latest end: of the spans read run by run, and of the summarised stages, read run by
    run from the one whose bound (last start + longest run) lies latest, while a bound lies
    past the latest end found (a stage whose last start is unreadable: always)."""
    last = max((span[1] for span in spans), default=-math.inf)  # -inf: none found yet
    for bound, position in _end_bounds(summarised, parsed):
        if bound <= last:
            break  # no stage left can end later
        report, stats = summarised[position]
        span = _stage_span(report, stats.name)
        if span is not None:
            last = max(last, span[1])
    return None if last == -math.inf else last


def _end_bounds(summarised: list[_Stage], parsed: dict[str, float | None],
               ) -> list[tuple[float, int]]:
    """Each summarised stage's bound on its end (last start + longest run; unreadable:
    infinite) with its position, latest first."""
    bounds = []
    for position, (_, stats) in enumerate(summarised):
        latest = _timestamp_in(parsed, stats.last_started_at or "")
        bounds.append((math.inf if latest is None else latest + (stats.max_seconds or 0.0),
                       position))
    return sorted(bounds, reverse=True)


def wall_span(reports: Iterable[ArtifactReport]) -> tuple[float, float] | None:
    """The POSIX times of the earliest start and of the latest end (start + seconds) over
    the runs with a readable ``started_at`` and a valid duration; None when none has one.

    A suite holds 100,000 runs, and parsing every start would cost more than the rest of
    the report. Each stage already knows its first and last start and its longest run:
    where they stand for its runs (``_summarised``), its first start is its earliest, and
    its last start plus its longest run bounds its end, so only the stages whose bound
    lies past the latest end found so far are read run by run. The other stages are
    always read run by run.
    """
    summarised, spans = _sorted_out(reports)
    parsed: dict[str, float | None] = {}
    first, last = _earliest(summarised, spans, parsed), _latest(summarised, spans, parsed)
    return None if first is None or last is None else (first, last)


def _sorted_out(reports: Iterable[ArtifactReport],
                ) -> tuple[list[_Stage], list[tuple[float, float]]]:
    """The stages whose own figures stand for their runs (``_summarised``), and the spans
    of the others, read run by run."""
    summarised: list[_Stage] = []
    spans: list[tuple[float, float]] = []
    for report in reports:
        for stats in report.stages:
            if stats.max_seconds is None or stats.first_started_at is None:
                continue  # no run with both a valid duration and a start
            if _summarised(stats):
                summarised.append((report, stats))
            elif (span := _stage_span(report, stats.name)) is not None:
                spans.append(span)
    return summarised, spans
