"""``stagetimer.attempts``: each entry into a recorded stage and what became of it,
decided from evidence. Real processes write, fail, die and run; markers a process of
this machine cannot leave (another host, another boot) are planted in the writers'
format."""

from __future__ import annotations

import datetime
import os
import signal
from pathlib import Path

import pytest
from helpers.attempt_markers import KILLED, iso, marker, plant, start_running, utc, write_timings
from helpers.process_life import run_script

import stagetimer
from stagetimer import Attempt, attempts

NOW = datetime.datetime.now(datetime.timezone.utc)

FINISH_AND_FAIL = """
import signal, sys
from stagetimer import Recorder, stage
rec = Recorder(sys.argv[1])
with stage("prepare", run_idx=0, recorder=rec):
    pass
try:
    with stage("train", run_idx=0, label="lr", recorder=rec):
        raise ValueError("secret 1234")
except ValueError:
    pass
try:
    with stage("train", run_idx=1, recorder=rec):
        raise KeyboardInterrupt
except KeyboardInterrupt:
    pass
"""


def by_stage(found: list[Attempt]) -> dict[tuple[str, int | None], Attempt]:
    return {(a.stage, a.run_idx): a for a in found}


def test_finished_and_failed_attempts_come_from_the_run_and_the_failed_marker(
    tmp_path: Path,
) -> None:
    run_script(FINISH_AND_FAIL, tmp_path)
    found = by_stage(attempts(tmp_path))

    done, raised, interrupted = found["prepare", 0], found["train", 0], found["train", 1]
    assert ("finished", None, None) == (done.state, done.cause, done.ended_between)
    assert done.attempt_id is not None and len(done.attempt_id) == 32
    assert done.seconds is not None and done.seconds >= 0
    assert ("failed", "raised", "ValueError", "lr") == (
        raised.state, raised.cause, raised.exception, raised.label)
    assert "secret" not in raised.evidence
    assert ("failed", "interrupted", "KeyboardInterrupt") == (
        interrupted.state, interrupted.cause, interrupted.exception)
    assert raised.seconds is not None and raised.directory == str(tmp_path)


def test_a_run_written_without_a_marker_is_a_finished_attempt_without_an_id(
    tmp_path: Path,
) -> None:
    write_timings(tmp_path, {"old": [{"seconds": 2.0, "started_at": "2026-01-02T03:04:05.678Z"}]})

    (found,) = attempts(tmp_path)

    assert (None, "finished", 2.0) == (found.attempt_id, found.state, found.seconds)
    assert utc(2026, 1, 2, 3, 4, 5) + datetime.timedelta(milliseconds=678) == found.started_at


def test_a_process_killed_in_its_stage_is_killed_and_ended_before_it_was_looked_at(
    tmp_path: Path,
) -> None:
    done = run_script(KILLED, tmp_path, "train", check=False)
    assert -signal.SIGKILL == done.returncode
    before = datetime.datetime.now(datetime.timezone.utc)

    (found,) = attempts(tmp_path)

    assert ("killed", "killed") == (found.state, found.cause)
    assert found.ended_between is not None and found.started_at is not None
    low, high = found.ended_between
    assert low is not None and high is None  # gone by now: no upper end that grows
    assert found.started_at <= low <= before
    assert "on this machine is gone" in found.evidence


def test_a_process_still_in_its_stage_is_running_and_killed_once_it_is_gone(
    tmp_path: Path,
) -> None:
    child = start_running(tmp_path)
    try:
        (running,) = attempts(tmp_path)
    finally:
        child.kill()
        child.wait(timeout=30)
    (killed,) = attempts(tmp_path)

    assert ("running", None, None) == (running.state, running.cause, running.ended_between)
    assert f"process {child.pid} runs" in running.evidence
    assert ("killed", running.attempt_id) == (killed.state, killed.attempt_id)


def test_a_directory_whose_first_stage_runs_holds_only_markers_and_is_found(
    tmp_path: Path,
) -> None:
    art = tmp_path / "suite" / "first"
    child = start_running(art)
    try:
        found = attempts(tmp_path / "suite")
    finally:
        child.kill()
        child.wait(timeout=30)

    assert not (art / "timings.json").exists()
    assert [("running", str(art))] == [(a.state, a.directory) for a in found]


def test_a_leftover_marker_of_a_saved_run_counts_once_as_finished(tmp_path: Path) -> None:
    left = marker("train", writer={"pid": 999_999_999})
    write_timings(tmp_path, {"train": [
        {"seconds": 1.5, "run_idx": 0, "started_at": left["started_at"],
         "attempt_id": left["attempt_id"]},
    ]})
    plant(tmp_path, left)

    found = attempts(tmp_path)

    assert [(left["attempt_id"], "finished", 1.5)] == [
        (a.attempt_id, a.state, a.seconds) for a in found]


def test_a_live_pid_with_another_start_time_is_a_reused_pid_and_the_writer_killed(
    tmp_path: Path,
) -> None:
    # Our own pid, alive, but another process's start time: the writer is gone.
    plant(tmp_path, marker(writer={"start_time": 1}))

    (found,) = attempts(tmp_path)

    assert "killed" == found.state and f"process {os.getpid()}" in found.evidence


