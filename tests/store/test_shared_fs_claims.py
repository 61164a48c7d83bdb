"""The cross-client claim: stale claims are cleared (at once on this machine, after the
stale time from another), a waiting save times out as a lock timeout, a holder whose claim
was broken publishes nothing, and readers try again a read a replace made fail.

Holders are real processes (each with a timeout); "another machine" is a process in its
own pid namespace (``unshare --pid``), whose pids this one cannot judge. The directories
are on the local disk, where saves take the claim only with ``STAGETIMER_CLAIM=always``
(set for every test here).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from stagetimer import LockTimeoutError, Recorder, StageTimerWarning, record_timing
from stagetimer._settings import CLAIM, CLAIM_STALE_SECONDS
from stagetimer._store import processes
from stagetimer._store.locking import claims
from stagetimer._store.parse import read_bytes

# A process that takes the claim of SIDECAR (no flock: the claim alone is under test),
# says "held", and waits for a line on stdin; then tries to publish through its fence.
HOLDER = r"""
import math, os, sys
from stagetimer._store import processes
from stagetimer._store.locking import claims
from stagetimer._store.locking import policy as claim_policy
from stagetimer._store.sidecar import write_atomic
sidecar = sys.argv[1]
claim = claims.take(sidecar, math.inf, math.inf)
print("held", flush=True)
sys.stdin.readline()
try:
    write_atomic(sidecar, b'{"from_the_old_holder": 1}\n', None, fence=claim.fence)
except OSError as exc:
    print("refused", exc.errno, flush=True)
else:
    print("published", flush=True)
