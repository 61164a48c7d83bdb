"""What became of each entry into a recorded stage: one :class:`Attempt` per started marker
(and per finished run), with its state decided from evidence, never guessed.

An attempt is *finished* (its run is in ``timings.json``), *failed* (the block raised or
was interrupted: the marker says so), *killed* (evidence shows the writer died without
finishing), *running* (evidence shows the writer still runs) or *unknown* (no evidence
either way). A killed attempt's end is an interval (``ended_between``), with the evidence
that bounds it in one line.
"""

from __future__ import annotations

import datetime
import os
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

import attrs

from stagetimer._analysis.attempts.evidence import Verdict, judge, one_line
from stagetimer._analysis.attempts.signs_of_life import SignsOfLife
from stagetimer._analysis.nesting import parent_id
from stagetimer._analysis.raw import raw_stages, read_data
from stagetimer._analysis.slurm_jobs import JobView, SlurmLookup
from stagetimer._analysis.tree import Problem, find_artifact_dirs, read_problem
from stagetimer._errors import (
    InvalidTypeError,
    SchemaVersionError,
    SidecarCorruptError,
    StageTimerWarning,
)
from stagetimer._format import TIMINGS_FILE
from stagetimer._store.marker_read import Marker, parse_utc, read_markers
from stagetimer._store.rules import is_valid_seconds

__all__ = ["Attempt", "Cause", "State", "attempts", "scan_attempts"]

State = Literal["finished", "failed", "killed", "running", "unknown"]
Cause = Literal[
    "raised",
    "interrupted",
    "preempted",
    "timeout",
    "out_of_memory",
    "node_fail",
    "cancelled",
    "killed",
]


@attrs.frozen
class Attempt:
    """One entry into a recorded stage, and what became of it."""

    #: 32 hex digits, random, given at entry (``None`` for a run written before markers)
    attempt_id: str | None
    #: the artifact directory (the one holding ``timings.json``), as the caller named it
    directory: str
    stage: str
    run_idx: int | None
    label: str | None
    rank: int | None
    #: when the block started (UTC, aware); None only for a run of an older file that
    #: did not record it
    started_at: datetime.datetime | None
    state: State
    #: None for finished, running and unknown attempts
    cause: Cause | None
    #: the exception's type name, for ``cause == "raised"`` (and "interrupted")
    exception: str | None
    #: the block's duration, for finished and failed attempts
    seconds: float | None
    #: for killed attempts: (earliest, latest) end in UTC, either None where unbounded
    ended_between: tuple[datetime.datetime | None, datetime.datetime | None] | None
    #: one line: how the state and the end were decided
    evidence: str
    world_size: int | None = None
    #: the writer's host name (``None`` where unknown)
    host: str | None = None
    hardware_id: str | None = None
    software_id: str | None = None
    #: the batch job (``{"scheduler": "slurm", "job_id": ..., "array_job_id": ...,
    #: "array_task_id": ..., "restart_count": ...}``), as runs store it; None outside a job
    job: dict[str, Any] | None = None
    #: one line per value of its marker no writer could have written (a ``seconds`` of
    #: 1e308, a start in year 9999): such an attempt is counted, never summed
    odd: tuple[str, ...] = ()
    #: the boot id of the writer's machine, as its marker records it (runs record none)
    boot_id: str | None = None
    #: the attempt id of the stage open around it (its ``parent``), None where none
    parent_id: str | None = None


_Key = tuple[str, Any, Any, Any]


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: object) -> int | None:
    return value if type(value) is int else None


def _seconds(value: object) -> float | None:
    if type(value) not in (int, float):
        return None
    try:
        return float(value)  # type: ignore[arg-type]
    except OverflowError:
        return float("inf")


def _job(value: object) -> dict[str, Any] | None:
    return dict(value) if type(value) is dict else None


def _finished(directory: str, stage: str, run: dict[str, Any]) -> Attempt:
    """The attempt a stored run is: finished (with or without an ``attempt_id``)."""
    return Attempt(
        attempt_id=_text(run.get("attempt_id")),
        directory=directory,
        stage=stage,
        run_idx=_int(run.get("run_idx")),
        label=_text(run.get("label")),
        rank=_int(run.get("rank")),
        started_at=parse_utc(run.get("started_at")),
        state="finished",
        cause=None,
        exception=None,
        seconds=_seconds(run.get("seconds")),
        ended_between=None,
        evidence=f"its run is in {TIMINGS_FILE}",
        world_size=_int(run.get("world_size")),
        host=_host(run.get("job")),
        hardware_id=_text(run.get("hardware_id")),
        software_id=_text(run.get("software_id")),
        job=_job(run.get("job")),
        parent_id=parent_id(run.get("parent")),
    )


def _host(job: object) -> str | None:
    """A run's host: the node its job names (runs record no host of their own)."""
    return _text(job.get("node_name")) if type(job) is dict else None


