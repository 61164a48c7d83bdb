"""Many processes, each with several threads, saving into one artifact directory at once.

docs/format.md (replacement rules) and docs/guarantees.md: distinct stage keys written by
different processes always merge, ``policy="upsert"`` records of one shared stage
from parallel writers all survive, and every ``hardware_id`` resolves.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest
from helpers.reliability import Watcher, assert_sidecars_sound, spawn_python

N_PROCESSES = 4
N_THREADS = 3
N_ITERATIONS = 6

# One writer process: N threads released together, each saving a distinct stage, an
# upsert run of "shared" (its own run_idx), and an upsert run of "shared_labelled"
# (a run_idx other processes also use, told apart by the label), the last two
# recorded twice so that the second must replace the first. Even processes share
# one Recorder between their threads, odd ones give each thread its own.
WRITER = """
import os, sys, threading, time
from stagetimer import Recorder, record_timing

directory, proc, n_threads, n_iter, go = sys.argv[1], *map(int, sys.argv[2:5]), sys.argv[5]
shared = Recorder(directory, policy="upsert", strict=True)
barrier = threading.Barrier(n_threads)
errors = []

def seconds(t, j, attempt):
    return proc + t / 10 + j / 1000 + attempt / 100000

def work(t):
    rec = shared if proc % 2 == 0 else Recorder(directory, policy="upsert", strict=True)
    barrier.wait()
    try:
        for j in range(n_iter):
            record_timing(f"p{proc}_t{t}_{j}", seconds(t, j, 1), recorder=rec, proc=proc)
            for attempt in (0, 1):
                record_timing("shared", seconds(t, j, attempt),
                              run_idx=proc * 1000 + t * 100 + j, recorder=rec, proc=proc)
                record_timing("shared_labelled", seconds(t, j, attempt),
                              run_idx=t * 100 + j, label=f"p{proc}", recorder=rec)
    except BaseException as exc:
        errors.append(repr(exc))
        raise

while not os.path.exists(go):
    time.sleep(0.005)
threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
for th in threads:
    th.start()
for th in threads:
    th.join()
print("errors", errors, flush=True)
sys.exit(1 if errors else 0)
"""


def _seconds(proc: int, t: int, j: int, attempt: int) -> float:
    return proc + t / 10 + j / 1000 + attempt / 100000


@pytest.mark.slow
def test_parallel_processes_and_threads_lose_no_record(tmp_path: Path) -> None:
    directory = tmp_path / "artifact"
    go = tmp_path / "go"
    writers = [
        spawn_python(
            WRITER,
            directory,
            proc,
            N_THREADS,
            N_ITERATIONS,
            go,
            # A job id per process: each describes different hardware, so the
            # hardware sidecar too is merged from concurrent writers.
            env={"SLURM_JOB_ID": f"77{proc}", "SLURM_JOB_NAME": "contention"},
        )
        for proc in range(N_PROCESSES)
    ]
    time.sleep(0.3)  # let the interpreters start so that they really overlap
    with Watcher(directory) as watcher:  # a reader that must never see a torn file
        go.touch()
        outputs = [w.communicate(timeout=90) for w in writers]
    assert [w.returncode for w in writers] == [0] * N_PROCESSES, outputs

    assert [] == watcher.problems[:5]
    raw = assert_sidecars_sound(directory)
    hardware = json.loads((directory / "timings_hardware.json").read_text())["hardware"]

    expected_distinct = {
        f"p{p}_t{t}_{j}": _seconds(p, t, j, 1)
        for p in range(N_PROCESSES)
        for t in range(N_THREADS)
        for j in range(N_ITERATIONS)
    }
    assert set(expected_distinct) | {"shared", "shared_labelled"} == set(raw)
    for name, seconds in expected_distinct.items():
        assert [seconds] == [run["seconds"] for run in raw[name]["runs"]], name

    # Each upsert key exactly once, holding its second (replacing) value, sorted by run_idx.
    expected_shared = sorted(
        (p * 1000 + t * 100 + j, _seconds(p, t, j, 1))
        for p in range(N_PROCESSES)
        for t in range(N_THREADS)
        for j in range(N_ITERATIONS)
    )
    assert expected_shared == [(r["run_idx"], r["seconds"]) for r in raw["shared"]["runs"]]
    expected_labelled = sorted(
        (t * 100 + j, f"p{p}", _seconds(p, t, j, 1))
        for p in range(N_PROCESSES)
        for t in range(N_THREADS)
        for j in range(N_ITERATIONS)
    )
    actual_labelled = [
        (r["run_idx"], r["label"], r["seconds"]) for r in raw["shared_labelled"]["runs"]
    ]
    assert expected_labelled == sorted(actual_labelled)
    idx = [r["run_idx"] for r in raw["shared_labelled"]["runs"]]
    assert sorted(idx) == idx

    for name, stage in raw.items():
        assert math.isclose(
            math.fsum(r["seconds"] for r in stage["runs"]), stage["total_seconds"]
        ), name

    # Each process's runs carry its own job (its job id) and one hardware description.
    ids_by_proc: dict[int, set[str]] = {}
    for name in expected_distinct:
        for run in raw[name]["runs"]:
            ids_by_proc.setdefault(run["proc"], set()).add(run["hardware_id"])
            assert f"77{run['proc']}" == run["job"]["job_id"], name
    for proc, ids in ids_by_proc.items():
        assert len(ids) == 1, (proc, ids)
    assert set(hardware) >= {r["hardware_id"] for s in raw.values() for r in s["runs"]}
    leftovers = sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))
    assert leftovers == []  # no writer was killed: nothing may be left behind
