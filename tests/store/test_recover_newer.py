"""``recover`` and the writers it meets: a rescued record newer than the stored run of
its place is stored by the rules (never dropped as "already there"), an older one is
superseded, and a live writer in another pid namespace keeps its rescue file until the
stale rule; once ``recover`` stored its records, the writer never stores them again.

Real processes: writers whose saves fail while this test holds the sidecar's lock,
writers in their own pid (and uts) namespace (``unshare``), each with a timeout.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from helpers.process_life import run_script, stage_runs

from stagetimer import recover
from stagetimer._store.leftovers import FOREIGN_AGE

#: Times runs ``argv[4:]`` of "train" into ``argv[1]`` by policy ``argv[2]``, each
#: tagged ``argv[3]`` + run_idx (its started_at is when it ran); lock_timeout 0.3 s.
RECORD = """
import sys, time, warnings
from stagetimer import Recorder, stage
warnings.simplefilter("ignore")
rec = Recorder(sys.argv[1], policy=sys.argv[2], lock_timeout=0.3)
for idx in map(int, sys.argv[4:]):
    with stage("train", run_idx=idx, recorder=rec, tag=float(sys.argv[3]) + idx):
        time.sleep(0.01)
print(rec.pending)
"""


@contextmanager
def _held(art: Path) -> Iterator[None]:
    """This test holds the lock of ``timings.json``: every save meanwhile fails."""
    fd = os.open(art / "timings.json.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _record(art: Path, policy: str, base: float, *runs: int) -> int:
    return int(run_script(RECORD, art, policy, base, *runs, timeout=60).stdout)


@pytest.fixture
def art(tmp_path: Path) -> Path:
    path = tmp_path / "art"
    path.mkdir()
    return path


@pytest.mark.parametrize("policy", ["sequential", "upsert"])
def test_a_reruns_rescued_records_newer_than_the_stored_ones_are_stored(
    art: Path, policy: str
) -> None:
    assert 0 == _record(art, policy, 1.0, 0, 1, 2)
    with _held(art):
        assert 3 == _record(art, policy, 11.0, 0, 1, 2)  # the rerun: rescued
    (rescue,) = art.glob("timings.rescue-*.json")

    (done,) = recover(art)

    # Before: "0 stored, 3 already there; rescue file removed", the rerun's times gone.
    assert [11.0, 12.0, 13.0] == [r["tag"] for r in stage_runs(art, "train")]
    assert (3, 0) == (done.stored, done.already)
    assert not rescue.exists()


def test_a_rescued_record_older_than_its_places_run_is_superseded_and_the_file_removed(
    art: Path,
) -> None:
    assert 0 == _record(art, "upsert", 1.0, 0, 1)
    with _held(art):
        assert 1 == _record(art, "upsert", 11.0, 1)  # rescued ...
    assert 0 == _record(art, "upsert", 21.0, 1)  # ... then a newer run 1 is saved

    (done,) = recover(art)

    assert [1.0, 22.0] == [r["tag"] for r in stage_runs(art, "train")]
    assert (0, 1) == (done.stored, done.already)
    assert [] == list(art.glob("timings.rescue-*.json"))


def test_sequential_rescued_reset_drops_only_the_runs_started_before_it(art: Path) -> None:
    assert 0 == _record(art, "sequential", 1.0, 0, 1, 2)
    with _held(art):
        assert 1 == _record(art, "sequential", 11.0, 0)  # a rerun's reset, rescued
    assert 0 == _record(art, "sequential", 11.0, 1)  # the rerun goes on and saves

    (done,) = recover(art)

    # As the saves would have left it: the reset of the old runs, then the rerun's run 1.
    assert [11.0, 12.0] == [r["tag"] for r in stage_runs(art, "train")]
    assert (1, 0) == (done.stored, done.already)


#: A live writer: its saves of runs 1 and 2 fail (the test holds the lock), it says
#: "rescued" and waits for a line; then it records run 3 and says what is pending.
LIVE = textwrap.dedent("""
    import sys, time, warnings
    from stagetimer import Recorder, stage
    warnings.simplefilter("ignore")
    rec = Recorder(sys.argv[1], lock_timeout=0.3)
    for idx in (1, 2, 3):
        if idx == 3:
            print("rescued", rec.pending, flush=True)
            sys.stdin.readline()
        with stage("train", run_idx=idx, recorder=rec, tag=float(idx)):
            time.sleep(0.01)
    print("pending", rec.pending, flush=True)
