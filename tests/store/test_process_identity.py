"""One identity of a writing process, and one judgement of whether a recorded one runs.

Real processes throughout: a child that renames itself, a zombie, a fork, a claim left by
a process that exited but was not reaped.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.process_life import run_script
from helpers.rescue import dead_pid

from stagetimer._settings import CLAIM_STALE_SECONDS
from stagetimer._store import owner, processes
from stagetimer._store.locking import claims

# A process whose name (field 2 of /proc/<pid>/stat) holds spaces and parentheses.
RENAMED = r"""
import sys, time
with open("/proc/self/comm", "w") as f:
    f.write(") Z 1 (x")
print("ready", flush=True)
time.sleep(60)
"""


@pytest.fixture
def renamed() -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", RENAMED], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        yield proc
    finally:
        proc.kill()
        proc.wait()


def _stat_fields(pid: int) -> list[str]:
    with open(f"/proc/{pid}/stat", "rb") as f:
        return f.read().decode().rsplit(")", 1)[1].split()


def test_proc_stat_counts_fields_after_a_name_with_parentheses(
    renamed: subprocess.Popen[str],
) -> None:
    fields = _stat_fields(renamed.pid)
    state, started = processes.proc_stat(renamed.pid)
    # Sleeping, or running when the scheduler just woke it (a loaded machine): alive.
    assert (True, int(fields[19])) == (state in ("S", "R"), started)
    assert "live" == processes.liveness(renamed.pid, int(fields[19]))
    assert "dead" == processes.liveness(renamed.pid, int(fields[19]) + 1)  # a reused pid


def test_rescue_owner_and_claim_holder_are_views_of_one_identity() -> None:
    me = processes.identity()
    assert me is processes.identity()  # read once
    assert (me.pid, me.start_time) == (owner.this_process()["pid"], int(_stat_fields(me.pid)[19]))
    holder = claims.this_machine()
    assert (holder["pid"], holder["start"], holder["pidns"], holder["boot_id"]) == (
        me.pid, me.start_time, me.pidns, me.boot_id
    )
    assert sorted(owner.this_process()) == [
        "boot_id", "host", "pid", "pidns", "start_time", "uid"
    ]
    assert owner.this_process()["pidns"] == me.pidns
    assert sorted(holder) == ["boot_id", "host", "pid", "pidns", "start"]


FORKED = r"""
import json, os
from stagetimer._store import owner, processes
from stagetimer._store.locking import claims
parent = (processes.identity().pid, owner.this_process()["pid"], claims.this_machine()["pid"])
r, w = os.pipe()
child = os.fork()
if child == 0:
    os.write(w, json.dumps([processes.identity().pid, owner.this_process()["pid"],
                            claims.this_machine()["pid"], os.getpid()]).encode())
    os._exit(0)
os.waitpid(child, 0)
print(json.dumps({"parent": parent, "child": json.loads(os.read(r, 4096))}))
"""


def test_a_forked_child_reads_its_own_identity() -> None:
    seen = json.loads(run_script(FORKED, timeout=30).stdout)
    child = seen["child"]
    assert child[:3] == [child[3]] * 3
    assert seen["parent"][0] not in child and len(set(seen["parent"])) == 1


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"host": "another-node"}, "elsewhere"),  # rescue files go by host
        ({"host": None}, "elsewhere"),
        ({"boot": "00000000-0000-0000-0000-000000000000"}, "elsewhere"),  # claims: no host
        ({"pidns": -1}, "elsewhere"),  # another container's pid
    ],
)
def test_a_record_of_another_machine_is_elsewhere(fields: dict[str, object], expected: str) -> None:
    assert expected == processes.liveness(dead_pid(), None, **fields)


def test_another_boot_is_elsewhere_with_our_host_name_or_without_a_host() -> None:
    # Our host name with another boot: a reboot, or another node cloned with the same
    # name, whose live writer nothing here can prove dead.
    me = processes.identity()
    other = "00000000-0000-0000-0000-000000000000"
    host = owner.this_process()["host"]
    assert "elsewhere" == processes.liveness(me.pid, me.start_time, host=host, boot=other)
    assert "elsewhere" == processes.liveness(me.pid, me.start_time, boot=other)
    assert "live" == processes.liveness(me.pid, me.start_time, boot=me.boot_id, pidns=me.pidns)


@pytest.mark.parametrize("pid", [0, -3, True, "12", None, 2.0])
def test_what_no_writer_records_as_a_pid_is_dead(pid: object) -> None:
    assert "dead" == processes.liveness(pid, None)


def test_a_claim_whose_holder_exited_unreaped_is_broken_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CLAIM_STALE_SECONDS, "3600")  # only the holder's death can clear it
    zombie = subprocess.Popen(["true"])
    try:
        for _ in range(200):  # until it has exited: state Z, not yet waited for
            if (processes.proc_stat(zombie.pid) or ("?",))[0] == "Z":
                break
            time.sleep(0.01)
        path = tmp_path / "timings.json.claim"
        started = processes.start_time(zombie.pid)
        path.write_text(json.dumps({**claims.this_machine(), "pid": zombie.pid,
                                    "start": started, "token": "t"}))
        info = claims.read_claim(str(path))
        assert info is not None
        me = claims.this_machine()
        assert claims.breakable(info, me, 3600.0, time.monotonic())
    finally:
        zombie.wait()
