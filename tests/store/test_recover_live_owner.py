"""``recover`` never races the writer that owns a rescue file: a live writer's file is
left alone and named, and what ``recover`` stores is never saved again by its writer.

Real processes throughout: writers are ``sys.executable`` children, killed with real
SIGKILL and SIGINT; each step has a timeout.
"""

from __future__ import annotations

import json
import random
import signal
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from helpers.process_life import stage_runs
from helpers.reliability import spawn_python

from stagetimer import recover

# Records run 0, 1, 2 while the lock is held elsewhere (each save times out: the records
# are pending and in its rescue file), says so, then waits for a line on stdin and closes.
LIVE_WRITER = """
import sys, warnings
from stagetimer import Recorder, record_timing
warnings.simplefilter("ignore")
rec = Recorder(sys.argv[1], lock_timeout=0.0)
for idx in range(3):
    record_timing("train", float(idx), run_idx=idx, recorder=rec)
print("pending", rec.pending, flush=True)
sys.stdin.readline()
rec.close()
print("pending", rec.pending, flush=True)
"""


def _hold_lock(art: Path) -> int:
    import fcntl
    import os

    fd = os.open(art / "timings.json.lock", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def test_a_live_writers_rescue_file_is_left_alone_and_its_writer_saves_it_once(
    art: Path,
) -> None:
    import os
    import subprocess
    import sys
    import textwrap

    art.mkdir(parents=True)
    fd = _hold_lock(art)
    writer = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(LIVE_WRITER), str(art)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert writer.stdout is not None and writer.stdin is not None
        assert "pending 3" == writer.stdout.readline().strip()
        os.close(fd)  # the lock is free: recover could take the file now

        (done,) = recover(art)

        assert done.skipped is not None and f"process {writer.pid}" in done.skipped
        assert "still runs" in done.skipped
        assert (0, 0, []) == (done.stored, done.already, stage_runs(art, "train"))
        writer.stdin.write("close\n")
        writer.stdin.flush()
        assert "pending 0" == writer.stdout.readline().strip()
        writer.wait(timeout=30)
    finally:
        writer.kill()
        writer.wait(timeout=30)

    assert [0, 1, 2] == [r["run_idx"] for r in stage_runs(art, "train")]
    assert [] == list(art.glob("timings.rescue-*.json"))
    assert [] == recover(art)


CHAOS_WRITER = """
import os, sys, warnings
from stagetimer import Recorder, record_timing
warnings.simplefilter("ignore")
directory, writer, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
# Sequential, every run_idx > 0: each save appends, so a record stored twice shows twice.
rec = Recorder(directory, lock_timeout=float(sys.argv[4]))
for k in range(count):
    record_timing("train", 1.0, run_idx=writer * 100000 + k + 1, recorder=rec)
    os.write(1, b"%d\\n" % k)  # the stage returned: this record must never be lost
"""


def _chaos(art: Path, seed: int, writers: int, timeout: float) -> dict[str, int]:
    """Writers killed at random (SIGKILL, SIGINT) while recover runs in a loop."""
    rng = random.Random(seed)
    art.mkdir(parents=True)
    stop = threading.Event()
    # runs, records it stored, live writers' files left alone, errors it raised
    recover_runs = [0, 0, 0, 0]

    def recover_loop() -> None:
        while not stop.is_set():
            try:
                done = recover(art, lock_timeout=5.0)
            except Exception:  # counted: recover must not fail on a writer's file
                recover_runs[3] += 1
                continue
            recover_runs[0] += 1
            recover_runs[1] += sum(d.stored for d in done)
            recover_runs[2] += sum(1 for d in done if getattr(d, "skipped", None))
            time.sleep(rng.uniform(0.0, 0.02))

    looper = threading.Thread(target=recover_loop, daemon=True)
    looper.start()
    finished: dict[int, list[int]] = {}
    try:
        for batch in range(0, writers, 4):
            procs = {
                w: spawn_python(CHAOS_WRITER, art, w, 400, timeout)
                for w in range(batch, min(batch + 4, writers))
            }
            first: dict[int, list[int]] = {}
            for w, proc in procs.items():  # each writer is recording before the kills
                assert proc.stdout is not None
                line = proc.stdout.readline()
                first[w] = [int(line)] if line.strip() else []
            time.sleep(rng.uniform(0.2, 1.0))
            for proc in procs.values():
                proc.send_signal(rng.choice([signal.SIGKILL, signal.SIGINT]))
                time.sleep(rng.uniform(0.0, 0.1))
            for w, proc in procs.items():
                out, _ = proc.communicate(timeout=60)
                finished[w] = first[w] + [int(line) for line in out.split()]
    finally:
        stop.set()
        looper.join(timeout=60)
    final = recover(art, lock_timeout=5.0)
    stored = Counter(r["run_idx"] for r in stage_runs(art, "train"))
    expected = {w * 100000 + k + 1 for w, ks in finished.items() for k in ks}
    return {
        "expected": len(expected),
        "stored": sum(stored.values()),
        "lost": len(expected - set(stored)),
        "doubled": sum(1 for n in stored.values() if n > 1),
        "rescue_files_left": len(list(art.glob("timings.rescue-*.json"))),
        "refused": sum(len(getattr(d, "refused", ())) for d in final),
        "recover_errors": recover_runs[3],
        "recover_runs": recover_runs[0],
        "stored_by_recover": recover_runs[1] + sum(d.stored for d in final),
        "left_alone": recover_runs[2],
    }


@pytest.mark.slow
@pytest.mark.parametrize(("seed", "timeout"), [(1, 0.0), (2, 0.05)])
def test_recover_racing_live_writers_under_random_kills_loses_and_doubles_nothing(
    tmp_path: Path, seed: int, timeout: float
) -> None:
    counts = _chaos(tmp_path / "art", seed, writers=8, timeout=timeout)
    print(json.dumps(counts))  # the figures, for the record (pytest -s)

    assert (0, 0, 0, 0, 0) == (
        counts["lost"], counts["doubled"], counts["rescue_files_left"], counts["refused"],
        counts["recover_errors"],
    ), counts
    assert counts["expected"] > 0 and counts["recover_runs"] > 0
