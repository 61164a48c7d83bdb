"""The last sign of life of each writer: what a process is known to have done last in
the directories read, and so the earliest a killed attempt of it can have ended.

A writer is one process (host, boot id, pid namespace, pid and process start time, as
its markers record it), and only markers owned by the same user (the file's owner, a
fact; the content is a claim) speak for it: another user's file cannot stretch an
attempt's lost time. Its signs are every moment one of its markers proves it was
alive: the start of each marker it wrote, the last beat of a marker it kept beating,
the end a failed marker gives, and the end of the run a finished attempt of it stored
(its marker left behind by a kill between the two). A run that names the attempt it ran
inside (``parent``) is a sign of that attempt's own life. Values no writer could have
written (``Marker.odd``) are no sign of anything.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from stagetimer._store.marker_read import Marker, Writer, heartbeat_of, parse_utc, writer_of

__all__ = ["Sign", "SignsOfLife"]


@attrs.frozen
class Sign:
    """A moment a writer (or an attempt) was alive, and what shows it, in words."""

    moment: datetime.datetime
    what: str


def _later(known: Sign | None, sign: Sign) -> Sign:
    return sign if known is None or sign.moment > known.moment else known


@attrs.define
class SignsOfLife:
    """The latest sign of life of each writer, and of each attempt a run ran inside."""

    writers: dict[tuple[Writer, int], Sign] = attrs.Factory(dict)
    attempts: dict[str, Sign] = attrs.Factory(dict)

    def _saw(self, writer: tuple[Writer, int], sign: Sign) -> None:
        self.writers[writer] = _later(self.writers.get(writer), sign)

    def add_directory(
        self,
        markers: Sequence[Marker],
        finished_ids: set[str],
        finished: Iterable[Any],
        inside: Iterable[tuple[str, datetime.datetime]],
    ) -> None:
        """Learn from one directory: its ``markers``, the ids of its finished attempts,
        its finished attempts (``Attempt``), and (parent id, end) of its runs that name
        the attempt they ran inside."""
        ends = {a.attempt_id: a for a in finished if a.attempt_id in finished_ids}
        for marker in markers:
            if not marker.odd:
                self._learn(marker, ends.get(marker.attempt_id))
        for parent, end in inside:
            self.attempts[parent] = _later(
                self.attempts.get(parent), Sign(end, "the end of a run it held"))

    def _learn(self, marker: Marker, done: Any) -> None:
        """Learn from one marker, and from ``done``, its finished attempt (or None)."""
        named = writer_of(marker.data)
        if named is None:
            return
        writer = (named, marker.uid)
        for moment, what in (
            (marker.started_at, "a marker it wrote"),
            (marker.mtime if heartbeat_of(marker) is not None else None,
             "a heartbeat of one of its markers"),
            (_failed_at(marker), "the end of an attempt of it that failed"),
            (None if done is None else _end(done.started_at, done.seconds),
             "the end of a run it finished"),
        ):
            if moment is not None:
                self._saw(writer, Sign(moment, what))

    def of(self, marker: Marker) -> Sign | None:
        """The latest sign of life of ``marker``'s writer, or of its attempt itself,
        past its start (None where nothing shows it alive later)."""
        found = self.attempts.get(marker.attempt_id)
        writer = writer_of(marker.data)
        if writer is not None and (sign := self.writers.get((writer, marker.uid))) is not None:
            found = _later(found, sign)
        return found if found is not None and found.moment > marker.started_at else None


def _failed_at(marker: Marker) -> datetime.datetime | None:
    """When the attempt of a marker that says it failed ended (None: not said)."""
    if marker.data.get("outcome") is None:
        return None
    return parse_utc(marker.data.get("ended_at"))


def _end(started: datetime.datetime | None, seconds: float | None) -> datetime.datetime | None:
    if started is None or seconds is None or not 0 <= seconds < 1e10:
        return None
    return started + datetime.timedelta(seconds=seconds)
