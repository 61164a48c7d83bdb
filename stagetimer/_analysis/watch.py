"""A suite being watched: one :class:`Snapshot` per refresh, re-reading only what changed.

The walk lists again only the directories whose modification time changed since the
last refresh (:class:`tree.Listings`). A directory's files are read again only when the
``(inode, size, mtime)`` of its ``timings.json`` or of its ``timings.attempts/`` folder
changed since the last refresh, or when some attempt of it was running or unknown
(whether its writer still runs is decided again each time); the time to go of a
directory read before is drawn again only when what it is drawn from changed (the
attempts, the runs expected, the array's throttle). Nothing is written and no lock is
taken: sidecars are replaced whole by rename, and markers are created and replaced the
same way, so a read sees one version or the other. A file that vanishes or changes
mid-read, a directory removed while watched and a Slurm that cannot be asked give a
problem line in the snapshot, and the refresh goes on with the rest.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs

from stagetimer._analysis.attempts.scan import Attempt, scan_attempts
from stagetimer._analysis.eta import Eta, StageProgress, at_instant, stage_progress, suite_eta
from stagetimer._analysis.raw import raw_stages, read_data
from stagetimer._analysis.report import expected_runs
from stagetimer._analysis.slurm_array import ArrayUnreadable, ArrayView, array_view
from stagetimer._analysis.slurm_jobs import SlurmLookup
from stagetimer._analysis.tree import Listings, find_artifact_dirs
from stagetimer._format import ATTEMPTS_DIR, TIMINGS_FILE

__all__ = ["DirectoryProgress", "Snapshot", "Watcher", "directory_progress"]

ArrayReader = Callable[[str], ArrayView]


@attrs.frozen
class DirectoryProgress:
    path: str
    stages: tuple[StageProgress, ...]


@attrs.frozen
class Snapshot:
    """The suite at one refresh."""

    time: datetime.datetime
    directories: tuple[DirectoryProgress, ...]
    #: the whole suite's time to go; None while nothing allows an estimate
    eta: Eta | None
    #: what could not be read this time, one line each
    problems: tuple[str, ...]
    #: the attempts left out of the estimates (values no writer could have written)
    left_out: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        """Every directory has stages and nothing left in any."""
        return bool(self.directories) and all(map(_done, self.directories))


def _done(directory: DirectoryProgress) -> bool:
    """Whether the directory has stages and nothing left in any."""
    return bool(directory.stages) and all(s.complete for s in directory.stages)


def _signature(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


@attrs.define
class _Read:
    """One directory as last read."""

    signature: tuple[object, ...]
    attempts: list[Attempt]
    expected: dict[str, int]
    #: whether some attempt was running or unknown when read
    live: bool = attrs.field(init=False)
    #: the progress drawn from them once everything was done (it no longer changes)
    complete: DirectoryProgress | None = None
    #: the progress last drawn from them, with what else it was drawn from (the runs
    #: expected by ``--expect``, the array): reused, its elapsed times moved on, while
    #: neither changes and nothing runs
    drawn: tuple[object, DirectoryProgress] | None = None

    def __attrs_post_init__(self) -> None:
        self.live = any(a.state in ("running", "unknown") for a in self.attempts)

    def stands(self, signature: tuple[object, ...]) -> bool:
        """Whether it still holds: nothing it was read from changed (``signature``), and
        nothing was running or unknown."""
        return self.signature == signature and not self.live


def _array_id(attempts: Iterable[Attempt]) -> str | None:
    for attempt in attempts:
        job = attempt.job or {}
        if job.get("scheduler") == "slurm" and isinstance(job.get("array_job_id"), str):
            return str(job["array_job_id"])
    return None


def _task_ids(attempts: Iterable[Attempt], array_id: str) -> set[int]:
    ids = set()
    for attempt in attempts:
        job = attempt.job or {}
        task = job.get("array_task_id")
        if job.get("array_job_id") == array_id and isinstance(task, str) and task.isdigit():
            ids.add(int(task))
    return ids


def _expected(data: dict[str, Any]) -> dict[str, int]:
    """The runs each stage of a timings file expects (``expected_runs``), where it says."""
    return {
        name: count for name, stage in raw_stages(data)
        if (count := expected_runs(stage)) is not None
    }


def _attempts_in(directory: str, now: datetime.datetime, slurm: SlurmLookup,
                 problems: list[str]) -> list[Attempt]:
    """The attempts of one directory (its markers'), each problem said in ``problems``."""
    found, trouble = scan_attempts([directory], now, slurm)
    problems += [p.line() for p in trouble]
    real = os.path.realpath(directory)
    return [a for a in found if os.path.realpath(a.directory) == real]


def _left_out(shown: Iterable[DirectoryProgress]) -> tuple[str, ...]:
    """Every attempt left out of the estimates, one line each, its directory first."""
    return tuple(f"{d.path}: {line}" for d in shown for s in d.stages for line in s.left_out)


def directory_progress(
    path: str,
    attempts: Sequence[Attempt],
    now: datetime.datetime,
    *,
    expected: dict[str, int] | None = None,
    expect: int | None = None,
    array: ArrayView | None = None,
) -> DirectoryProgress:
    """Each stage's progress in one directory: runs expected from ``expect`` (``--expect``),
    else the stage's ``expected_runs``, else the array's tasks (those Slurm knows and those
    the attempts name); slots from the array's throttle, else the concurrency observed."""
    by_stage: dict[str, list[Attempt]] = {}
    for attempt in attempts:
        by_stage.setdefault(attempt.stage, []).append(attempt)
    for name in expected or {}:
        by_stage.setdefault(name, [])
    slots = array.throttle if array is not None else None
    return DirectoryProgress(path, tuple(
        stage_progress(name, tries, now, expected=_runs_expected(name, tries, expected, expect,
                                                                 array), slots=slots)
        for name, tries in by_stage.items()
    ))


def _runs_expected(name: str, tries: Sequence[Attempt], expected: dict[str, int] | None,
                   expect: int | None, array: ArrayView | None) -> int | None:
    """The runs a stage should end with (see ``directory_progress``); None: those seen."""
    if expect is not None:
        return expect
    count = (expected or {}).get(name)
    if count is None and array is not None:
        return len(array.task_ids | _task_ids(tries, array.array_job_id)) or None
    return count


def _moved_on(progress: DirectoryProgress, now: datetime.datetime) -> DirectoryProgress:
    """``progress`` as at ``now``: its elapsed times moved on (``at_instant``)."""
    return DirectoryProgress(progress.path, tuple(
        at_instant(stage, now) for stage in progress.stages
    ))


def _alone(directories: list[str], attempted: list[str]) -> list[str]:
    """The directories walked that hold markers and no timings.json yet: those of
    ``attempted`` not among ``directories``, by name or real path."""
    listed = set(directories)
    alone = [d for d in attempted if d not in listed]
    if not alone:
        return []
    known = {os.path.realpath(d) for d in directories}
    return [d for d in alone if os.path.realpath(d) not in known]


class Watcher:
    """Refreshes of the suite under ``paths``; each keeps what did not change."""

    def __init__(
        self,
        paths: Sequence[str],
        *,
        expect: int | None = None,
        read_array: ArrayReader = array_view,
    ) -> None:
        self.paths = list(paths)
        self.expect = expect
        self._read_array = read_array
        self._known: dict[str, _Read] = {}
        self._listings = Listings()
        #: directories read (not reused) by the last refresh
        self.reread = 0

    def _directories(self, problems: list[str]) -> list[str]:
        attempted: list[str] = []
        found, walk_problems = find_artifact_dirs(
            self.paths, attempted=attempted, listings=self._listings
        )
        self._listings.forget_unwalked()
        directories = [f.path for f in found]
        directories += _alone(directories, attempted)
        if directories:  # "nothing here yet" is no problem while the suite starts
            problems += [p.line() for p in walk_problems]
        return directories

    def _read(self, directory: str, now: datetime.datetime, problems: list[str],
              slurm: SlurmLookup) -> _Read | None:
        known = self._known.get(directory)
        signature = self._signature_of(directory, known)
        if known is not None and known.stands(signature):
            return known
        if signature[0] is None and not os.path.isdir(directory):
            return None
        self.reread += 1
        try:
            data = read_data(directory)
        except (OSError, ValueError) as exc:
            problems.append(f"{directory}: {exc}")
            if known is not None:
                return known
            data = {}
        read = _Read(signature, _attempts_in(directory, now, slurm, problems), _expected(data))
        self._known[directory] = read
        return read

    def _signature_of(self, directory: str, known: _Read | None) -> tuple[object, ...]:
        # The walk knows whether the markers' folder is there (no failed stat for it), and
        # whether the directory changed: where it did not, its timings.json was not
        # replaced (stagetimer replaces it by rename) and is not looked at again.
        markers = self._listings.holds(directory, ATTEMPTS_DIR)
        return (
            known.signature[0] if known is not None and self._listings.unchanged(directory)
            else _signature(os.path.join(directory, TIMINGS_FILE)),
            _signature(os.path.join(directory, ATTEMPTS_DIR)) if markers is not False
            else None,
        )

    def refresh(self, now: datetime.datetime | None = None) -> Snapshot:
        """The suite now: every directory under the paths, its stages and the time to go."""
        now = now or datetime.datetime.now(datetime.timezone.utc)
        problems: list[str] = []
        self.reread = 0
        directories = self._directories(problems)
        arrays: dict[str, ArrayView | None] = {}
        slurm = SlurmLookup()  # Slurm asked afresh each refresh, each job once
        shown = []
        for directory in directories:
            read = self._read(directory, now, problems, slurm)
            if read is None:
                continue  # removed since the walk: said below
            shown.append(self._progress(directory, read, now, arrays, problems))
        self._forget_gone({d.path for d in shown}, problems)
        stages = [s for d in shown for s in d.stages]
        return Snapshot(now, tuple(shown), suite_eta(stages), tuple(problems),
                        _left_out(shown))

    def _forget_gone(self, shown: set[str], problems: list[str]) -> None:
        """Forget the directories read before and not ``shown`` now, saying so."""
        for gone in sorted(set(self._known) - shown):
            problems.append(f"{gone}: no longer there (removed while watched)")
            del self._known[gone]

    def _progress(self, directory: str, read: _Read, now: datetime.datetime,
                  arrays: dict[str, ArrayView | None], problems: list[str],
                  ) -> DirectoryProgress:
        """A directory's progress now: the last one drawn moved to ``now`` where nothing it
        was drawn from changed, else drawn afresh (and kept once everything is done)."""
        if read.complete is not None:
            return read.complete
        array = self._array(_array_id(read.attempts), arrays, problems)
        inputs = (self.expect, array)
        if read.drawn is not None and read.drawn[0] == inputs and not read.live:
            return _moved_on(read.drawn[1], now)
        progress = directory_progress(
            directory, read.attempts, now, expected=read.expected,
            expect=self.expect, array=array,
        )
        read.drawn = (inputs, progress)
        if _done(progress):
            read.complete = progress
        return progress

    def _array(self, array_id: str | None, arrays: dict[str, ArrayView | None],
               problems: list[str]) -> ArrayView | None:
        """The array ``array_id`` (None: none), read once a refresh (``arrays``)."""
        if array_id is None:
            return None
        if array_id not in arrays:
            arrays[array_id] = self._ask_array(array_id, problems)
        return arrays[array_id]

    def _ask_array(self, array_id: str, problems: list[str]) -> ArrayView | None:
        try:
            return self._read_array(array_id)
        except ArrayUnreadable as exc:
            problems.append(f"slurm array {array_id}: {exc}")
            return None
