"""Slurm's view of a job: what ``scontrol`` and ``sacct`` print, parsed; and a command
that is missing, fails, hangs or prints nonsense says nothing (never a crash, never a
hang). The lines are ``scontrol -o show job`` as Slurm 22.05 printed them on the test
cluster (``tests/test_slurm_attempts.py``), the state and times varied."""

from __future__ import annotations

import datetime
import os
import time
from pathlib import Path

import pytest

from stagetimer._analysis import slurm_jobs
from stagetimer._analysis.slurm_jobs import SlurmLookup, job_cause, parse_sacct, parse_scontrol

LINE = (
    "JobId=3 JobName=job.sh UserId=root(0) GroupId=root(0) MCS_label=N/A "
    "Priority=4294901757 Nice=0 Account=(null) QOS=(null) JobState=RUNNING Reason=None "
    "Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 "
    "RunTime=00:00:02 TimeLimit=UNLIMITED TimeMin=N/A SubmitTime=2026-12-04T04:22:48 "
    "EligibleTime=2026-12-04T04:22:48 AccrueTime=2026-12-04T04:22:48 "
    "StartTime=2026-12-04T04:23:09 EndTime=Unknown Deadline=N/A SuspendTime=None "
    "SecsPreSuspend=0 LastSchedEval=2026-12-04T04:23:09 Scheduler=Main Partition=test "
    "AllocNode:Sid=localhost:2985 ReqNodeList=(null) ExcNodeList=(null) NodeList=vm "
    "BatchHost=vm NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* "
    "TRES=cpu=1,mem=200M,node=1,billing=1 Command=/tmp/slx/run/job.sh WorkDir=/tmp/slx/run "
    "StdErr=/tmp/slx/run/out3-3 StdIn=/dev/null StdOut=/tmp/slx/run/out3-3 Power= \n"
)


def utc(*args: int) -> datetime.datetime:
    return datetime.datetime(*args, tzinfo=datetime.timezone.utc)  # type: ignore[misc]


def test_a_running_job_is_running() -> None:
    view = parse_scontrol("3", LINE)

    assert view is not None
    assert ("RUNNING", True, 0, 0) == (view.state, view.running, view.restarts, view.uid)
    assert (utc(2026, 12, 4, 4, 23, 9), None) == (view.start, view.end)


@pytest.mark.parametrize(("state", "cause", "signalled"), [
    ("TIMEOUT", "timeout", True),
    ("CANCELLED", "cancelled", True),
    ("PREEMPTED", "preempted", True),
    ("OUT_OF_MEMORY", "out_of_memory", False),
    ("NODE_FAIL", "node_fail", False),
    ("FAILED", "killed", False),
])
def test_an_ended_job_gives_the_cause_and_when_its_processes_ended(
    state: str, cause: str, signalled: bool
) -> None:
    text = LINE.replace("JobState=RUNNING", f"JobState={state}").replace(
        "EndTime=Unknown", "EndTime=2026-12-04T05:00:00")

    view = parse_scontrol("3", text)
    assert view is not None

    assert (state, cause, False) == (view.state, job_cause(view.state), view.running)
    end = utc(2026, 12, 4, 5)
    if signalled:
        assert (end, None) == view.killed_between()  # KillWait not known: no upper end
    else:
        # Whole seconds, truncated: it ended before the next second.
        assert (None, end + datetime.timedelta(seconds=1)) == view.killed_between()


def test_a_signalled_job_ended_by_kill_wait_after_its_end() -> None:
    import attrs

    view = parse_scontrol("3", LINE.replace("JobState=RUNNING", "JobState=TIMEOUT").replace(
        "EndTime=Unknown", "EndTime=2026-12-04T05:00:00"))
    assert view is not None

    waited = attrs.evolve(view, kill_wait=30.0)

    assert (utc(2026, 12, 4, 5), utc(2026, 12, 4, 5, 0, 31)) == waited.killed_between()


@pytest.mark.parametrize("text", [
    "", "slurm_load_jobs error: Invalid job id specified\n", "JobId=4 JobState=RUNNING\n",
    "JobId=3 JobState=running; rm -rf /\n", "JobId=3\n", "\x00\xff" * 100,
])
def test_output_that_is_not_the_jobs_view_says_nothing(text: str) -> None:
    assert parse_scontrol("3", text) is None


def test_sacct_gives_the_last_record_and_what_ended_the_requeued_one() -> None:
    text = ("42|PREEMPTED|2026-12-04T01:00:00|2026-12-04T02:00:00|1000\n"
            "42|CANCELLED by 1000|2026-12-04T02:05:00|2026-12-04T02:06:00|1000\n")

    view = parse_sacct("42", text)

    assert view is not None
    assert ("CANCELLED", 1, 1000, "preempted") == (
        view.state, view.restarts, view.uid, view.requeue_cause)
    assert utc(2026, 12, 4, 2, 6) == view.end


def _command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> None:
    """``scontrol`` and ``sacct`` on PATH as scripts running ``body`` (and nothing else)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("scontrol", "sacct"):
        path = bin_dir / name
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setattr(slurm_jobs, "COMMAND_TIMEOUT", 1.0)


@pytest.mark.parametrize("body", [
    "exec sleep 60",  # hangs
    "setsid sleep 60 & exit 0",  # ends, a child out of its session holding the pipe
    "echo 'JobId=3 JobState=TIMEOUT EndTime=yesterday'; exit 0",  # nonsense
    "echo 'slurm_load_jobs error: Unable to contact slurm controller' >&2; exit 1",
    "head -c 100000 /dev/urandom",  # binary
])
def test_a_slurm_command_that_hangs_fails_or_talks_nonsense_says_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str
) -> None:
    _command(tmp_path, monkeypatch, body)
    began = time.monotonic()

    view = SlurmLookup()("3")

    assert view is None or (view.end is None and view.state == "TIMEOUT")
    assert time.monotonic() - began < 10  # two commands, a second each at most


def test_without_slurm_commands_there_is_no_view(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", os.devnull)

    assert SlurmLookup()("3") is None


@pytest.mark.parametrize("job_id", ["3; reboot", "-h", "3 4", "", "1" * 40])
def test_a_job_id_that_is_not_one_is_never_asked_about(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, job_id: str
) -> None:
    _command(tmp_path, monkeypatch, f"touch {tmp_path}/asked; echo 'JobId=3 JobState=RUNNING'")

    assert SlurmLookup()(job_id) is None
    assert not (tmp_path / "asked").exists()


@pytest.mark.root
def test_another_users_job_is_no_evidence_for_a_marker(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to give a marker to another user")
    from helpers.attempt_markers import marker, plant

    from stagetimer._analysis.attempts.scan import scan_attempts

    # User 54321's marker names job 3, which Slurm says is root's and ended by TIMEOUT.
    ended = parse_scontrol("3", LINE.replace("JobState=RUNNING", "JobState=TIMEOUT"))
    path = plant(tmp_path, marker(job={"scheduler": "slurm", "job_id": "3"},
                                  writer={"host": "node-elsewhere", "uid": 54321}))
    os.chown(path, 54321, 54321)

    (found,), _ = scan_attempts([tmp_path], slurm=lambda job_id: ended)

    assert ("unknown", None) == (found.state, found.cause)
    assert "belongs to another user" in found.evidence
