"""Slurm's own view of a job: its state, start, end and restarts, asked of the cluster.

``scontrol show job`` answers for a job slurmctld still holds: a pending or running job,
and one that ended up to ``MinJobAge`` seconds ago (slurm.conf(5), 300 by default).
``sacct`` answers later, where accounting is on (slurmdbd); it is asked only when
``scontrol`` no longer knows the job. Each command runs with a time limit and with
``TZ=UTC`` (Slurm prints times in the local zone, without one). A command that is
missing, fails, hangs past its limit or prints what does not parse says nothing:
never a crash, never a guess.
"""

from __future__ import annotations

import datetime
import os
import re

import attrs

from stagetimer._system.command import CommandUnavailable, run_bounded

__all__ = ["JobView", "SlurmLookup", "job_cause", "parse_sacct", "parse_scontrol"]

#: Seconds one Slurm command may take before it is taken to say nothing.
COMMAND_TIMEOUT = 10.0
#: What a job state says of the processes of an attempt that did not finish.
_CAUSES = {
    "PREEMPTED": "preempted",
    "TIMEOUT": "timeout",
    "DEADLINE": "timeout",
    "OUT_OF_MEMORY": "out_of_memory",
    "NODE_FAIL": "node_fail",
    "BOOT_FAIL": "node_fail",
    "CANCELLED": "cancelled",
    "FAILED": "killed",
    "COMPLETED": "killed",
    "REQUEUED": "killed",
}
#: States in which Slurm ends a job by signalling its processes at the end time (and
#: SIGKILL after KillWait): they lived until then.
_SIGNALLED = frozenset({"PREEMPTED", "TIMEOUT", "DEADLINE", "CANCELLED"})
_RUNNING = frozenset({"RUNNING", "COMPLETING", "SUSPENDED", "CONFIGURING", "SIGNALING",
                      "STAGE_OUT", "RESIZING", "STOPPED"})
_SECOND = datetime.timedelta(seconds=1)
_JOB_ID = re.compile(r"[0-9]{1,12}(_[0-9]{1,9})?")


def job_cause(state: str) -> str | None:
    """The cause of a killed attempt a job's final state gives; None while it runs."""
    return _CAUSES.get(state)


@attrs.frozen
class JobView:
    """What Slurm says of one job."""

    job_id: str
    #: the first word of the state (``CANCELLED by 0`` → ``CANCELLED``)
    state: str
    start: datetime.datetime | None = None
    end: datetime.datetime | None = None
    #: how often the job was requeued (``scontrol``'s ``Restarts``); None where unsaid
    restarts: int | None = None
    uid: int | None = None
    #: the cause an earlier run of a requeued job ended with (``sacct --duplicates``)
    requeue_cause: str | None = None
    #: ``KillWait``: seconds between Slurm's SIGTERM and its SIGKILL
    kill_wait: float | None = None
    source: str = "scontrol"

    @property
    def running(self) -> bool:
        return self.state in _RUNNING

    def killed_between(self) -> tuple[datetime.datetime | None, datetime.datetime | None]:
        """When the job's processes ended: a signalled job's at its end time (within
        KillWait after), any other's at or before it. Slurm prints whole seconds,
        truncated: an end printed 14:02:03 lies before 14:02:04."""
        if self.end is None:
            return None, None
        if self.state in _SIGNALLED:
            wait = self.kill_wait
            upper = None if wait is None else self.end + datetime.timedelta(seconds=wait + 1)
            return self.end, upper
        return None, self.end + _SECOND

    @property
    def started_by(self) -> datetime.datetime | None:
        """The latest the job's current run can have started (its start, a whole second)."""
        return None if self.start is None else self.start + _SECOND


def _time(text: str | None) -> datetime.datetime | None:
    """``2026-12-04T04:10:00`` printed under ``TZ=UTC``; None for ``Unknown``/``None``."""
    if not text or not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", text):
        return None
    try:
        return datetime.datetime.fromisoformat(text).replace(tzinfo=datetime.timezone.utc)
    except ValueError:
        return None


def _uid(text: str | None) -> int | None:
    """``root(0)`` or ``0`` → 0."""
    if text is None:
        return None
    found = re.fullmatch(r"(?:.*\()?(\d{1,10})\)?", text)
    return int(found.group(1)) if found else None


