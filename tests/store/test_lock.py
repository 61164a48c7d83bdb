"""The advisory lock and the temporary files: never followed through links, never stuck.

Real processes, real users (as root) and real links; no stub of the lock.
"""

from __future__ import annotations

import fcntl
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.process_life import REPO, rescued_records, run_script, stage_runs, temp_files

from stagetimer import LockTimeoutError, Recorder, StageTimerWarning, record_timing
from stagetimer._store import leftovers as _leftovers
from stagetimer._store import sidecar as _sidecar
from stagetimer._store.locking import lock as _lock

HOLD = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(float(sys.argv[2]))
"""


def _hold(lock: Path, seconds: float) -> subprocess.Popen[str]:
    """Another process holding ``lock`` for ``seconds``; returns once it holds it."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(lock), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    assert "held" == proc.stdout.readline().strip()
    return proc


def _free_for_others(lock: Path) -> bool:
    """Whether another process can take ``lock`` right now."""
    code = (
        "import fcntl, os, sys\n"
        "fd = os.open(sys.argv[1], os.O_RDONLY)\n"
        "try:\n    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\nexcept OSError:\n"
        "    sys.exit(1)\n"
    )
    return subprocess.run([sys.executable, "-c", code, str(lock)], timeout=30).returncode == 0


def test_a_lock_held_by_another_process_times_out_with_the_lock_named(tmp_path: Path) -> None:
    lock = tmp_path / "timings.json.lock"
    holder = _hold(lock, 30)
    try:
        with pytest.raises(LockTimeoutError, match=r"timings\.json\.lock"):
            _lock.acquire(str(lock), 0.2)
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("held", ["timings.json.lock", "timings_hardware.json.lock"])
def test_a_save_that_times_out_names_the_lock_timeout_it_was_given(
    tmp_path: Path, held: str
) -> None:
    # One budget for the whole save (hardware sidecar, then timings): the error says the
    # lock_timeout the caller set, not what was left of it when the second lock waited.
    record_timing("warmup", 1.0, recorder=Recorder(tmp_path, strict=True))
    holder = _hold(tmp_path / held, 30)
    try:
        rec = Recorder(tmp_path, strict=True, lock_timeout=0.25)
        with pytest.raises(LockTimeoutError) as info:
            record_timing("train", 1.0, recorder=rec)
    finally:
        holder.kill()
        holder.wait()
    assert info.value.timeout == 0.25
    assert info.value.path == str(tmp_path / held)
    assert "within 0.25 s" in str(info.value)


def test_an_infinite_timeout_waits_for_the_holder_to_finish(tmp_path: Path) -> None:
    lock = tmp_path / "timings.json.lock"
    holder = _hold(lock, 0.3)
    try:
        _lock.acquire(str(lock), float("inf"))
        _lock.release(str(lock))
    finally:
        holder.wait()
    assert 0 == holder.returncode


def test_a_lock_an_interrupt_left_is_released_for_other_processes(tmp_path: Path) -> None:
    lock = tmp_path / "timings.json.lock"
    _lock.acquire(str(lock), 1.0)  # as if the release never ran
    assert not _free_for_others(lock)

    _lock.release_mine()

    assert _free_for_others(lock)


def test_the_same_thread_takes_a_lock_an_interrupt_left_again(tmp_path: Path) -> None:
    lock = str(tmp_path / "timings.json.lock")
    _lock.acquire(lock, 1.0)

    _lock.acquire(lock, 0.1)  # no wait on its own leftover
    _lock.release(lock)

    assert _free_for_others(Path(lock))


def test_threads_of_one_process_exclude_each_other(tmp_path: Path) -> None:
    lock = str(tmp_path / "timings.json.lock")
    counter = tmp_path / "counter"
    counter.write_text("0")

    def work() -> None:
        for _ in range(200):
            _lock.acquire(lock, 30)
            try:
                value = int(counter.read_text())
                counter.write_text(str(value + 1))
            finally:
                _lock.release(lock)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert "800" == counter.read_text()


FORKED_CHILD_LOCKS = """
import os, sys, threading, time
from stagetimer._store import leftovers as _leftovers
from stagetimer._store.locking import lock as _lock

lock = sys.argv[1]
held = threading.Event()
go = threading.Event()

def holder():
    _lock.acquire(lock, 5)
    held.set()
    go.wait()
    _lock.release(lock)

t = threading.Thread(target=holder)
t.start()
held.wait()
pid = os.fork()  # while another thread holds the lock
if pid == 0:
    try:
        _lock.acquire(lock, 10)  # waits for the parent's release, then holds it
        _lock.release(lock)
        os._exit(0)
    except BaseException:
        os._exit(3)
time.sleep(0.2)
go.set()
t.join()
print(os.waitpid(pid, 0)[1])
"""


