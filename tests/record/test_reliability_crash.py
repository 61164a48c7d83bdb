"""A writer killed with SIGKILL at random moments never leaves a sidecar torn or a record lost.

docs/guarantees.md: the save protocol (temporary file in the same directory, fsync,
``os.replace``) means a reader sees the old file or the new one, never a part;
what ``record_timing`` acknowledged (it returned, ``strict=True``) is on disk; the
hardware sidecar is saved before the timings that reference it. One directory is
reused for every kill, so each writer starts from the debris of the one before.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from pathlib import Path

import pytest
from helpers.reliability import TMP_NAMES, Watcher, assert_sidecars_sound, spawn_python

from stagetimer import Recorder, load_timings, record_timing

N_KILLS = 30
SEED = 20240229

# Records in a loop; prints one "ack" line (flushed) each time record_timing returned.
# Even records are upsert runs of one stage all writers share, odd ones distinct stages.
WRITER = """
import sys
from stagetimer import Recorder, record_timing

directory, writer = sys.argv[1], int(sys.argv[2])
rec = Recorder(directory, policy="upsert", strict=True)
i = 0
while True:
    if i % 2 == 0:
        name, run_idx = "shared", writer * 100000 + i
    else:
        name, run_idx = f"w{writer:03d}_{i:05d}", None
    record_timing(name, writer + i / 1000, run_idx=run_idx, recorder=rec, writer=writer)
    sys.stdout.write(f"ack {name} {run_idx}\\n")  # one write: a kill cannot split it
    sys.stdout.flush()
    i += 1
"""


def _kill_one(directory: Path, writer: int, rng: random.Random) -> list[str]:
    """Run one writer, SIGKILL it at a random moment; return its acknowledgements."""
    # A job id per writer: each describes new hardware, so a kill can also fall between
    # the hardware save and the first timings save that references it.
    proc = spawn_python(WRITER, directory, writer, env={"SLURM_JOB_ID": f"9{writer:03d}"})
    assert proc.stdout is not None
    lines: list[str] = []
    first_ack = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.endswith("\n"):  # a line the kill cut short was not acknowledged
                lines.append(line[:-1])
                first_ack.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        if rng.random() < 0.2:
            # Sometimes while it starts up or saves its very first record.
            time.sleep(rng.uniform(0.05, 0.6))
        else:
            deadline = time.monotonic() + 30
            while not first_ack.wait(0.05) and proc.poll() is None:
                assert time.monotonic() < deadline, "writer never acknowledged a record"
            time.sleep(rng.uniform(0.0, 0.25))
        if proc.poll() is not None:
            assert proc.stderr is not None
            pytest.fail(f"writer {writer} exited {proc.returncode}: {proc.stderr.read()}")
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:  # pragma: no cover - only when an assertion failed above
            proc.kill()
            proc.wait()
    reader.join(timeout=30)
    assert proc.stderr is not None
    proc.stderr.close()
    assert proc.stdout is not None
    proc.stdout.close()
    return lines


def _check_after_kill(
    directory: Path, writer: int, rng: random.Random, acknowledged: set[tuple[str, int | None]]
) -> set[tuple[str, int | None]]:
    """Kill one writer; check the files; return what it acknowledged."""
    acks = set()
    for line in _kill_one(directory, writer, rng):
        _, name, run_idx = line.split(" ")
        acks.add((name, None if run_idx == "None" else int(run_idx)))
    if not (directory / "timings.json").exists():
        assert set() == acknowledged | acks
        return acks
    raw = assert_sidecars_sound(directory)  # both parse, ids resolve, tmp files bounded
    present = {(name, run.get("run_idx")) for name, stage in raw.items() for run in stage["runs"]}
    missing = (acknowledged | acks) - present
    assert set() == missing, f"after kill {writer}"
    return acks


@pytest.mark.slow
def test_sigkill_at_random_moments_keeps_files_whole_and_acknowledged_records(
    tmp_path: Path,
) -> None:
    rng = random.Random(SEED)
    directory = tmp_path / "artifact"
    acknowledged: set[tuple[str, int | None]] = set()
    debris_seen = 0
    deadline = time.monotonic() + 60
    watcher = Watcher(directory)  # a reader that must never see a torn file or dangling id
    with watcher:
        for writer in range(N_KILLS):
            acknowledged |= _check_after_kill(directory, writer, rng, acknowledged)
            debris_seen += any((directory / name).exists() for name in TMP_NAMES)
            assert time.monotonic() < deadline, "the crash loop is far slower than expected"
    assert [] == watcher.problems[:5]
    assert watcher.looks > N_KILLS  # it really read the files while writers ran
    assert len(acknowledged) > N_KILLS  # the writers really got to record between kills

    # Readers ignore the debris; the next save clears the temporary file it uses.
    load_timings(directory)
    record_timing("after", 1.0, recorder=Recorder(directory, strict=True))
    assert not (directory / ".timings.json.tmp").exists()
    assert ("after", None) in {
        (name, run.run_idx) for name, s in load_timings(directory).stages.items() for run in s.runs
    }
    print(
        f"{N_KILLS} kills, {len(acknowledged)} acknowledged records, "
        f"temporary-file debris seen after {debris_seen} kills, {watcher.looks} reader looks"
    )
