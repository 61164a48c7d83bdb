"""The save path: saving a recorder's pending records, each save ending in one named
outcome (``outcomes.py``).

``Saver.hand_over`` registers a finished record as pending; ``Saver.save`` stores
everything pending and returns ``Saved``, ``Refused``, ``KeptPending`` or ``HandedBack``.
An interrupt (``BaseException``) is no outcome: the write it cut short is settled, what
is still pending is rescued and the interrupt propagates.

Whether an interrupted write reached the disk is read back from its ``WriteProgress``;
records that went through a write are never applied twice (an identical run already in
the stage is taken as theirs).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from typing import TYPE_CHECKING, Any

import attrs

from stagetimer._errors import InvalidRecordError
from stagetimer._format import (
    AUTO_RESUME_SUFFIX,
    HARDWARE_FILE,
    TIMINGS_FILE,
    takes_expected_runs,
)
from stagetimer._record.likely_mistakes import find_duplicate, find_overtaken
from stagetimer._record.outcomes import (
    AppendedAgain,
    DroppedByReset,
    HandedBack,
    KeptPending,
    Noted,
    Outcome,
    Refused,
    Saved,
)
from stagetimer._record.pending import Finished, Pending, descriptions, utc_iso
from stagetimer._record.rescue_file import RescueFile
from stagetimer._store.markers import DroppedRuns, remove_owned
from stagetimer._store.markers import remove as remove_markers
from stagetimer._store.parse import parse_hardware, parse_timings
from stagetimer._store.rules import apply_run, keep_completed_prefix, run_is_stored
from stagetimer._store.sidecar import (
    TimingsCache,
    UpdateOptions,
    WriteProgress,
    add_descriptions,
    timings_bytes,
    update_file,
)

if TYPE_CHECKING:
    from stagetimer._record.attempt import Started

__all__ = ["FinishedArgs", "Saver", "SaverSettings"]

#: A finished run as its stage (or ``record``'s caller) hands it over, checked: its
#: name, seconds, run index, label, start (a Unix time, or None) and metadata.
FinishedArgs = tuple[
    str, float, int | None, str | None, float | None, dict[str, Any] | None
]


def _discard(pending: list[Pending], records: list[Pending]) -> None:
    """Remove ``records`` from ``pending`` in place, one atomic ``list.remove`` each.

    Never a new list: a signal handler may append to ``pending`` between any two
    bytecodes, and a record appended to a list about to be replaced would be lost (not
    saved, not rescued, not printed). ``Pending`` compares by identity.
    """
    count = len(records)
    # zip stops at ``records``' end: only the prefix of ``pending`` is compared.
    if len(pending) >= count and all(
        a is b for a, b in zip(pending, records, strict=False)
    ):
        # The usual case, a save of everything pending: one slice deletion, not a
        # quadratic series of removals (a recorder that failed for hours holds many).
        del pending[:count]
        return
    for record in records:
        with contextlib.suppress(ValueError):  # already gone
            pending.remove(record)


def _may_drop(policy: str, pending: Pending) -> bool:
    """Whether applying ``pending`` may drop stored runs: every rule but a sequential
    append (``run_idx > 0``), which only adds one."""
    run = pending.run
    return policy != "sequential" or run is None or run.get("run_idx") in (None, 0)


@attrs.frozen
class SaverSettings:
    """The recorder's settings the save path needs."""

    directory: str
    policy: str
    strict: bool
    lock_timeout: float
    expected_runs: int | None
    completed_runs: int | None  # set: the first save keeps only runs below it (resume)
    #: the directory's two sidecars
    timings_path: str = attrs.field(init=False)
    hardware_path: str = attrs.field(init=False)

    @timings_path.default
    def _timings_path(self) -> str:
        return os.path.join(self.directory, TIMINGS_FILE)

    @hardware_path.default
    def _hardware_path(self) -> str:
        return os.path.join(self.directory, HARDWARE_FILE)


@attrs.frozen
class _Rejection:
    pending: Pending
    error: InvalidRecordError


@attrs.frozen
class _Written:
    """What one write of ``timings.json`` refused and which appends repeat a run on disk."""

    rejections: tuple[_Rejection, ...]
    appended_again: tuple[Noted, ...]


@attrs.define(eq=False)
class _InFlight:
    """A write not yet known to have reached the disk, and the records it holds."""

    progress: WriteProgress
    records: list[Pending]
    truncates: bool  # it applies the resume truncation


