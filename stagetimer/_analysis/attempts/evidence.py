"""What became of an attempt whose marker says neither finished nor failed: decided from
evidence, strongest first, never guessed.

1. The same machine (same host and boot, same pid namespace where recorded): the
   writer's pid alive with the start time it recorded → *running*; else *killed*.
2. Slurm's own view of the job the marker names (``slurm_jobs``): a job that ended in
   ``PREEMPTED``, ``TIMEOUT``, ``OUT_OF_MEMORY``, ``NODE_FAIL``, ``CANCELLED``,
   ``FAILED`` (or that was requeued since the attempt started) → *killed*, and the cause.
3. Heartbeats: a writer asked to beat every S seconds refreshes its marker's mtime; no
   beat for 3 S → *killed*, ended within [last beat, last beat + S]; a recent beat →
   *running*.
4. A later attempt of the same run (stage, run_idx, label, rank) → *killed*, before the
   later one started.
5. Otherwise *unknown*.

A killed attempt's end is the tightest interval all the evidence allows. Its lower end
is the last sign of life of its writer (``signs_of_life``): its start, its last beat,
anything the same process wrote later in the directories read. Its upper end is the
earliest evidence of its end (Slurm's end, a missed beat, a later attempt of the same
run), and None where the only bound would be the moment of reading: a process found
gone says it ended, not when, and a bound that grew each time it is read would be none.
A marker is trusted only as far as its file proves (``marker_read.distrust``: writable
by others, or naming a writer other than its owner): an untrusted marker decides
nothing, neither for itself nor as a later attempt. Under ``/proc`` mounted
``hidepid``, another user's pid that runs is evidence 1 undecided (its start time is
hidden), and the chain goes on.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Callable
from typing import Any

import attrs

from stagetimer._analysis.attempts.signs_of_life import Sign
from stagetimer._analysis.slurm_jobs import JobView, job_cause
from stagetimer._store.marker_read import Marker, heartbeat_of
from stagetimer._store.processes import UNRECORDED, is_pid, liveness, where

__all__ = ["Verdict", "judge", "one_line", "untrusted"]

_Bound = datetime.datetime | None
#: How many missed beats make a writer dead.
MISSED_BEATS = 3


@attrs.frozen
class Verdict:
    """The state of an attempt left unfinished, its cause and end, and why."""

    state: str
    cause: str | None
    ended_between: tuple[_Bound, _Bound] | None
    evidence: str


@attrs.frozen
class _Clue:
    """What one kind of evidence says: a state or nothing, bounds of the end, a line."""

    state: str | None
    line: str
    lower: _Bound = None
    upper: _Bound = None
    cause: str | None = None


def one_line(text: str) -> str:
    """``text`` on one line: each character that would break or hide a line (a newline,
    a carriage return, a tab, any other control or separator character) written as its
    Python escape (``\\n``, ``\\x1b``, ``\\u2028``)."""
    if text.isprintable():
        return text
    return "".join(
        c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text
    )


def _hhmm(moment: datetime.datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def _process_uid(pid: int) -> int | None:
    """The owner of ``/proc/<pid>``: the process's effective uid (proc(5))."""
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def _process_here(writer: object) -> tuple[int, int, str, str, Any] | None:
    """``(pid, start time, host, boot id, pid namespace)`` of the writer the marker
    names, where that process would be on this machine and in this pid namespace."""
    if not isinstance(writer, dict):
        return None
    place = _place_here(writer)
    pid, started = writer.get("pid"), writer.get("start_time")
    if place is None or not is_pid(pid) or type(started) is not int:
        return None  # a pid alone is no process: pids are reused
    return pid, started, *place


def _place_here(writer: dict[str, Any]) -> tuple[str, str, Any] | None:
    """``(host, boot id, pid namespace)`` the writer names, where they are this machine's
    boot and this pid namespace."""
    pidns = writer.get("pidns", UNRECORDED)
    host, boot = writer.get("host"), writer.get("boot_id")
    if not isinstance(host, str) or not isinstance(boot, str):
        return None
    if where(host=host, boot=boot, pidns=pidns) is not None:
        # Another boot under this host name may be a reboot or another machine of the
        # same name, and another pid namespace's pids are not ours: no pid here decides.
        return None
    return host, boot, pidns