def parse_scontrol(job_id: str, text: str) -> JobView | None:
    """``scontrol -o show job JOB`` (one line of ``Key=Value``); None unless it is the
    view of ``job_id`` with a state."""
    line = next((ln for ln in text.splitlines() if ln.startswith("JobId=")), None)
    if line is None:
        return None
    fields = dict(re.findall(r"(?:^|\s)([A-Za-z]+)=(\S*)", line))
    state = fields.get("JobState", "")
    if not _is_view_of(fields, job_id) or not re.fullmatch(r"[A-Z_]{2,30}", state):
        return None
    restarts = fields.get("Restarts", "")
    return JobView(
        job_id, state, _time(fields.get("StartTime")), _time(fields.get("EndTime")),
        int(restarts) if restarts.isdigit() else None, _uid(fields.get("UserId")),
    )


def _is_view_of(fields: dict[str, str], job_id: str) -> bool:
    """Whether ``scontrol``'s fields are of ``job_id``: the job, or the array's task."""
    if fields.get("JobId") == job_id.split("_")[0]:
        return True
    return job_id == f"{fields.get('ArrayJobId')}_{fields.get('ArrayTaskId')}"


def _sacct_record(job: str, line: str,
                  ) -> tuple[str, datetime.datetime | None, datetime.datetime | None,
                             int | None] | None:
    """``(state, start, end, uid)`` of one line of ``sacct`` about ``job``, or None."""
    parts = line.split("|")
    if len(parts) != 5 or parts[0] != job:
        return None
    state = parts[1].split(" ")[0]
    if not re.fullmatch(r"[A-Z_]{2,30}", state):
        return None
    return state, _time(parts[2]), _time(parts[3]), _uid(parts[4])


def parse_sacct(job_id: str, text: str) -> JobView | None:
    """``sacct -j JOB -X -D -n -P -o JobIDRaw,State,Start,End,UID``: the last record is
    the job's view; an earlier one (a requeued run) gives ``requeue_cause``."""
    job = job_id.split("_")[0]
    records = [r for line in text.splitlines() if (r := _sacct_record(job, line)) is not None]
    if not records:
        return None
    state, start, end, uid = records[-1]
    earlier = [job_cause(r[0]) for r in records[:-1]]
    return JobView(job_id, state, start, end, len(earlier), uid,
                   requeue_cause=_requeue_cause(earlier), source="sacct")


def _requeue_cause(earlier: list[str | None]) -> str | None:
    """Why the job was requeued: the last cause its ``earlier`` runs' states name
    (``killed`` where none names more); None where it has no earlier run."""
    named = next((c for c in reversed(earlier) if c not in (None, "killed")), None)
    return named or ("killed" if earlier else None)


def _accounted(job_id: str, view: JobView | None) -> JobView | None:
    """``view`` (``scontrol``'s, None where it has none) with what ``sacct`` adds: the
    cause of a requeue, or the whole view of a job ``scontrol`` no longer holds."""
    fields = "JobIDRaw,State,Start,End,UID"
    text = _run(["sacct", "-j", job_id, "-X", "-D", "-n", "-P", "-o", fields])
    accounted = None if text is None else parse_sacct(job_id, text)
    if accounted is None:
        return view
    if view is None:
        return accounted
    return attrs.evolve(view, requeue_cause=accounted.requeue_cause)


def _run(command: list[str]) -> str | None:
    """The standard output of a Slurm command, or None when it cannot say."""
    environ = dict(os.environ, TZ="UTC", SLURM_TIME_FORMAT="standard")
    try:
        code, out, _ = run_bounded(command, COMMAND_TIMEOUT, env=environ)
    except CommandUnavailable:
        return None
    return out.decode("utf-8", "replace") if code == 0 else None


class SlurmLookup:
    """Slurm's views of the jobs asked about, each asked once per lookup."""

    def __init__(self) -> None:
        self._views: dict[str, JobView | None] = {}
        self._kill_wait: list[float | None] = []

    def __call__(self, job_id: str) -> JobView | None:
        if job_id not in self._views:
            self._views[job_id] = self._ask(job_id)
        return self._views[job_id]

    def _ask(self, job_id: str) -> JobView | None:
        if not _JOB_ID.fullmatch(job_id):
            return None
        text = _run(["scontrol", "-o", "show", "job", job_id])
        view = None if text is None else parse_scontrol(job_id, text)
        if view is None or view.restarts:
            view = _accounted(job_id, view)
        if view is not None and view.state in _SIGNALLED:
            view = attrs.evolve(view, kill_wait=self.kill_wait())
        return view

    def kill_wait(self) -> float | None:
        """``KillWait`` of ``scontrol show config``, asked once."""
        if not self._kill_wait:
            text = _run(["scontrol", "show", "config"]) or ""
            found = re.search(r"^KillWait\s*=\s*(\d{1,6}) sec", text, re.MULTILINE)
            self._kill_wait.append(float(found.group(1)) if found else None)
        return self._kill_wait[0]