def test_a_marker_of_this_host_name_and_another_boot_is_not_decided_by_a_pid(
    tmp_path: Path,
) -> None:
    # A reboot, or another node given the same name: this machine's pids prove nothing.
    plant(tmp_path, marker(writer={"boot_id": "00000000-0000-0000-0000-000000000000"}))

    (found,) = attempts(tmp_path, now=NOW)

    assert ("unknown", None) == (found.state, found.cause)


def test_a_marker_of_another_machine_without_other_evidence_is_unknown(tmp_path: Path) -> None:
    plant(tmp_path, marker(writer={"host": "node-elsewhere", "boot_id": "b" * 36}))

    (found,) = attempts(tmp_path, now=NOW)

    assert ("unknown", None, None) == (found.state, found.cause, found.ended_between)
    assert "no evidence" in found.evidence


def test_a_later_attempt_of_the_same_run_proves_the_earlier_one_killed_before_it(
    tmp_path: Path,
) -> None:
    elsewhere = {"host": "node-elsewhere", "boot_id": "b" * 36}
    first, second = utc(2026, 3, 1, 10, 0, 0), utc(2026, 3, 1, 12, 0, 0)
    plant(tmp_path, marker(started_at=iso(first), writer=elsewhere), mtime=first.timestamp())
    write_timings(tmp_path, {"train": [{"seconds": 60.0, "run_idx": 0, "started_at": iso(second)}]})
    other_rank = marker(started_at=iso(first), writer=elsewhere, rank=1)
    plant(tmp_path, other_rank, mtime=first.timestamp())

    found = {(a.state, a.rank): a for a in attempts(tmp_path, now=NOW)}

    killed = found["killed", None]
    assert (first, second) == killed.ended_between
    assert "later attempt" in killed.evidence
    assert ("unknown", 1) == (found["unknown", 1].state, found["unknown", 1].rank)


@pytest.mark.parametrize(("age", "state"), [(3600.0, "killed"), (5.0, "running")])
def test_heartbeats_decide_an_attempt_of_another_machine(
    tmp_path: Path, age: float, state: str
) -> None:
    started = NOW - datetime.timedelta(hours=2)
    beat = (NOW - datetime.timedelta(seconds=age)).timestamp()
    plant(tmp_path, marker(started_at=iso(started), heartbeat=10,
                           writer={"host": "node-elsewhere", "boot_id": "b" * 36}), mtime=beat)

    (found,) = attempts(tmp_path, now=NOW)

    assert state == found.state
    if state == "killed":
        last = datetime.datetime.fromtimestamp(beat, datetime.timezone.utc)
        assert (last, last + datetime.timedelta(seconds=10)) == found.ended_between
        assert "no heartbeat since" in found.evidence


def test_a_marker_that_lies_about_its_writer_is_trusted_for_nothing(tmp_path: Path) -> None:
    # Names a writer of another uid than the file's owner: even a live pid proves nothing.
    plant(tmp_path, marker(writer={"uid": os.geteuid() + 1}))

    (found,) = attempts(tmp_path)

    assert ("unknown", None) == (found.state, found.cause)
    assert "nothing it says is trusted" in found.evidence


@pytest.mark.root
def test_another_users_marker_naming_a_live_process_of_ours_is_not_running(
    tmp_path: Path,
) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to give a file to another user")
    path = plant(tmp_path, marker(writer={"uid": 54321}))  # our pid, start time: alive
    os.chown(path, 54321, 54321)

    (found,) = attempts(tmp_path)

    assert "running" != found.state
    assert "another user" in found.evidence


def test_now_must_be_an_aware_datetime(tmp_path: Path) -> None:
    write_timings(tmp_path, {})
    with pytest.raises(TypeError, match="aware datetime"):
        attempts(tmp_path, now=datetime.datetime(2026, 1, 1))


def test_attempts_and_attempt_are_exported_lazily() -> None:
    import subprocess
    import sys

    code = ("import sys, stagetimer; "
            "before = 'stagetimer._analysis.attempts.scan' in sys.modules; "
            "stagetimer.attempts; "
            "print(before, 'stagetimer._analysis.attempts.scan' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert "False True\n" == out
    assert {"attempts", "Attempt"} <= set(stagetimer.__all__)


def test_a_killed_attempt_started_after_now_is_still_bounded_by_its_start(
    tmp_path: Path,
) -> None:
    # A clock behind the writer's: the interval never ends before the attempt began.
    done = run_script(KILLED, tmp_path, "train", check=False)
    assert done.returncode != 0
    past = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=1)

    (found,) = attempts(tmp_path, now=past)

    assert found.ended_between is not None and found.started_at is not None
    low, high = found.ended_between
    assert low is not None and found.started_at <= low
    assert high is None  # the moment of reading bounds nothing


def test_a_writer_of_another_pid_namespace_is_not_looked_up_here(tmp_path: Path) -> None:
    # Same host and boot, another container's pids: our pid of that number says nothing.
    plant(tmp_path, marker(writer={"pidns": 1}))

    (found,) = attempts(tmp_path, now=NOW)

    assert ("unknown", None) == (found.state, found.cause)