def _from_marker(directory: str, marker: Marker, verdict: Verdict) -> Attempt:
    data = marker.data
    state = verdict.state
    writer = data.get("writer")
    return Attempt(
        attempt_id=marker.attempt_id,
        directory=directory,
        stage=data["stage"],
        run_idx=_int(data.get("run_idx")),
        label=_text(data.get("label")),
        rank=_int(data.get("rank")),
        started_at=marker.started_at,
        state=state,  # type: ignore[arg-type]
        cause=verdict.cause,  # type: ignore[arg-type]
        exception=_one_line(data.get("exception")) if state == "failed" else None,
        seconds=_seconds(data.get("seconds")) if state == "failed" else None,
        ended_between=verdict.ended_between,
        evidence=one_line(verdict.evidence),
        world_size=_int(data.get("world_size")),
        host=_text(writer.get("host")) if type(writer) is dict else None,
        hardware_id=_text(data.get("hardware_id")),
        software_id=_text(data.get("software_id")),
        job=_job(data.get("job")),
        odd=marker.odd,
        boot_id=_text(writer.get("boot_id")) if type(writer) is dict else None,
        parent_id=parent_id(data.get("parent")),
    )


def _one_line(value: object) -> str | None:
    return one_line(value) if isinstance(value, str) else None


def _key(stage: str, run_idx: object, label: object, rank: object) -> _Key:
    return (stage, run_idx, label, rank)


def _marker_key(marker: Marker) -> _Key:
    """The run a marker's attempt is of: (stage, run_idx, label, rank)."""
    data = marker.data
    return _key(data["stage"], data.get("run_idx"), data.get("label"), data.get("rank"))


def _later_starts(
    found: Sequence[Attempt], markers: Sequence[Marker]
) -> dict[_Key, list[datetime.datetime]]:
    """Every start of each run (stage, run_idx, label, rank) in one directory, sorted."""
    starts: dict[_Key, list[datetime.datetime]] = {}
    for attempt in found:
        if attempt.started_at is not None:
            key = _key(attempt.stage, attempt.run_idx, attempt.label, attempt.rank)
            starts.setdefault(key, []).append(attempt.started_at)
    for marker in markers:
        starts.setdefault(_marker_key(marker), []).append(marker.started_at)
    for moments in starts.values():
        moments.sort()
    return starts


def _next_start(
    moments: list[datetime.datetime], after: datetime.datetime
) -> datetime.datetime | None:
    return next((moment for moment in moments if moment > after), None)


def _failed(marker: Marker) -> Verdict | None:
    """The verdict of a marker that says its block failed (its ``outcome``), where its
    content is trusted (``judge`` decides the others, the untrusted ones included)."""
    data = marker.data
    outcome = data.get("outcome")
    if marker.distrust is not None or outcome is None:  # distrust: before anything it says
        return None
    ended = parse_utc(data.get("ended_at"))
    when = f" at {ended:%Y-%m-%d %H:%M:%S} UTC" if ended is not None else ""
    how = _how_failed(outcome, _one_line(data.get("exception")))
    return Verdict("failed", outcome, None, f"its block {how}{when} (its marker says so)")


def _how_failed(outcome: object, name: str | None) -> str:
    """How a block failed, from its marker's ``outcome`` and exception's ``name``."""
    if outcome == "raised":
        return f"raised {name or 'an exception'}"
    if name is not None:
        return f"was interrupted by {name}"
    return "was left open when its process exited"  # its process ended in the block


@attrs.frozen
class _Read:
    """One artifact directory as read: its finished attempts, its markers, and the ends
    of its runs that name the attempt they ran inside (``parent``)."""

    directory: str
    found: list[Attempt]
    markers: list[Marker]
    finished_ids: set[str]
    #: (the parent's attempt id, when the run ended) of each run that names its parent
    inside: list[tuple[str, datetime.datetime]]


def _end_of(run: dict[str, Any]) -> datetime.datetime | None:
    """When a stored run ended (its start plus its seconds), where both are sound."""
    started = parse_utc(run.get("started_at"))
    seconds = run.get("seconds")
    if started is None or not is_valid_seconds(seconds):
        return None
    try:
        return started + datetime.timedelta(seconds=float(seconds))
    except OverflowError:
        return None


def _parent_id(record: dict[str, Any]) -> str | None:
    parent = record.get("parent")
    attempt_id = parent.get("attempt_id") if type(parent) is dict else None
    return attempt_id if type(attempt_id) is str else None


def _read_directory(directory: str, problems: list[Problem]) -> _Read | None:
    """One artifact directory's runs and markers (None where its ``timings.json`` cannot
    be read: without its runs no marker there can be told from a finished one's
    leftover)."""
    try:
        data = read_data(directory)
    except (SidecarCorruptError, SchemaVersionError, OSError) as exc:
        problems.append(read_problem(exc, os.path.join(directory, TIMINGS_FILE)))
        return None
    found, inside = _runs_read(directory, data)
    markers, bad = read_markers(directory)
    problems.extend(Problem(b.path, b.message) for b in bad)
    finished_ids = {a.attempt_id for a in found if a.attempt_id is not None}
    return _Read(directory, found, markers, finished_ids, inside)