""")


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.parametrize("namespaces", [["--pid"], ["--pid", "--uts"]], ids=["pid", "pid+uts"])
def test_a_live_writer_in_another_pid_namespace_keeps_its_file_and_never_stores_twice(
    art: Path, namespaces: list[str]
) -> None:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare for a pid namespace")
    assert 0 == _record(art, "sequential", 0.0, 0)
    cmd = ["unshare", *namespaces, "--fork", "--kill-child", "--mount-proc", sys.executable,
           "-c", LIVE, str(art)]
    writer = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=tempfile.gettempdir(),
                              env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    try:
        assert writer.stdout is not None and writer.stdin is not None
        with _held(art):
            line = writer.stdout.readline()
        assert line == "rescued 2\n", line if line else writer.stderr.read()
        (rescue,) = art.glob("timings.rescue-*.json")

        # Before: its pid (1 in its namespace) was looked up here, found "dead" (another
        # process, init), and the live writer's file folded.
        (fresh,) = recover(art)
        assert fresh.skipped is not None and "cannot see" in fresh.skipped
        assert rescue.exists()

        # The stale rule: a file unchanged for FOREIGN_AGE is taken, though its writer
        # may still run; the writer then finds it gone and stores none of it again.
        old = time.time() - FOREIGN_AGE - 60
        os.utime(rescue, (old, old))
        (taken,) = recover(art)
        assert (2, None) == (taken.stored, taken.skipped)
        writer.stdin.write("go\n")
        writer.stdin.flush()
        assert "pending 0\n" == writer.stdout.readline()
    finally:
        writer.kill()
        writer.wait(timeout=30)
    # Before: [0, 1, 2, 1, 2, 3].
    assert [0.0, 1.0, 2.0, 3.0] == [r["tag"] for r in stage_runs(art, "train")]


#: In its own pid namespace: fork down to a pid that no process of the parent namespace
#: has (``argv[2:]`` are the parent's pids), make a rescue file's temporary file there as
#: a recorder does, say its path, and keep it until a line comes.
TEMP_IN_NAMESPACE = textwrap.dedent("""
    import os, sys
    taken = set(map(int, sys.argv[2:]))
    while os.getpid() in taken:
        child = os.fork()
        if child:
            os.waitpid(child, 0)
            os._exit(0)
    from stagetimer._store.leftovers import temp_path
    path = temp_path(os.path.join(sys.argv[1], "timings.rescue-20261204T000000000000Z-1-0.json"))
    open(path, "w").close()
    print(path, flush=True)
    sys.stdin.readline()
""")


@pytest.mark.root
@pytest.mark.slow
def test_a_temporary_file_of_a_writer_in_another_pid_namespace_is_not_swept(art: Path) -> None:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare for a pid namespace")
    ours = [name for name in os.listdir("/proc") if name.isdigit() and int(name) < 400]
    cmd = ["unshare", "--pid", "--fork", "--kill-child", "--mount-proc", sys.executable, "-c",
           TEMP_IN_NAMESPACE, str(art), *ours]
    writer = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              cwd=tempfile.gettempdir())
    try:
        assert writer.stdout is not None and writer.stdin is not None
        temp = Path(writer.stdout.readline().strip())
        assert temp.exists()
        # Before: its name gave our host and a pid dead here: swept at this first save.
        assert 0 == _record(art, "sequential", 0.0, 0)
        assert temp.exists()
    finally:
        writer.kill()
        writer.wait(timeout=30)