@attrs.define(eq=False)
class Saver:
    """One recorder's records waiting to be saved, and everything needed to save them.

    ``lock`` (re-entrant) guards all of it; ``pending`` is only appended to outside it.
    """

    settings: SaverSettings
    pending: list[Pending] = attrs.field(factory=list, init=False)
    lock: threading.RLock = attrs.field(factory=threading.RLock, init=False)
    _resume_done: bool = attrs.field(default=False, init=False)
    _hardware_stat: tuple[int, int, int] | None = attrs.field(default=None, init=False)
    _hardware_known: set[str] = attrs.field(factory=set, init=False)
    _cache: TimingsCache = attrs.field(factory=TimingsCache, init=False)
    _inflight: _InFlight | None = attrs.field(default=None, init=False)
    _rescue: RescueFile = attrs.field(init=False)
    _swept: set[str] = attrs.field(factory=set, init=False)  # files it cleared
    #: ids of started markers whose runs are saved, to remove (``remove_markers``)
    unmark: list[str] = attrs.field(factory=list, init=False)

    def __attrs_post_init__(self) -> None:
        self._rescue = self._new_rescue()

    def fresh(self) -> Saver:
        """A saver for the same settings, holding nothing (a forked child's)."""
        return Saver(self.settings)

    def hand_over(
        self,
        finished: FinishedArgs,
        resources: dict[str, Any] | None,
        attempt: Started | None,
        policy: str | None,
        parent: dict[str, str] | None,
        with_software: bool,
    ) -> Pending:
        """Register a finished record as pending: from its ``append`` on, no interrupt
        loses it (it is saved by this thread's save, by another thread's, or at exit).

        ``attempt``: its started marker, whose id and parent it records.
        """
        name, seconds, run_idx, label, started_at, metadata = finished
        iso = None if started_at is None else utc_iso(started_at)
        attempt_id = None
        if attempt is not None:
            attempt_id, parent = attempt.id, attempt.marker.get("parent")
        pending = Pending(
            Finished(
                name, seconds, run_idx, label, iso, metadata, resources, attempt_id, parent
            ),
            with_software=with_software,
            attempt=attempt,
            policy=policy,
        )
        self.pending.append(pending)
        return pending

    def _new_rescue(self) -> RescueFile:
        s = self.settings
        return RescueFile(s.directory, s.policy, s.expected_runs)

    def save(self, waiting: Pending | None = None) -> Outcome:
        """Save everything pending; ``waiting``: the record whose caller awaits the outcome.

        Call with ``lock`` held.
        """
        if not self.pending:  # another thread's save stored them meanwhile
            return Saved()
        newest = (waiting or self.pending[-1]).finished
        try:
            written = self._write()
        except Exception as exc:
            return self._failed(exc, waiting, newest)
        except BaseException:
            self.make_safe()
            raise
        rejections = written.rejections
        keep = [] if self.settings.strict else [r.pending for r in rejections]
        where = self._rescue.write(self.pending, keep)
        if not rejections:
            return Saved(written.appended_again)
        rescued = where if keep else None
        return Refused(rejections[0].error, rescued, written.appended_again)

    def _failed(
        self, exc: Exception, waiting: Pending | None, newest: Finished
    ) -> HandedBack | KeptPending:
        self._settle()
        if self.settings.strict and waiting is not None:
            _discard(self.pending, [waiting])
            self._rescue.write(self.pending, [])
            return HandedBack(exc)
        where = self._rescue.write(self.pending, [])
        return KeptPending(exc, newest, len(self.pending), where)

    def give_up(self) -> None:
        """Stop saving what is pending: it lives on in the rescue file, no longer rewritten.

        Only the records that file holds are dropped; one a signal handler queued
        meanwhile stays pending, for the next rescue file.
        """
        _discard(self.pending, self._rescue.written)
        self._rescue = self._new_rescue()

    def make_safe(self) -> None:
        """After an interrupt: settle the write it cut short, rescue what is still pending."""
        self._settle()
        if self.pending:
            self._rescue.write(self.pending, [])

    def _settle(self) -> None:
        """Learn whether the last write reached the disk; drop the records it stored."""
        inflight = self._inflight
        if inflight is None:
            return
        if inflight.progress.replaced():
            # Its attempts finished: their markers go (first noted, then marked stored,
            # then the records leave the pending list: an interrupt between any two
            # leaves each attempt pending or stored, and its marker noted for removal).
            done = [p.attempt for p in inflight.records if p.attempt is not None]
            self.unmark.extend(a.id for a in done)
            for started in done:
                started.stored = True
            _discard(self.pending, inflight.records)
            if inflight.truncates:
                self._resume_done = True
        self._inflight = None
        self.remove_markers()

    def remove_markers(self) -> None:
        """Remove the markers of attempts whose runs are saved (never raises ``OSError``:
        one that cannot be removed is a leftover, which counts as finished)."""
        ids = self.unmark
        if not ids:
            return
        count = len(ids)
        with contextlib.suppress(OSError):
            remove_markers(self.settings.directory, ids[:count])
        del ids[:count]  # a handler may have appended meanwhile: only the prefix goes

    def _write(self) -> _Written:
        """Save every pending record (hardware first); the first lock taken creates the
        directory when it is missing."""
        self._settle()
        s = self.settings
        deadline = time.monotonic() + s.lock_timeout  # one budget for the whole save
        records = list(self.pending)
        for pending in records:
            pending.resolve()
        self._save_hardware(*descriptions(records), deadline)
        return self._write_timings(records, deadline)

    def _write_timings(self, records: list[Pending], deadline: float) -> _Written:
        """Apply ``records`` to ``timings.json`` under its lock, before ``deadline``."""
        s = self.settings
        rejections: list[_Rejection] = []
        again: list[Noted] = []
        truncate = s.completed_runs is not None and not self._resume_done

        def change(data: dict[str, Any]) -> bytes | None:
            # Under the lock: records ``recover`` stored from our rescue file (it removes
            # the file under this lock) are never stored again.
            taken = self._rescue.taken_by_recover()
            if taken:
                _discard(self.pending, taken)
            # Runs this save may drop (a resume's truncation, a reset or a replacement;
            # never an append): their leftover markers go with them. Found from the runs
            # before any change, never by listing.
            dropping = DroppedRuns(data, None if truncate else {
                n for p in records if p not in taken and _may_drop(s.policy, p)
                for n in (p.name, p.name + AUTO_RESUME_SUFFIX)})
            if truncate:
                assert s.completed_runs is not None
                keep_completed_prefix(data, s.completed_runs)
            changed = truncate
            for pending in records:
                if pending in taken:
                    continue
                try:
                    changed = self._apply(data, pending, again) or changed
                except InvalidRecordError as exc:
                    rejections.append(_Rejection(pending, exc))
            # Leftover markers (a writer killed between its publish and its marker's
            # removal) of the runs this change drops (a rerun of the same run under a new
            # attempt id, a reset, a resume's truncation): told from the runs on disk
            # before the change, and removed before it publishes, while those runs are
            # still the file's, so that no reader ever sees one without its run.
            ours = {p.attempt.id for p in records if p.attempt is not None}
            leftovers = dropping.ids(data, ours)
            if leftovers:
                remove_owned(s.directory, leftovers)
            return timings_bytes(data, self._cache) if changed else None

        progress = WriteProgress()
        self._inflight = _InFlight(progress, records, truncate)
        path = s.timings_path
        update_file(
            path, parse_timings, change, s.lock_timeout, self._cache,
            UpdateOptions(progress, path not in self._swept, deadline),
        )
        self._swept.add(path)
        # Written, or nothing needed writing (every record refused or already stored).
        progress.done = True
        self._settle()
        return _Written(tuple(rejections), tuple(again))

    def _apply(self, data: dict[str, Any], pending: Pending, again: list[Noted]) -> bool:
        """Apply one record to the parsed file; whether it changed it. Refusals raise."""
        run = pending.run
        assert run is not None
        name = pending.name
        if pending.written and run_is_stored(data, name, run):
            return False  # an interrupted write of this process stored it already
        pending.written = True
        s = self.settings
        policy = pending.policy or s.policy
        notes: list[Noted] = []  # read before the run changes the stage
        if policy == "sequential":
            if find_duplicate(data, name, run):
                notes.append(AppendedAgain(name, run["run_idx"]))
            overtaken = find_overtaken(data, name, run)
            if overtaken:
                notes.append(DroppedByReset(name, overtaken))
        trusted = self._cache.trusted_totals
        apply_run(data, name, run, policy, trusted_total=name in trusted)
        again.extend(notes)  # a refused record appended and dropped nothing: no note
        trusted.add(name)
        if s.expected_runs is not None and takes_expected_runs(name, run.get("run_idx")):
            data[name]["expected_runs"] = s.expected_runs
        return True

    def _save_hardware(
        self,
        needed: dict[str, dict[str, Any]],
        software: dict[str, dict[str, Any]],
        deadline: float,
    ) -> None:
        """Store the hardware and software descriptions the records refer to (one write)."""
        path = self.settings.hardware_path
        ids = needed.keys() | software.keys()  # "hw-…" and "sw-…" never collide
        if ids <= self._hardware_known:
            # Entries are never removed: an unchanged file still holds what we confirmed.
            try:
                st = os.stat(path)
            except FileNotFoundError:
                st = None
            if st is not None and (st.st_ino, st.st_size, st.st_mtime_ns) == self._hardware_stat:
                return

        def change(data: dict[str, Any]) -> str | None:
            return add_descriptions(data, needed, software)

        update_file(
            path, parse_hardware, change, self.settings.lock_timeout,
            options=UpdateOptions(sweep=path not in self._swept, deadline=deadline),
        )
        self._swept.add(path)
        st = os.stat(path)
        self._hardware_stat = (st.st_ino, st.st_size, st.st_mtime_ns)
        self._hardware_known = set(ids)