def _runs_read(directory: str, data: dict[str, Any],
               ) -> tuple[list[Attempt], list[tuple[str, datetime.datetime]]]:
    """A directory's stored runs as finished attempts, and (parent's attempt id, end) of
    each run that names the attempt it ran inside."""
    found: list[Attempt] = []
    inside: list[tuple[str, datetime.datetime]] = []
    for name, stage in raw_stages(data):
        for run in stage["runs"]:
            if type(run) is not dict:
                continue
            found.append(_finished(directory, name, run))
            parent = _parent_id(run)
            if parent is not None and (end := _end_of(run)) is not None:
                inside.append((parent, end))
    return found, inside


def _directory_attempts(
    read: _Read,
    now: datetime.datetime,
    slurm: Callable[[str], JobView | None],
    signs: SignsOfLife,
) -> list[Attempt]:
    """The attempts of one artifact directory: its runs, then its other markers."""
    found = list(read.found)
    open_markers = [m for m in read.markers if m.attempt_id not in read.finished_ids]
    # Only a trusted marker is evidence against another attempt.
    starts = _later_starts(found, [m for m in open_markers if m.distrust is None])
    for marker in open_markers:
        later = _next_start(starts.get(_marker_key(marker), []), marker.started_at)
        verdict = _failed(marker) or judge(marker, now, slurm, later, signs.of(marker))
        found.append(_from_marker(read.directory, marker, verdict))
    return found


def _order(attempt: Attempt) -> tuple[Any, ...]:
    started = attempt.started_at
    return (started is None, started or datetime.datetime.min, attempt.stage)


def scan_attempts(
    paths: Iterable[str | os.PathLike[str]],
    now: datetime.datetime | None = None,
    slurm: Callable[[str], JobView | None] | None = None,
    *,
    with_markers_only: bool = False,
) -> tuple[list[Attempt], list[Problem]]:
    """Every attempt at or under ``paths`` and every problem met (a path that cannot be
    walked, a ``timings.json`` that cannot be read, a bad marker), each named once.

    ``slurm`` looks a job up (default: a ``SlurmLookup`` of this call); a caller that
    reads again and again may keep one. ``with_markers_only``: only the directories
    holding markers (all a caller that wants failed and killed attempts needs)."""
    moment = _now(now)
    lookup = slurm if slurm is not None else SlurmLookup()
    directories, problems = _directories(paths, with_markers_only)
    read = [r for d in directories if (r := _read_directory(d, problems)) is not None]
    # What each writer was last seen doing, over every directory read: a killed
    # attempt's lower end is the last moment its writer is known to have been alive.
    signs = SignsOfLife()
    for one in read:
        signs.add_directory(one.markers, one.finished_ids, one.found, one.inside)
    result: list[Attempt] = []
    for one in read:
        result.extend(sorted(_directory_attempts(one, moment, lookup, signs), key=_order))
    return result, problems


def _directories(paths: Iterable[str | os.PathLike[str]], with_markers_only: bool,
                 ) -> tuple[list[str], list[Problem]]:
    """The artifact directories under ``paths`` (or only those holding markers), then the
    directories holding markers and no ``timings.json`` yet; and the walk's problems."""
    attempted: list[str] = []
    found, problems = find_artifact_dirs(paths, attempted=attempted)
    directories = [] if with_markers_only else [f.path for f in found]
    known = {os.path.realpath(d) for d in directories}
    return directories + [d for d in attempted if os.path.realpath(d) not in known], problems


def _now(now: datetime.datetime | None) -> datetime.datetime:
    if now is None:
        return datetime.datetime.now(datetime.timezone.utc)
    if not isinstance(now, datetime.datetime) or now.tzinfo is None:
        raise InvalidTypeError(
            "attempts(now=...) must be an aware datetime (datetime.now(timezone.utc))", now
        )
    return now.astimezone(datetime.timezone.utc)


def attempts(*paths: str | os.PathLike[str], now: datetime.datetime | None = None) -> list[Attempt]:
    """One :class:`Attempt` per entry into a recorded stage at or under ``paths``: each
    finished run (its ``attempt_id`` where it has one), each failed attempt, and each
    attempt left unfinished, judged from evidence as of ``now`` (default: now, UTC).

    Raises what ``load_tree`` raises for a path that cannot be walked or a
    ``timings.json`` that cannot be read; a marker that is not one (a link, a FIFO, too
    large, not JSON) is named in a ``StageTimerWarning`` and passed over.

    >>> lost = [a for a in attempts("exports") if a.state in ("failed", "killed")]
    """
    if not paths:
        raise InvalidTypeError("attempts() needs at least one path", paths)
    found, problems = scan_attempts(paths, now)
    for problem in problems:
        if problem.error is not None:
            raise problem.error
    for problem in problems:
        warnings.warn(problem.line(), StageTimerWarning, stacklevel=2)
    return found
