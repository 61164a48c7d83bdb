"""Another process holding a sidecar's advisory lock (docs/guarantees.md).

A save waits at most ``lock_timeout``: strict mode then raises
``LockTimeoutError`` (also a ``TimeoutError``), lenient mode warns and keeps the
record pending. A holder killed with SIGKILL releases the lock with its process:
the next save succeeds at once, with no stale lock file to delete by hand.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.reliability import assert_sidecars_sound, call_with_guard, spawn_python

from stagetimer import (
    LockTimeoutError,
    Recorder,
    StageTimerError,
    StageTimerWarning,
    load_timings,
    record_timing,
)

LOCK_TIMEOUT = 0.5
GUARD = LOCK_TIMEOUT + 10  # seconds after which a blocked save counts as a hang

# Holds the lock file given in argv[1] (through filelock, or a bare fcntl.flock)
# and sleeps until killed.
HOLDER = """
import fcntl, os, sys, time
path, kind = sys.argv[1], sys.argv[2]
if kind == "filelock":
    import filelock
    lock = filelock.FileLock(path)
    lock.acquire()
else:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(600)
"""

# Records once with strict=True and a short lock_timeout, and reports what happened.
ATTEMPT = """
import json, sys, time
from stagetimer import Recorder, record_timing
rec = Recorder(sys.argv[1], strict=True, lock_timeout=float(sys.argv[2]))
t0 = time.monotonic()
try:
    record_timing("blocked", 1.0, run_idx=0, recorder=rec)
    error = None
except BaseException as exc:
    error = [c.__name__ for c in type(exc).__mro__]
