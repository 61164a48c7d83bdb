"""fork() at any moment: children start with no held lock and none of the parent's records.

Each scenario runs in its own interpreter (a hang is a timeout, not a stalled suite).
"""

from __future__ import annotations

import collections
import json
import os
from pathlib import Path

import pytest
from helpers.process_life import rescued_records, run_script, stage_runs, temp_files

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

FORK_WHILE_A_THREAD_SAVES = """
import os, sys, threading, time
from stagetimer import Recorder, record_timing

directory, children = sys.argv[1], int(sys.argv[2])
os.environ["STAGETIMER_DIR"] = directory
rec = Recorder(directory, lock_timeout=20)
stop = threading.Event()
count = [0]

def saver():
    while not stop.is_set():
        record_timing("thread", 0.001, run_idx=count[0] + 1, recorder=rec)
        count[0] += 1

record_timing("thread", 0.001, run_idx=0, recorder=rec)
worker = threading.Thread(target=saver)
worker.start()
pids = []
for i in range(children):
    time.sleep(0.003 * (i % 5))  # fork at varying points of the thread's saves
    pid = os.fork()
    if pid == 0:
        # The child: a fresh recorder and the STAGETIMER_DIR one, both must save promptly.
        try:
            fresh = Recorder(directory, lock_timeout=20, policy="upsert")
            record_timing("child_fresh", 0.5, run_idx=i, recorder=fresh)
            record_timing("child_env", 0.25, run_idx=i + 1)
        finally:
            os._exit(0)
    pids.append(pid)
statuses = [os.waitpid(pid, 0)[1] for pid in pids]
stop.set()
worker.join()
rec.close()
print(count[0] + 1, statuses)
"""


def test_children_forked_while_a_thread_saves_each_save_once(tmp_path: Path) -> None:
    directory = tmp_path / "artifact"
    done = run_script(FORK_WHILE_A_THREAD_SAVES, directory, 12, timeout=120)
    saved, statuses = done.stdout.split(" ", 1)

    assert "[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]" == statuses.strip(), done.stderr
    thread_idx = [r["run_idx"] for r in stage_runs(directory, "thread")]
    assert list(range(int(saved))) == thread_idx  # the parent's thread: each once
    fresh = sorted(r["run_idx"] for r in stage_runs(directory, "child_fresh"))
    assert list(range(12)) == fresh  # every child saved through a fresh recorder
    # The STAGETIMER_DIR recorder of each child (sequential, appending runs 1..12).
    env = sorted(r["run_idx"] for r in stage_runs(directory, "child_env"))
    assert list(range(1, 13)) == env
    assert [] == rescued_records(directory)
    assert [] == temp_files(directory)


POOL = """
import multiprocessing, sys
from stagetimer import Recorder, record_timing

directory = sys.argv[1]
rec = Recorder(directory, policy="upsert", lock_timeout=20)
record_timing("setup", 1.0, recorder=rec)  # the parent has saved (and captured) before forking

def seed(i):
    record_timing("train", 0.1 * (i + 1), run_idx=i, recorder=rec)
    return i

if __name__ == "__main__":
    with multiprocessing.get_context("fork").Pool(4) as pool:
        print(sorted(pool.map(seed, range(24))))
"""


def test_fork_pool_workers_each_save_their_seed_once(tmp_path: Path) -> None:
    directory = tmp_path / "artifact"
    done = run_script(POOL, directory, timeout=120)

    assert str(list(range(24))) == done.stdout.strip()
    runs = stage_runs(directory, "train")
    assert list(range(24)) == [r["run_idx"] for r in runs]
    assert [round(0.1 * (i + 1), 6) for i in range(24)] == [round(r["seconds"], 6) for r in runs]
    assert [1.0] == [r["seconds"] for r in stage_runs(directory, "setup")]


PENDING_AT_FORK = """
import os, sys, warnings
from stagetimer import Recorder, record_timing

directory = sys.argv[1]
warnings.simplefilter("ignore")
rec = Recorder(directory)
record_timing("train", 1.0, run_idx=0, recorder=rec)
timings = os.path.join(directory, "timings.json")
good = open(timings, "rb").read()
with open(timings, "wb") as f:
    f.write(b"{broken")
record_timing("train", 2.0, run_idx=1, recorder=rec)   # fails: pending in the parent
assert rec.pending == 1
with open(timings, "wb") as f:
    f.write(good)
pid = os.fork()
if pid == 0:
    record_timing("child", 3.0, recorder=rec)  # must not save the parent's run 1
    rec.close()
    os._exit(0)
os.waitpid(pid, 0)
rec.close()
"""


def test_a_parents_pending_record_is_saved_by_the_parent_only(tmp_path: Path) -> None:
    directory = tmp_path / "artifact"
    run_script(PENDING_AT_FORK, directory)

    assert [0, 1] == [r["run_idx"] for r in stage_runs(directory, "train")]
    assert [3.0] == [r["seconds"] for r in stage_runs(directory, "child")]
    assert [] == rescued_records(directory)


AFFINITY = """
import json, os, sys
from stagetimer import Recorder, record_timing

directory = sys.argv[1]
rec = Recorder(directory, policy="upsert")
record_timing("parent", 1.0, recorder=rec)  # captures the parent's description
pid = os.fork()
if pid == 0:
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    record_timing("child", 1.0, recorder=rec)
    os._exit(0)
os.waitpid(pid, 0)
"""


@pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="needs two CPUs to pin a child to one",
)
def test_a_child_that_pins_itself_records_its_own_hardware(tmp_path: Path) -> None:
    directory = tmp_path / "artifact"
    run_script(AFFINITY, directory)

    (parent,) = stage_runs(directory, "parent")
    (child,) = stage_runs(directory, "child")
    hardware = json.loads((directory / "timings_hardware.json").read_text())["hardware"]
    first = min(os.sched_getaffinity(0))
    # which CPU is the run's placement; how many CPUs is the child's own description
    assert (str(first), 1) == (child["cpus"], hardware[child["hardware_id"]]["cpu"]["logical_cpus"])
    assert len(os.sched_getaffinity(0)) == hardware[parent["hardware_id"]]["cpu"]["logical_cpus"]


OS_EXIT_AFTER_FAILED_SAVE = """
import os, sys, warnings
from stagetimer import Recorder, record_timing

directory = sys.argv[1]
warnings.simplefilter("ignore")
rec = Recorder(directory)
pid = os.fork()
if pid == 0:
    record_timing("worker", 4.5, run_idx=7, recorder=rec)  # the file is corrupt: fails
    os._exit(0)  # multiprocessing workers end like this: no atexit, no close
os.waitpid(pid, 0)
"""


def test_a_fork_worker_ending_with_os_exit_leaves_its_failed_record_in_a_rescue_file(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "artifact"
    directory.mkdir()
    (directory / "timings.json").write_text("{broken")
    run_script(OS_EXIT_AFTER_FAILED_SAVE, directory)

    records = rescued_records(directory)
    assert [("worker", 4.5, 7)] == [
        (r["stage"], r["run"]["seconds"], r["run"]["run_idx"]) for r in records
    ]
    assert "{broken" == (directory / "timings.json").read_text()
    assert collections.Counter() == collections.Counter(temp_files(directory))