"""


def _holder(sidecar: Path, *prefix: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [*prefix, sys.executable, "-c", HOLDER, str(sidecar)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=tempfile.gettempdir(),
    )
    assert process.stdout is not None
    line = _readline(process, 30)
    assert line == "held\n", line
    return process


def _readline(process: subprocess.Popen[str], timeout: float) -> str:
    got: list[str] = []
    assert process.stdout is not None
    stdout = process.stdout
    reader = threading.Thread(target=lambda: got.append(stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    if not got:
        process.kill()
        pytest.fail(f"no line from the holder within {timeout} s")
    return got[0]


@pytest.fixture(autouse=True)
def _saves_take_the_claim(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CLAIM, "always")


@pytest.fixture
def holders() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)


def test_a_killed_writer_s_claim_on_this_machine_is_cleared_at_once(
    art: Path, holders: list[subprocess.Popen[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CLAIM_STALE_SECONDS, "3600")  # only the dead pid can clear it
    art.mkdir(parents=True)
    holder = _holder(art / "timings.json")
    holders.append(holder)
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=30)
    assert (art / "timings.json.claim").exists()
    record_timing("train", 1.0, recorder=Recorder(art, strict=True, lock_timeout=30))
    assert not (art / "timings.json.claim").exists()
    assert json.loads((art / "timings.json").read_text())["train"]["runs"][0]["seconds"] == 1.0


def test_a_live_holder_makes_a_strict_save_time_out_as_a_lock_timeout_naming_the_claim(
    art: Path, holders: list[subprocess.Popen[str]]
) -> None:
    art.mkdir(parents=True)
    holders.append(_holder(art / "timings.json"))
    with pytest.raises(LockTimeoutError, match=r"timings\.json\.claim"):
        record_timing("train", 1.0, recorder=Recorder(art, strict=True, lock_timeout=0.3))
    assert not (art / "timings.json").exists()


def test_a_save_that_waits_out_a_claim_keeps_its_record_pending_and_rescued(
    art: Path, holders: list[subprocess.Popen[str]]
) -> None:
    art.mkdir(parents=True)
    holder = _holder(art / "timings.json")
    holders.append(holder)
    rec = Recorder(art, lock_timeout=0.3)
    with pytest.warns(StageTimerWarning, match="could not be saved"):
        record_timing("train", 1.0, recorder=rec)
    assert rec.pending == 1
    assert len(list(art.glob("timings.rescue-*.json"))) == 1
    holder.kill()
    holder.wait(timeout=30)
    rec.close()  # the holder is gone: its claim is cleared and the record stored
    assert rec.pending == 0
    assert list(art.glob("timings.rescue-*.json")) == []
    assert len(json.loads((art / "timings.json").read_text())["train"]["runs"]) == 1


def _unshare() -> list[str]:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("another pid namespace (unshare --pid) needs root and util-linux")
    return ["unshare", "--pid", "--fork", "--mount-proc"]


@pytest.mark.root
def test_another_machine_s_claim_is_broken_after_the_stale_time_and_its_holder_publishes_nothing(
    art: Path, holders: list[subprocess.Popen[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    prefix = _unshare()
    art.mkdir(parents=True)
    holder = _holder(art / "timings.json", *prefix)
    holders.append(holder)
    monkeypatch.setenv(CLAIM_STALE_SECONDS, "1")
    started = time.monotonic()
    record_timing("train", 1.0, recorder=Recorder(art, strict=True, lock_timeout=30))
    assert time.monotonic() - started >= 1.0  # it waited for the claim to go stale
    assert holder.stdin is not None
    holder.stdin.write("go\n")
    holder.stdin.flush()
    assert _readline(holder, 30).split() == ["refused", str(errno.ENOLCK)]
    data = json.loads((art / "timings.json").read_text())
    assert list(data) == ["train"]  # the old holder's write never replaced the file


@pytest.mark.root
def test_another_machine_s_claim_that_shows_signs_of_life_is_never_broken(
    art: Path, holders: list[subprocess.Popen[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    prefix = _unshare()
    art.mkdir(parents=True)
    holders.append(_holder(art / "timings.json", *prefix))
    claim = art / "timings.json.claim"
    monkeypatch.setenv(CLAIM_STALE_SECONDS, "0.6")
    stop = threading.Event()

    def beat() -> None:  # what the holder's fence does: touch the claim
        while not stop.wait(0.1):
            os.utime(claim)

    beating = threading.Thread(target=beat)
    beating.start()
    try:
        with pytest.raises(LockTimeoutError):
            record_timing("train", 1.0, recorder=Recorder(art, strict=True, lock_timeout=2))
    finally:
        stop.set()
        beating.join()
    assert claim.exists()


def _claim_file(path: Path, **holder: object) -> claims.ClaimInfo:
    path.write_text(json.dumps({**claims.this_machine(), "token": "t", **holder}))
    info = claims.read_claim(str(path))
    assert info is not None
    return info


@pytest.mark.parametrize(
    ("change", "stale"),
    [
        ({}, False),  # our parent: alive, same start time
        ({"start_delta": 1}, True),  # the pid now belongs to a process started later
        ({"pid": 0}, True),  # no writer writes that
    ],
)
def test_a_claim_on_this_machine_is_stale_when_its_pid_is_gone_or_reused(
    tmp_path: Path, change: dict[str, int], stale: bool
) -> None:
    parent = os.getppid()
    start = processes.start_time(parent)
    assert start is not None
    holder = {"pid": change.get("pid", parent), "start": start + change.get("start_delta", 0)}
    info = _claim_file(tmp_path / "timings.json.claim", **holder)
    me = claims.this_machine()
    assert claims.breakable(info, me, 3600.0, time.monotonic()) is stale


def test_a_claim_of_this_process_that_no_save_holds_is_stale(tmp_path: Path) -> None:
    info = _claim_file(tmp_path / "timings.json.claim", token="left-by-an-interrupt")
    assert claims.breakable(info, claims.this_machine(), 3600.0, time.monotonic())


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
def test_a_bad_stale_time_is_refused_naming_the_value_and_the_record_kept(
    art: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(CLAIM_STALE_SECONDS, value)
    rec = Recorder(art)
    with pytest.warns(StageTimerWarning, match=f"{CLAIM_STALE_SECONDS}={value!r}"):
        record_timing("train", 1.0, recorder=rec)
    assert rec.pending == 1
    monkeypatch.delenv(CLAIM_STALE_SECONDS)
    rec.close()
    assert rec.pending == 0


def test_a_read_that_meets_estale_is_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # This kernel has no NFS client: the error its reads give after another client
    # replaced the file (nfs(5): ESTALE) is raised by a stand-in for os.read, twice.
    path = tmp_path / "timings.json"
    path.write_bytes(b"{}\n")
    real_read = os.read
    failures = [2]

    def stale_read(fd: int, n: int) -> bytes:
        if failures[0]:
            failures[0] -= 1
            raise OSError(errno.ESTALE, os.strerror(errno.ESTALE))
        return real_read(fd, n)

    monkeypatch.setattr(os, "read", stale_read)
    assert read_bytes(str(path)) == b"{}\n"
    assert failures == [0]


@pytest.mark.root
def test_readers_on_another_client_never_fail_while_a_writer_replaces_the_file(
    tmp_path: Path,
) -> None:
    from helpers.bindfs import BindfsUnavailable, bindfs_mounts, start_writer, unavailable

    from stagetimer import load_timings

    if unavailable():
        pytest.skip(str(unavailable()))
    try:
        mounts = bindfs_mounts(tmp_path, 2)
        _backing, (writer_client, reader_client) = mounts.__enter__()
    except BindfsUnavailable as error:
        pytest.skip(str(error))
    try:
        writer = start_writer(writer_client / "exp", 0, 40, "upsert", 1, "distinct")
        reads = 0
        deadline = time.monotonic() + 120
        while writer.poll() is None and time.monotonic() < deadline:
            if (reader_client / "exp").is_dir():
                load_timings(reader_client / "exp")  # raises on any failed read
                reads += 1
        assert writer.wait(timeout=120) == 0
        assert reads > 0
    finally:
        mounts.__exit__(None, None, None)
