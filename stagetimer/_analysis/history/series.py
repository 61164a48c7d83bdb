"""history: since when is a stage slower, and what changed there.

A suite run again and again (nightly, on every commit, after each upgrade) leaves many
artifact directories. ``history`` makes one *series* per (stage, hardware description):
runs on other hardware are another series, never a change. A *point* of a series is one
software id (``stagetimer.software``) with all its runs, whatever directory holds them;
its seeds are its replicates, a seed's ranks counted once as its slowest (as every
reader counts them). Points are ordered by the commit graph of the repository
(``git rev-list --topo-order``) when it is at hand and knows every point's commit, else
by their earliest ``started_at``, and the result says which. ``by="time"`` makes a point
of each artifact directory instead, in time order. Runs that name no software are a
point per directory, in time order.

Each series with 4 points or more goes through the detector (``changepoints``), which
uses the seeds' spread as the noise a change must exceed; the p-values of every test of
the call are adjusted by Benjamini-Hochberg, as ``compare`` adjusts over stages, and a
change is reported when its q-value is at most 0.05 and its ratio is at least
``threshold`` away from 1. Each change names the points on either side, the medians and
ratio of the segments around it with an interval (Welch's t on log-seconds, as
``compare``), and what differs between the two points' software: the commits between
them, packages, accelerator libraries, and the stage's metadata. Reads only.
"""

from __future__ import annotations

import collections
import datetime
import math
import operator
import os
from collections.abc import Iterator, Sequence
from typing import Any

import attrs

from stagetimer._analysis.compare.metadata import metadata_differences
from stagetimer._analysis.compare.model import SIGNIFICANCE, SoftwareDifference
from stagetimer._analysis.compare.significance import benjamini_hochberg
from stagetimer._analysis.compare.software import SoftwareDifferences
from stagetimer._analysis.compare.stage import measure
from stagetimer._analysis.history.changepoints import Change, Detection, detect
from stagetimer._analysis.history.git import Repository, open_repository
from stagetimer._analysis.history.model import (
    BY_COMMIT,
    BY_TIME,
    ChangePoint,
    History,
    Point,
    Series,
    WhatChanged,
)
from stagetimer._analysis.raw import raw_seconds, raw_stages
from stagetimer._analysis.seeds import by_seed
from stagetimer._analysis.stats import median
from stagetimer._analysis.tree import Artifact, load_tree
from stagetimer._errors import InvalidSettingError, InvalidTypeError
from stagetimer._store.rules import is_valid_seconds, valid_durations

__all__ = ["MIN_POINTS", "history", "history_of"]

#: a series needs this many points for a change to be looked for
MIN_POINTS = 4


@attrs.define
class _Gathered:
    """One point's runs as they are read."""

    key: str
    software_id: str | None
    software: Any
    seeds: list[float] = attrs.Factory(list)
    runs: list[dict[str, Any]] = attrs.Factory(list)
    #: the earliest ``started_at`` (ISO text in UTC, whose order is the time's)
    first: str | None = None
    directories: list[str] = attrs.Factory(list)

    def add(self, runs: list[dict[str, Any]], seconds: list[float], directory: str) -> None:
        """Some runs of one directory, and their valid seconds."""
        self.seeds.extend(seconds)
        self.runs.extend(runs)
        started = [s for s in map(_STARTED, runs) if type(s) is str]
        if self.first is not None:
            started.append(self.first)
        self.first = min(started, default=None)
        if directory not in self.directories:
            self.directories.append(directory)

    def started_since(self, since: str) -> bool:
        """Whether the point's first run started at ``since`` or later."""
        return self.first is not None and self.first >= since

    def commit(self) -> str | None:
        code = getattr(self.software, "code", None)
        commit = getattr(code, "commit", None)
        return commit if isinstance(commit, str) else None


_SeriesKey = tuple[str, Any]  # (stage, hardware_id)
_STARTED = operator.methodcaller("get", "started_at")
_HARDWARE = operator.methodcaller("get", "hardware_id")
_SOFTWARE = operator.methodcaller("get", "software_id")