print(json.dumps({"error": error, "elapsed": time.monotonic() - t0}), flush=True)
"""


@pytest.fixture(params=["filelock", "flock"])
def holder_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=["timings.json.lock", "timings_hardware.json.lock"])
def lock_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _hold(lock_path: Path, kind: str) -> subprocess.Popen[str]:
    holder = spawn_python(HOLDER, lock_path, kind)
    assert holder.stdout is not None
    line = holder.stdout.readline()  # the holder prints at once; a hang is a failed test anyway
    assert line == "held\n", holder.stderr.read() if holder.stderr else ""
    return holder


@pytest.fixture
def artifact(tmp_path: Path) -> Path:
    """A directory holding both sidecars already (the usual case: a later save)."""
    record_timing("earlier", 0.5, recorder=Recorder(tmp_path, strict=True))
    return tmp_path


@pytest.fixture
def held(artifact: Path, lock_name: str, holder_kind: str) -> Iterator[subprocess.Popen[str]]:
    holder = _hold(artifact / lock_name, holder_kind)
    try:
        yield holder
    finally:
        if holder.poll() is None:
            holder.kill()
        holder.wait(timeout=10)
        for stream in (holder.stdout, holder.stderr):
            if stream is not None:
                stream.close()


def _kill(holder: subprocess.Popen[str]) -> None:
    holder.send_signal(signal.SIGKILL)
    assert holder.wait(timeout=10) == -signal.SIGKILL


@pytest.mark.slow
def test_strict_save_times_out_in_a_child_process_never_hangs(
    artifact: Path, held: subprocess.Popen[str]
) -> None:
    old = (artifact / "timings.json").read_bytes()
    attempt = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(ATTEMPT), str(artifact), str(LOCK_TIMEOUT)],
        capture_output=True,
        text=True,
        timeout=GUARD + 10,  # a hang fails here instead of blocking the suite
        check=True,
    )
    result = json.loads(attempt.stdout)
    assert result["error"] is not None, "saved although another process held the lock"
    assert {"LockTimeoutError", "StageTimerError", "TimeoutError"} <= set(result["error"])
    assert LOCK_TIMEOUT * 0.9 <= result["elapsed"] < LOCK_TIMEOUT + 5
    assert old == (artifact / "timings.json").read_bytes()


def test_strict_save_raises_lock_timeout_then_succeeds_once_the_holder_is_killed(
    artifact: Path, held: subprocess.Popen[str]
) -> None:
    rec = Recorder(artifact, strict=True, lock_timeout=LOCK_TIMEOUT)
    old = (artifact / "timings.json").read_bytes()

    t0 = time.monotonic()
    with pytest.raises(LockTimeoutError) as info:
        call_with_guard(lambda: record_timing("blocked", 1.0, run_idx=0, recorder=rec), GUARD)
    elapsed = time.monotonic() - t0

    assert isinstance(info.value, TimeoutError)
    assert isinstance(info.value, StageTimerError)
    assert elapsed >= LOCK_TIMEOUT * 0.9
    assert old == (artifact / "timings.json").read_bytes()
    assert rec.pending == 0

    _kill(held)
    # The lock file stays where it is; the kernel released the dead holder's flock.
    record_timing("after_kill", 2.0, recorder=rec)
    assert list(load_timings(artifact).stages) == ["earlier", "after_kill"]
    assert_sidecars_sound(artifact)


def test_lenient_save_warns_keeps_pending_and_close_saves_after_the_holder_dies(
    artifact: Path, held: subprocess.Popen[str]
) -> None:
    rec = Recorder(artifact, lock_timeout=LOCK_TIMEOUT)
    old = (artifact / "timings.json").read_bytes()

    with pytest.warns(StageTimerWarning, match="blocked"):
        call_with_guard(lambda: record_timing("blocked", 1.0, run_idx=0, recorder=rec), GUARD)

    assert rec.pending == 1
    assert old == (artifact / "timings.json").read_bytes()
    _kill(held)
    rec.close()
    assert rec.pending == 0
    assert list(load_timings(artifact).stages) == ["earlier", "blocked"]
    assert sorted(artifact.glob("timings.rescue-*.json")) == []
    assert_sidecars_sound(artifact)


def test_stale_lock_file_of_a_killed_holder_does_not_block(
    tmp_path: Path, holder_kind: str
) -> None:
    # The holder dies before any sidecar exists: its lock file stays behind, unlocked.
    holder = _hold(tmp_path / "timings.json.lock", holder_kind)
    try:
        _kill(holder)
    finally:
        for stream in (holder.stdout, holder.stderr):
            if stream is not None:
                stream.close()
    assert (tmp_path / "timings.json.lock").exists()

    record_timing("first", 1.0, recorder=Recorder(tmp_path, strict=True, lock_timeout=LOCK_TIMEOUT))

    assert list(load_timings(tmp_path).stages) == ["first"]


# Records once (lenient) while another process holds the lock, says so, waits for the
# go file, and exits without calling close().
BLOCKED_THEN_EXITS = """
import os, sys, time, warnings
warnings.simplefilter("ignore")
from stagetimer import Recorder, record_timing
directory, go = sys.argv[1], sys.argv[2]
rec = Recorder(directory, lock_timeout=0.5)
record_timing("saved_at_exit", 3.0, run_idx=0, recorder=rec)
print("pending", rec.pending, flush=True)
deadline = time.monotonic() + 30
while not os.path.exists(go) and time.monotonic() < deadline:
    time.sleep(0.01)
"""


def test_pending_record_is_saved_at_interpreter_exit_once_the_lock_is_free(
    artifact: Path, held: subprocess.Popen[str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    go = tmp_path_factory.mktemp("signal") / "go"
    writer = spawn_python(BLOCKED_THEN_EXITS, artifact, go)
    try:
        assert writer.stdout is not None
        assert writer.stdout.readline() == "pending 1\n"
        _kill(held)
        go.touch()
        _, err = writer.communicate(timeout=GUARD + 10)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
    assert writer.returncode == 0, err
    assert ["earlier", "saved_at_exit"] == list(load_timings(artifact).stages)
    assert [] == sorted(artifact.glob("timings.rescue-*.json"))