def _same_machine(marker: Marker) -> _Clue | None:
    """Evidence 1: the writer's process on this machine."""
    process = _process_here(marker.data.get("writer"))
    if process is None:
        return None
    pid, started, host, boot, pidns = process
    state = liveness(pid, started, host=host, boot=boot, pidns=pidns)
    if state == "hidden":
        # /proc hides another user's process (hidepid): it runs, but whether it is
        # the writer (its start time) is unknown. Undecided: the next evidence decides.
        return _Clue(None, f"process {pid} runs as another user, hidden by /proc's hidepid")
    if state == "live":
        if _process_uid(pid) not in (marker.uid, None):
            return _Clue(None, f"process {pid} runs, but as another user than the marker's")
        return _Clue("running", f"its process {pid} runs on this machine")
    # Gone by now says nothing of when: no upper end (one that grew each read is none).
    return _Clue("killed", f"its process {pid} on this machine is gone")


def _slurm(view: JobView, job: dict[str, Any], marker: Marker) -> _Clue | None:
    """Evidence 2: Slurm's view of the job the marker names."""
    if view.uid is not None and view.uid != marker.uid:
        return _Clue(None, f"Slurm job {view.job_id} belongs to another user than the marker")
    requeued = _requeued(view, _restarts(job), marker)
    if requeued is not None:
        return requeued
    ended = job_cause(view.state)
    if ended is not None:
        return _ended(view, ended)
    if view.running:
        return _Clue("running", f"Slurm job {view.job_id} is {view.state}")
    return None


def _ended(view: JobView, cause: str) -> _Clue:
    """Slurm says the job ended (``cause``): when, as closely as it says."""
    end = f" at {_hhmm(view.end)}" if view.end is not None else ""
    lower, upper = view.killed_between()
    return _Clue("killed", f"Slurm job {view.job_id} is {view.state}{end}",
                 lower=lower, upper=upper, cause=cause)


def _requeued(view: JobView, recorded: int, marker: Marker) -> _Clue | None:
    """Slurm restarted the job since the marker (which recorded ``recorded`` restarts)."""
    if view.restarts is None or view.restarts <= recorded:
        return None
    later = view.started_by
    upper = later if later is not None and later > marker.started_at else None
    cause = view.requeue_cause or "killed"
    return _Clue("killed", f"Slurm requeued job {view.job_id} since (restart "
                 f"{recorded} -> {view.restarts})", upper=upper, cause=cause)


def _restarts(job: dict[str, Any]) -> int:
    """The restarts of its job the marker recorded (0 where it says none)."""
    restarts = job.get("restart_count")
    try:
        return int(restarts) if restarts is not None else 0
    except (TypeError, ValueError):
        return 0


def _heartbeat(marker: Marker, now: datetime.datetime) -> _Clue | None:
    """Evidence 3: the marker's mtime, refreshed every ``heartbeat`` seconds."""
    beat = heartbeat_of(marker)
    if beat is None:
        return None
    every = datetime.timedelta(seconds=beat)
    last = marker.mtime
    if now - last > MISSED_BEATS * every:
        return _Clue("killed", f"no heartbeat since {_hhmm(last)} (every {beat:g} s)",
                     lower=last, upper=last + every)
    return _Clue("running", f"last heartbeat {(now - last).total_seconds():.0f} s ago")


def untrusted(marker: Marker) -> Verdict:
    """The verdict on a marker whose content is not trusted: ``unknown``, whatever it
    says (its outcome included)."""
    return Verdict("unknown", None, None, f"the marker {marker.distrust}")


def judge(
    marker: Marker,
    now: datetime.datetime,
    slurm: Callable[[str], JobView | None],
    later: datetime.datetime | None,
    alive: Sign | None = None,
) -> Verdict:
    """The verdict on an unfinished, unfailed marker. ``slurm`` looks a job id up (None:
    Slurm does not say); ``later``: when the next attempt of the same run started;
    ``alive``: the last sign of life of its writer past its start (``SignsOfLife``)."""
    if marker.distrust is not None:
        return untrusted(marker)
    same = _same_machine(marker)
    if same is not None and same.state == "running":
        return Verdict("running", None, None, same.line)  # nothing else to ask
    clues = [clue for clue in (same, _asked(marker.data.get("job"), slurm, marker),
                               _heartbeat(marker, now), _later(later)) if clue is not None]
    return _decided(marker, clues, alive)