def _check(by: str, threshold: float, since: str | None) -> str | None:
    if by not in (BY_COMMIT, BY_TIME):
        raise InvalidSettingError(f"by must be 'commit' or 'time', not {by!r}", by)
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
        raise InvalidTypeError(f"threshold must be a number (0.02 for 2 %), not {threshold!r}",
                               threshold)
    if not 0.0 <= threshold < math.inf:
        raise InvalidSettingError(
            f"threshold must be a finite fraction >= 0 (0.02 for 2 %), not {threshold!r}",
            threshold,
        )
    return None if since is None else _utc(since)


def _utc(since: str) -> str:
    """``since`` as ISO text in UTC, as runs store ``started_at``."""
    try:
        moment = datetime.datetime.fromisoformat(since.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        raise InvalidSettingError(
            f"since must be a date or time such as 2026-01-31 or 2026-01-31T18:00, not "
            f"{since!r}", since,
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    utc = moment.astimezone(datetime.timezone.utc)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def history(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    stage: str | None = None,
    by: str = BY_COMMIT,
    repo: str | os.PathLike[str] | None = None,
    since: str | None = None,
    threshold: float = 0.02,
) -> History:
    """The history of every stage under ``paths``: its series, their change points, and
    what changed at each.

    ``paths``: artifact directories or trees of them (one path or several).
    ``stage``: only this stage (``InvalidSettingError`` naming it if no run has it).
    ``by``: ``"commit"`` (a point per software id, in commit order where ``repo``, by
    default the current directory, is the repository the commits come from, else in
    time order) or ``"time"`` (a point per artifact directory, in time order).
    ``since``: only points whose first run started at or after this ISO date (UTC
    unless it says otherwise). ``threshold``: the smallest relative change reported.
    Raises what ``load_tree`` raises for a path that cannot be read.

    >>> result = stagetimer.history("nightly/")
    >>> [(s.stage, [c.after.commit[:7] for c in s.changes]) for s in result.series]
    [('train', ['4c1d2e9'])]
    """
    start = _check(by, threshold, since)
    given = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    if not given:
        raise InvalidTypeError("history() needs at least one path", paths)
    artifacts = load_tree(*given)
    directory = os.fspath(repo) if repo is not None else os.getcwd()
    return history_of(artifacts, stage=stage, by=by, repo=directory, since=start,
                      threshold=float(threshold))


def history_of(
    artifacts: Sequence[Artifact],
    *,
    stage: str | None,
    by: str,
    repo: str | None,
    since: str | None,
    threshold: float,
) -> History:
    """``history`` of artifact directories already read (``since``: ISO text in UTC, as
    runs store ``started_at``)."""
    gathered, names = _gather(artifacts, stage, by)
    if stage is not None and not gathered:
        raise _no_such_stage(stage, names)
    notes: list[str] = []
    if since is not None:
        gathered = _since(gathered, since)
    order, repository = _ordering(gathered, by, repo, notes)
    notes += _series_notes(gathered, by)
    built = [
        _ordered(key, points, order) for key, points in sorted(
            gathered.items(), key=lambda item: (item[0][0], item[0][1] or ""))
    ]
    return _detected(built, artifacts, repository, threshold, order, notes)


def _no_such_stage(stage: str, names: set[str]) -> InvalidSettingError:
    known = ", ".join(sorted(names)) or "none"
    return InvalidSettingError(f"no run of stage {stage!r} was found (stages: {known})", stage)


def _since(gathered: dict[_SeriesKey, dict[str, _Gathered]], since: str,
           ) -> dict[_SeriesKey, dict[str, _Gathered]]:
    """The points first run at ``since`` or later, and the series left with any."""
    kept = {
        key: {k: g for k, g in points.items() if g.started_since(since)}
        for key, points in gathered.items()
    }
    return {key: points for key, points in kept.items() if points}


def _series_notes(gathered: dict[_SeriesKey, dict[str, _Gathered]], by: str) -> list[str]:
    """The notes on how points and series were drawn: nameless runs, hardware changes."""
    notes = []
    if by == BY_COMMIT and any(None in _software_ids(points) for points in gathered.values()):
        notes.append("runs that name no software id are a point per artifact directory, "
                     "in time order")
    descriptions = collections.Counter(name for name, _ in gathered)
    notes += [f"stage {name} ran on {count} hardware descriptions: one series "
              "each, a change of hardware is no change point"
              for name, count in sorted(descriptions.items()) if count > 1]
    return notes


def _software_ids(points: dict[str, _Gathered]) -> set[str | None]:
    return {g.software_id for g in points.values()}


def _gather(
    artifacts: Sequence[Artifact], only: str | None, by: str
) -> tuple[dict[_SeriesKey, dict[str, _Gathered]], set[str]]:
    """Every valid run (a seed once) by series, then by point; and every stage's name."""
    gathered: dict[_SeriesKey, dict[str, _Gathered]] = {}
    names: set[str] = set()
    for artifact in artifacts:
        for name, stored in raw_stages(artifact.data):
            names.add(name)
            if only is None or name == only:
                _gather_stage(gathered, artifact, name, stored, by)
    return gathered, names


def _gather_stage(gathered: dict[_SeriesKey, dict[str, _Gathered]], artifact: Artifact,
                  name: str, stored: dict[str, Any], by: str) -> None:
    """Add a stage's valid runs (a seed once) of one directory to their points."""
    software = artifact.hardware.software
    seconds, runs = _valid_runs(by_seed(stored)[0])
    ids = set(zip(map(_HARDWARE, runs), map(_SOFTWARE, runs), strict=True))
    groups = (
        [(ids.pop(), runs, seconds)] if len(ids) == 1  # the usual stage: one point
        else _split(runs, seconds)
    )
    for (hardware_id, software_id), some, values in groups:
        key = artifact.path if by == BY_TIME or software_id is None else software_id
        points = gathered.setdefault((name, hardware_id), {})
        point = points.get(key) or _new_point(points, key, software_id, software)
        point.add(some, values, artifact.path)


def _new_point(points: dict[str, _Gathered], key: str, software_id: str | None,
               software: dict[str, Any]) -> _Gathered:
    """A series' point ``key``, made on its first runs."""
    point = points[key] = _Gathered(
        key, software_id, software.get(software_id) if software_id else None
    )
    return point


def _valid_runs(stage: dict[str, Any]) -> tuple[list[float], list[dict[str, Any]]]:
    """A stage's valid durations, and those runs (as ``compare`` reads them)."""
    seconds = raw_seconds(stage)
    runs = stage["runs"]
    valid = valid_durations(seconds)
    if len(valid) == len(seconds):
        return valid, runs
    return valid, [run for run, s in zip(runs, seconds, strict=True) if is_valid_seconds(s)]


def _split(
    runs: list[dict[str, Any]], seconds: list[float]
) -> list[tuple[tuple[Any, Any], list[dict[str, Any]], list[float]]]:
    """The runs of a stage by (hardware id, software id), first seen first."""
    groups: dict[tuple[Any, Any], tuple[list[dict[str, Any]], list[float]]] = {}
    for run, value in zip(runs, seconds, strict=True):
        some, values = groups.setdefault((_HARDWARE(run), _SOFTWARE(run)), ([], []))
        some.append(run)
        values.append(value)
    return [(key, some, values) for key, (some, values) in groups.items()]


def _ordering(
    gathered: dict[_SeriesKey, dict[str, _Gathered]], by: str, repo: str | None,
    notes: list[str],
) -> tuple[dict[str, int] | None, Repository | None]:
    """The commit order, or None (time order) after a note saying why; and the repository
    to ask for the commits between points (None when it is not at hand)."""
    if by == BY_TIME:
        notes.append("points are artifact directories in the order of their first run")
        return None, None
    order, repository, reason = _commit_order(gathered, repo)
    if order is None:
        notes.append(f"points in the order of their first run, not of the commit graph: "
                     f"{reason}")
    return order, repository


def _commit_order(
    gathered: dict[_SeriesKey, dict[str, _Gathered]], repo: str | None,
) -> tuple[dict[str, int] | None, Repository | None, str]:
    """The commit order (None, with the reason why, when the graph cannot place every
    point), and the repository when it is at hand."""
    if repo is None:
        return None, None, "no repository"
    repository, reason = open_repository(repo)
    if repository is None:
        return None, None, reason
    order, reason = repository.commit_order()
    if order is None:
        return None, None, reason
    commits = {g.commit() for points in gathered.values() for g in points.values()}
    unplaced = _unplaced(commits, order, repo)
    if unplaced is not None:
        return None, repository, unplaced
    return order, repository, ""


def _unplaced(commits: set[str | None], order: dict[str, int], repo: str | None,
              ) -> str | None:
    """Why the commit graph cannot place every point, or None when it can."""
    if None in commits:  # a point the graph cannot place
        return ("no run recorded its commit" if len(commits) == 1
                else "some points have no recorded commit")
    unknown = sorted(c for c in commits if c is not None and c not in order)
    if not unknown:
        return None
    return (f"commit {unknown[0][:10]} is not in the repository at {repo}"
            + (f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""))


def _ordered(key: _SeriesKey, points: dict[str, _Gathered], order: dict[str, int] | None
             ) -> tuple[_SeriesKey, list[_Gathered]]:
    def place(g: _Gathered) -> tuple[int, str, str]:
        commit = g.commit()
        # every commit is in ``order`` when there is one (else time order)
        where = order[commit] if order is not None and commit is not None else 0
        return (where, g.first or "", g.key)

    return key, sorted(points.values(), key=place)


def _point(g: _Gathered, order: dict[str, int] | None) -> Point:
    commit = g.commit()
    rank = order[commit] if order is not None and commit is not None else 0
    return Point(g.software_id, commit, g.first, tuple(g.seeds),
                 median(sorted(g.seeds)), tuple(g.directories), rank)


def _detected(
    built: list[tuple[_SeriesKey, list[_Gathered]]],
    artifacts: Sequence[Artifact],
    repository: Repository | None,
    threshold: float,
    order: dict[str, int] | None,
    notes: list[str],
) -> History:
    """Every series with its change points, q-values over every test of the call."""
    detections, tests, q_values = _detections(built)
    hardware = _descriptions(artifacts)
    software = SoftwareDifferences()
    series: list[Series] = []
    for ((stage, hw_id), points), found in zip(built, detections, strict=True):
        shown = tuple(_point(g, order) for g in points)
        name = _hardware_name(hardware.get(hw_id))
        if found is None:
            series.append(Series(stage, hw_id, name, shown, (), _too_few(len(points))))
            continue
        q_of = [next(q_values) for _ in found.p_values]
        changes = _changes(stage, points, shown, list(zip(found.changes, q_of, strict=False)),
                           repository, software, threshold)
        series.append(Series(stage, hw_id, name, shown, changes))
    return History(tuple(series), BY_COMMIT if order is not None else BY_TIME, tuple(notes),
                   threshold, tests)


def _descriptions(artifacts: Sequence[Artifact]) -> dict[Any, Any]:
    """Every hardware description of the artifacts by its id."""
    return {hw_id: description for a in artifacts
            for hw_id, description in a.hardware.hardware.items()}


def _detections(built: list[tuple[_SeriesKey, list[_Gathered]]],
                ) -> tuple[list[Detection | None], int, Iterator[float]]:
    """Each series' detection (None with fewer than ``MIN_POINTS`` points), the count of
    their tests, and the q-values of those tests in order, corrected across them all."""
    detections = [detect([g.seeds for g in points]) if len(points) >= MIN_POINTS else None
                  for _, points in built]
    p_values = [p for d in detections if d is not None for p in d.p_values]
    return detections, len(p_values), iter(benjamini_hochberg(p_values))


def _too_few(count: int) -> str:
    return f"{count} point{'s' if count != 1 else ''}: fewer than {MIN_POINTS}, no change " \
        "is looked for"


def _changes(
    stage: str, points: list[_Gathered], shown: tuple[Point, ...],
    found: list[tuple[Change, float]], repository: Repository | None,
    software: SoftwareDifferences, threshold: float,
) -> tuple[ChangePoint, ...]:
    """The significant changes (of ``found``, with their q-values) of at least
    ``threshold``, each measured between its neighbours."""
    kept = [(c, q) for c, q in found if q <= SIGNIFICANCE]
    changes = []
    bounds = [0, *(c.index for c, _ in kept), len(points)]
    for i, (change, q) in enumerate(kept, start=1):
        made = _change(stage, points, shown, bounds[i - 1], bounds[i], bounds[i + 1],
                       change.p_value, q, repository, software)
        if made is not None and abs(math.log(made.ratio)) >= math.log1p(threshold):
            changes.append(made)
    return tuple(changes)


def _change(
    stage: str, points: list[_Gathered], shown: tuple[Point, ...], start: int, at: int,
    end: int, p_value: float, q_value: float, repository: Repository | None,
    software: SoftwareDifferences,
) -> ChangePoint | None:
    before, after = _seeds(points[start:at]), _seeds(points[at:end])
    measured = measure(stage, before, after)
    if measured.ratio is None or measured.ratio <= 0:
        return None
    interval = None
    if measured.test is not None:
        interval = (math.exp(measured.test.low), math.exp(measured.test.high))
    last, first = points[at - 1], points[at]
    return ChangePoint(
        shown[at - 1], shown[at], at, median(sorted(before)), median(sorted(after)),
        measured.ratio, interval, p_value, q_value,
        _what_changed(stage, last, first, repository, software),
    )


def _seeds(points: list[_Gathered]) -> list[float]:
    """The seeds of consecutive points, as one segment."""
    return [s for g in points for s in g.seeds]


def _what_changed(
    stage: str, last: _Gathered, first: _Gathered, repository: Repository | None,
    software: SoftwareDifferences,
) -> WhatChanged:
    commits, count = _commits_between(repository, last.commit(), first.commit())
    differences: tuple[SoftwareDifference, ...] = ()
    if last.software_id is not None and first.software_id is not None:
        differences = software.of_pair(
            _known(last.software_id, last.software), [last.software_id],
            _known(first.software_id, first.software), [first.software_id],
        )
    metadata = metadata_differences([(stage, {"runs": last.runs}, {"runs": first.runs})])
    return WhatChanged(tuple(commits), count, differences, metadata)


def _commits_between(repository: Repository | None, old: str | None, new: str | None,
                     ) -> tuple[list[str], int]:
    """The commits from ``old`` to ``new`` and their count (none without both, or a
    repository)."""
    if repository is None or old is None or new is None or old == new:
        return [], 0
    return repository.commits_between(old, new)


def _known(software_id: str, record: Any) -> dict[str, Any]:
    """A point's software record by its id, as ``SoftwareDifferences`` reads it."""
    return {software_id: record} if record is not None else {}


def _hardware_name(description: Any) -> str:
    """The hardware in a few words: host, CPU model, GPUs."""
    if description is None:
        return ""
    host = getattr(description, "host", None)
    cpu = getattr(getattr(description, "cpu", None), "model_name", None)
    words = [str(word) for word in (host, cpu) if word]
    gpus = [g.name for g in getattr(description, "gpus", ()) if getattr(g, "name", None)]
    if gpus:
        words.append(f"{len(gpus)}x {gpus[0]}")
    return ", ".join(words)
