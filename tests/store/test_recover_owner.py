"""A rescue file's writer is a process, not a pid: host, boot and start time decide
whether it still runs (``_store/owner.py``). Real processes."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest
from helpers.rescue import dead_pid

from stagetimer._store.owner import liveness, this_process


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(["sleep", "60"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def _owner_of(pid: int) -> dict[str, object]:
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().decode().rsplit(")", 1)[1].split()
    return {**this_process(), "pid": pid, "start_time": int(fields[19])}


def test_a_running_process_with_its_start_time_is_live(sleeper: subprocess.Popen[bytes]) -> None:
    assert "live" == liveness(_owner_of(sleeper.pid))


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"start_time": 1}, "dead"),  # the pid was reused by a later process
        # a reboot, or another node given the same host name: nothing here proves it dead
        ({"boot_id": "00000000-0000-0000-0000-000000000000"}, "elsewhere"),
        ({"host": "another-node"}, "elsewhere"),  # this host cannot see it
        ({"pidns": 1}, "elsewhere"),  # a container's pid is not ours to look up
    ],
    ids=["pid reused", "other boot", "other host", "other pid namespace"],
)
def test_a_pid_alone_does_not_make_a_writer_live(
    sleeper: subprocess.Popen[bytes], change: dict[str, object], expected: str
) -> None:
    assert expected == liveness({**_owner_of(sleeper.pid), **change})


def test_an_ended_or_exited_but_unreaped_writer_is_dead() -> None:
    zombie = subprocess.Popen(["true"])
    try:
        import time

        time.sleep(0.2)  # exited, not yet waited for: a zombie
        owner = {**this_process(), "pid": zombie.pid, "start_time": None}
        assert ("dead", "dead") == (
            liveness(owner), liveness({**this_process(), "pid": dead_pid()})
        )
    finally:
        zombie.wait()