def _decided(marker: Marker, clues: list[_Clue], alive: Sign | None) -> Verdict:
    """The verdict of the first clue that decides (killed: from every clue that says so)."""
    decided = [c for c in clues if c.state is not None]
    if not decided:
        return _undecided(clues)
    first = decided[0]
    if first.state != "killed":
        return Verdict(first.state or "unknown", None, None, first.line)
    return _killed(marker, [c for c in decided if c.state == "killed"], alive)


def _undecided(clues: list[_Clue]) -> Verdict:
    """No clue decides: ``unknown``, with what each said."""
    lines = "; ".join(c.line for c in clues)
    return Verdict("unknown", None, None, lines or "no evidence either way (no process "
                   "on this machine, no scheduler's view, no heartbeat, no later attempt)")


def _asked(job: object, slurm: Callable[[str], JobView | None], marker: Marker,
           ) -> _Clue | None:
    """Slurm's evidence on the job the marker names, if it names a Slurm job."""
    if not isinstance(job, dict) or job.get("scheduler") != "slurm":
        return None
    job_id = job.get("job_id")
    if not isinstance(job_id, str):
        return None
    view = slurm(job_id)
    return None if view is None else _slurm(view, job, marker)


def _later(later: datetime.datetime | None) -> _Clue | None:
    """Evidence 4: a later attempt of the same run started."""
    if later is None:
        return None
    return _Clue("killed", f"a later attempt of the same run started at {_hhmm(later)}",
                 upper=later)


def _bounds(marker: Marker, clues: list[_Clue]) -> tuple[datetime.datetime, _Bound, str]:
    """The tightest interval the ``clues`` of a killed attempt give its end, and the line
    of the strongest clue (which says so where the clues disagree)."""
    lower = max([marker.started_at, *(c.lower for c in clues if c.lower is not None)])
    upper = min((c.upper for c in clues if c.upper is not None), default=None)
    if upper is None or upper >= lower:
        return lower, upper, clues[0].line
    return _strongest_bounds(marker, clues[0])


def _strongest_bounds(marker: Marker, clue: _Clue) -> tuple[datetime.datetime, _Bound, str]:
    """Where the evidence disagrees (the clocks of two machines, or ``now`` before the
    start): the strongest ``clue`` bounds the end alone, and never before the start."""
    lower = max(marker.started_at, clue.lower or marker.started_at)
    if clue.upper is not None and clue.upper < lower:
        return lower, None, clue.line + " (but that is before it started: clocks " \
            "disagree, no upper end)"
    return lower, clue.upper, clue.line


def _killed(marker: Marker, clues: list[_Clue], alive: Sign | None = None) -> Verdict:
    """A killed attempt: the cause Slurm names (else ``killed``), the tightest interval."""
    lower, upper, line = _bounds(marker, clues)
    cause = next((c.cause for c in clues if c.cause is not None), "killed")
    line = _with_others(line, clues)
    if alive is not None and alive.moment > lower:
        lower, line = _alive_later(alive, upper, line)
    return Verdict("killed", cause, (lower, upper), line)


def _with_others(line: str, clues: list[_Clue]) -> str:
    """The strongest clue's ``line``, with the next two clues that name a cause or an end."""
    others = [c.line for c in clues[1:] if c.cause is not None or c.upper is not None]
    return line + "; " + "; ".join(others[:2]) if others else line


def _alive_later(alive: Sign, upper: _Bound, line: str) -> tuple[datetime.datetime, str]:
    """Its writer lived past the start the evidence gives: the attempt ended no earlier
    (but no later than the evidence of its end: a writer alive past it had left this
    attempt by then)."""
    lower = alive.moment if upper is None else min(alive.moment, upper)
    return lower, line + f"; its process was alive at {_hhmm(alive.moment)} ({alive.what})"