def test_a_child_forked_while_a_thread_holds_the_lock_takes_it_once_released(
    tmp_path: Path,
) -> None:
    done = run_script(FORKED_CHILD_LOCKS, tmp_path / "timings.json.lock", timeout=60)

    assert "0" == done.stdout.strip()
    assert _free_for_others(tmp_path / "timings.json.lock")


# -- links --------------------------------------------------------------------------------


@pytest.mark.parametrize("target_exists", [False, True], ids=["dangling", "existing"])
def test_a_symlinked_lock_file_is_not_followed(
    tmp_path: Path, art: Path, target_exists: bool
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "victim"
    if target_exists:
        target.write_text("precious\n")
        os.utime(target, (1_000_000_000, 1_000_000_000))
    art.mkdir(parents=True)
    (art / "timings.json.lock").symlink_to(target)

    with pytest.warns(StageTimerWarning, match="symbolic link"):
        record_timing("train", 1.0, recorder=Recorder(art))

    if target_exists:
        assert ("precious\n", 1_000_000_000) == (target.read_text(), int(target.stat().st_mtime))
    else:
        assert not target.exists()
    assert ["victim"] == sorted(p.name for p in outside.iterdir()) or not target_exists
    assert [1.0] == [r["run"]["seconds"] for r in rescued_records(art)]


def test_a_hard_link_planted_at_the_old_fixed_temp_name_is_not_written_through(
    tmp_path: Path, art: Path
) -> None:
    victim = tmp_path / "victim"
    victim.write_text("secret\n")
    victim.chmod(0o600)
    rec = Recorder(art)
    record_timing("train", 1.0, recorder=rec)
    os.link(victim, art / ".timings.json.tmp")

    record_timing("train", 2.0, recorder=Recorder(art))

    assert "secret\n" == victim.read_text()
    assert 0o600 == victim.stat().st_mode & 0o777
    assert [2.0] == [r["seconds"] for r in stage_runs(art, "train")]
    assert [] == temp_files(art)  # the planted link is cleared as a leftover


@pytest.mark.filterwarnings("ignore:.*recorded again without run_idx:stagetimer.StageTimerWarning")
def test_a_file_planted_at_the_chosen_temp_name_is_not_written_through(
    tmp_path: Path, art: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    victim = tmp_path / "victim"
    victim.write_text("secret\n")
    rec = Recorder(art)
    record_timing("train", 1.0, recorder=rec)
    planted = art / ".timings.json.tmp-planted"
    os.link(victim, planted)
    names = iter([str(planted)])
    real = _sidecar._temp_path
    monkeypatch.setattr(_sidecar, "_temp_path", lambda path: next(names, None) or real(path))

    record_timing("train", 2.0, recorder=rec)

    assert "secret\n" == victim.read_text()
    assert [2.0] == [r["seconds"] for r in stage_runs(art, "train")]


def test_what_a_killed_writer_left_is_cleared_by_the_next_save(art: Path) -> None:
    record_timing("train", 1.0, recorder=Recorder(art))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    pid = int(dead.stdout)
    host = _leftovers.token().rsplit("-", 2)[0]
    left = art / f".timings.json.tmp-{host}-{pid}-0badc0de-7"
    left.write_text('{"half": ')

    record_timing("train", 2.0, recorder=Recorder(art))

    assert not left.exists()


def test_a_live_writers_temp_file_is_not_cleared(art: Path) -> None:
    record_timing("train", 1.0, recorder=Recorder(art))
    host = _leftovers.token().rsplit("-", 2)[0]
    alive = art / f".timings.json.tmp-{host}-1-0badc0de-7"  # pid 1 is alive
    alive.write_text('{"half": ')

    record_timing("train", 2.0, recorder=Recorder(art))

    assert alive.exists()


# -- another user's lock file in a shared group directory ----------------------------------

SAVE_AS_USER = """
import sys
from stagetimer import Recorder, record_timing
record_timing(sys.argv[2], 1.0, recorder=Recorder(sys.argv[1], strict=True, lock_timeout=5))
"""


@pytest.fixture
def group_members() -> Iterator[tuple[str, str, str]]:
    """Two users in one group (created and removed here); needs root."""
    if os.geteuid() != 0:
        pytest.skip("needs root to create users and a group")
    group, users = "stgtest", ("stgalice", "stgbob")
    subprocess.run(["groupadd", "-f", group], check=True)
    for user in users:
        if subprocess.run(["id", user], capture_output=True).returncode != 0:
            subprocess.run(["useradd", "-M", "-N", "-g", group, user], check=True)
    try:
        yield group, *users
    finally:
        for user in users:
            subprocess.run(["userdel", user], capture_output=True)
        subprocess.run(["groupdel", group], capture_output=True)


def _user_python() -> str:
    """An interpreter other users may run (the venv's lives under root's home)."""
    for candidate in (sys.executable, "/usr/bin/python3"):
        if os.path.realpath(candidate).startswith("/root/"):
            continue
        return candidate
    pytest.skip("no interpreter outside /root for another user to run")


def _save_as(
    user: str, group: str, directory: Path, stage: str
) -> subprocess.CompletedProcess[str]:
    import site

    paths = [str(REPO), *site.getsitepackages()]
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": os.pathsep.join(paths), "HOME": "/tmp"}
    cmd = [
        "setpriv", f"--reuid={user}", f"--regid={group}", "--init-groups",
        "sh", "-c", 'umask 022; exec "$@"', "sh",
        _user_python(), "-c", SAVE_AS_USER, str(directory), stage,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60, cwd="/tmp")


@pytest.mark.root
def test_a_0644_lock_file_of_another_group_member_does_not_stop_a_save(
    request: pytest.FixtureRequest, group_members: tuple[str, str, str]
) -> None:
    group, alice, bob = group_members
    # Outside pytest's base directory, which only root may enter.
    base = Path(tempfile.mkdtemp(prefix="stagetimer-group-"))
    base.chmod(0o755)
    request.addfinalizer(lambda: shutil.rmtree(base, ignore_errors=True))
    shared = base / "shared"
    shared.mkdir()
    os.chown(shared, 0, pwd.getpwnam(alice).pw_gid)
    shared.chmod(0o2775)
    first = _save_as(alice, group, shared, "by_alice")
    if "ModuleNotFoundError" in first.stderr:
        pytest.skip(f"the other user cannot import stagetimer here: {first.stderr[-200:]}")
    assert 0 == first.returncode, first.stderr
    lock = shared / "timings.json.lock"
    assert (alice, 0o644) == (pwd.getpwuid(lock.stat().st_uid).pw_name, lock.stat().st_mode & 0o777)
    # Bob may write the directory (group) but not alice's lock files: he locks read-only.
    (shared / "timings.json").chmod(0o664)
    (shared / "timings_hardware.json").chmod(0o664)

    second = _save_as(bob, group, shared, "by_bob")

    assert 0 == second.returncode, second.stderr
    assert [1.0] == [r["seconds"] for r in stage_runs(shared, "by_bob")]
    assert [1.0] == [r["seconds"] for r in stage_runs(shared, "by_alice")]


# -- mutual exclusion across processes, on the oldest and the newest filelock allowed -------

COUNTER = """
import os, sys
import filelock
from stagetimer._store.sidecar import locked

path, cycles = sys.argv[1], int(sys.argv[2])
for _ in range(cycles):
    with locked(path, 60):
        with open(path) as f:
            value = int(f.read() or 0)
        with open(path, "w") as f:
            f.write(str(value + 1))
print(filelock.__version__)
"""


@pytest.fixture(scope="session", params=["filelock==3.30.*", "filelock"], ids=["oldest", "newest"])
def filelock_dir(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    target = tmp_path_factory.mktemp("filelock")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
         request.param],
        capture_output=True, text=True, timeout=300,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot install {request.param}: {done.stderr.strip()[-300:]}")
    return str(target)


@pytest.mark.slow
def test_four_processes_lose_no_update_of_a_locked_counter(
    tmp_path: Path, filelock_dir: str
) -> None:
    counter = tmp_path / "counter"
    counter.write_text("0")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([filelock_dir, str(REPO)])}
    procs = [
        subprocess.Popen([sys.executable, "-c", COUNTER, str(counter), "1000"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         cwd="/tmp")
        for _ in range(4)
    ]
    outputs = [p.communicate(timeout=300) for p in procs]

    assert [0, 0, 0, 0] == [p.returncode for p in procs], outputs
    versions = {out.strip() for out, _ in outputs}
    assert 1 == len(versions)
    assert "4000" == counter.read_text(), versions


def test_the_lock_file_is_opened_close_on_exec_without_following_links(tmp_path: Path) -> None:
    lock = str(tmp_path / "timings.json.lock")
    _lock.acquire(lock, 1.0)
    try:
        gate = _lock._gates[lock]
        assert gate.fd is not None
        assert fcntl.fcntl(gate.fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC
    finally:
        _lock.release(lock)
    time.sleep(0)


def test_a_rescue_temp_file_a_killed_writer_left_is_cleared_by_the_next_save(art: Path) -> None:
    record_timing("train", 1.0, recorder=Recorder(art))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    host = _leftovers.token().rsplit("-", 2)[0]
    stem = ".timings.rescue-20261201T000000000000Z-1.json.tmp"
    left = art / f"{stem}-{host}-{int(dead.stdout)}-0badc0de-3"
    alive = art / f"{stem}-{host}-1-0badc0de-4"  # pid 1 is alive: may still be writing
    left.write_text('{"half": ')
    alive.write_text('{"half": ')

    record_timing("train", 2.0, recorder=Recorder(art))

    assert (False, True) == (left.exists(), alive.exists())
