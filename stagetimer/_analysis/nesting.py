"""Which runs lie inside another: a stage entered while another stage of the same
recorder was open records that stage as its ``parent`` (``{"stage", "attempt_id"}``).

A total *across* stages counts each moment once: a run nested inside its parent's run
adds nothing to it, its time being inside its parent's (a fit holds its epochs). A
stage's own figures are unchanged. A run counts on its own, as before, where its parent
was not recorded (a legacy run, recording disabled, another recorder), where its
parent's run is not among the runs read (the parent failed, or is in another file),
where that run's ``seconds`` is one no writer stores, and where the two runs' starts,
both readable, show the child starting outside its parent's time.

The one rule for every reader: the report, the table, ``compute``, ``lost`` and the page.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Iterator
from typing import Any

from stagetimer._analysis.raw import raw_stages
from stagetimer._store.marker_read import parse_utc
from stagetimer._store.rules import is_valid_seconds

__all__ = [
    "NESTED_NOTE",
    "Span",
    "has_parent",
    "nested_attempts",
    "nested_flags",
    "nested_of",
    "nested_runs",
    "parent_id",
]

#: What every reader says, once, where it counted a nested run inside its parent.
NESTED_NOTE = "nested stages are counted inside their parents in totals across stages"

#: A run's ``started_at`` is read from the wall clock before its started marker is
#: written, its ``seconds`` from the monotonic clock after: a parent's recorded end may lie
#: before its last child's by the time its marker took (a directory made and synced on a
#: slow file system). A child is inside its parent where it starts between the parent's
#: start and its end, this much later allowed.
_SLACK_SECONDS = 1.0
_SLACK_FRACTION = 0.01

#: (attempt id, parent's attempt id, started_at as stored, seconds) of one run
Span = tuple[Any, Any, Any, Any]


def parent_id(parent: object) -> str | None:
    """The attempt id a run's ``parent`` names: an object whose ``attempt_id`` is a string
    (anything else, an older writer's metadata, names none)."""
    if type(parent) is dict:
        found = parent.get("attempt_id")
        if type(found) is str:
            return found
    return None


def _posix(value: object) -> float | None:
    """A start as stored (``...Z``) or as an aware datetime, in POSIX seconds."""
    moment = value if isinstance(value, datetime.datetime) else parse_utc(value)
    return None if moment is None else moment.timestamp()


def _inside(child: Span, parent: Span) -> bool:
    """Whether ``child`` started while ``parent`` ran, where both starts are readable
    (else the recorded link is trusted): a link no writer made (a copied file, an
    edited one) does not hide a run from the totals."""
    child_start, parent_start = _posix(child[2]), _posix(parent[2])
    if child_start is None or parent_start is None:
        return True
    slack = _SLACK_SECONDS + _SLACK_FRACTION * float(parent[3])
    return bool(parent_start - slack <= child_start <= parent_start + parent[3] + slack)


def _parents(spans: list[Span]) -> dict[str, Span]:
    """The spans a child may name, by attempt id: those with a valid duration (the first
    of an id)."""
    by_id: dict[str, Span] = {}
    for span in spans:
        if type(span[0]) is str and is_valid_seconds(span[3]):
            by_id.setdefault(span[0], span)
    return by_id


def nested_flags(spans: list[Span]) -> list[bool]:
    """For each run of one directory, whether it counts inside its parent's run: its
    ``parent`` names the attempt of another run among ``spans`` with a valid duration,
    and its own time lies inside that run's. Runs without a valid duration are never
    nested (they count for nothing anyway)."""
    flags = [False] * len(spans)
    candidates = [i for i, span in enumerate(spans) if span[1] is not None]
    if not candidates:
        return flags
    by_id = _parents(spans)
    for i in candidates:
        flags[i] = _nested(spans[i], by_id.get(spans[i][1]))
    return flags


def _nested(child: Span, parent: Span | None) -> bool:
    """Whether ``child`` counts inside ``parent``, the run it names (None: none among
    the spans): another run, and ``child`` has a valid duration and lies inside it."""
    if parent is None or parent is child or not is_valid_seconds(child[3]):
        return False
    return _inside(child, parent)


def _raw_spans(data: dict[str, Any]) -> Iterator[tuple[int, Span]]:
    for _, stage in raw_stages(data):
        for run in stage["runs"]:
            yield id(run), (
                run.get("attempt_id"), parent_id(run.get("parent")), run.get("started_at"),
                run.get("seconds"),
            )


def nested_runs(data: dict[str, Any]) -> set[int]:
    """The ``id()`` of each stored run (a mapping of the parsed ``timings.json`` ``data``)
    that counts inside its parent's run (``has_parent`` tells cheaply whether any may)."""
    listed = list(_raw_spans(data))
    flags = nested_flags([span for _, span in listed])
    return {key for (key, _), nested in zip(listed, flags, strict=True) if nested}


def has_parent(data: dict[str, Any]) -> bool:
    """Whether some run of ``data`` holds a ``parent`` (one look at each stage's keys, in
    C)."""
    return any(
        stage["runs"] and "parent" in set().union(*stage["runs"]) for _, stage in raw_stages(data)
    )


def nested_of(runs: Iterable[Any]) -> list[bool]:
    """``nested_flags`` of ``RunTiming``-like objects (``attempt_id``, ``parent``,
    ``started_at``, ``seconds``) of one directory, in order."""
    return nested_flags([
        (run.attempt_id, parent_id(run.parent), run.started_at, run.seconds) for run in runs
    ])


def nested_attempts(attempts: Iterable[Any]) -> set[int]:
    """The ``id()`` of each finished attempt (``attempts.Attempt``) nested inside another
    finished attempt, as ``nested_flags`` decides for their runs: ``lost``'s productive
    time in all counts it inside its parent's, as ``compute``'s wall time does."""
    finished = [a for a in attempts if a.state == "finished"]
    if all(a.parent_id is None for a in finished):
        return set()
    flags = nested_flags([(a.attempt_id, a.parent_id, a.started_at, a.seconds) for a in finished])
    return {id(a) for a, nested in zip(finished, flags, strict=True) if nested}
