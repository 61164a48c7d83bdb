"""A stale rescue file after a rerun: recovering puts records back only where they are
missing (stage, run_idx, label, rank), never over a run saved since, under both policies.

Real processes: a writer whose saves fail dies (SIGKILL) leaving its rescue file, the
experiment is rerun and saves, then ``recover`` runs.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
from helpers.process_life import run_script, stage_runs

from stagetimer import recover

DIES_WITH_A_RESCUE_FILE = """
import os, signal, sys, warnings
from stagetimer import Recorder, record_timing
warnings.simplefilter("ignore")
directory, policy = sys.argv[1], sys.argv[2]
rec = Recorder(directory, policy=policy)
for idx in map(int, sys.argv[3:]):
    record_timing("ippo_train", 100.0 + idx, run_idx=idx, recorder=rec)  # fails: corrupt file
os.kill(os.getpid(), signal.SIGKILL)
"""

RERUN = """
import sys
from stagetimer import Recorder, record_timing
directory, policy, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
rec = Recorder(directory, policy=policy, strict=True)
for idx in range(runs):
    record_timing("ippo_train", float(idx), run_idx=idx, recorder=rec)
record_timing("ippo_train_auto_resume", 9.0, run_idx=runs - 1, recorder=rec)
"""


def _killed_writer(art: Path, policy: str, *runs: int) -> Path:
    art.mkdir(parents=True, exist_ok=True)
    (art / "timings.json").write_text("{broken")  # every save fails
    done = run_script(DIES_WITH_A_RESCUE_FILE, art, policy, *runs, check=False)
    assert -signal.SIGKILL == done.returncode, done.stderr
    (art / "timings.json").unlink()
    (rescue,) = art.glob("timings.rescue-*.json")
    return rescue


@pytest.mark.parametrize("policy", ["sequential", "upsert"])
def test_a_stale_run_never_replaces_the_rerun_and_the_continuation_survives(
    art: Path, policy: str
) -> None:
    rescue = _killed_writer(art, policy, 0, 3)
    run_script(RERUN, art, policy, 5)

    # record_timing writes no started_at: only the user can say the stored runs win.
    (done,) = recover(art, prefer="stored")

    seconds = [r["seconds"] for r in stage_runs(art, "ippo_train")]
    expected = [0.0, 1.0, 2.0, 3.0, 4.0]
    lost = [s for s in expected if s not in seconds]
    doubled = [s for s in set(seconds) if seconds.count(s) > 1]
    stale_stored = [s for s in seconds if s >= 100.0]
    assert (expected, [], [], []) == (seconds, lost, doubled, stale_stored)
    assert (0, 2) == (done.stored, done.already)
    assert [9.0] == [r["seconds"] for r in stage_runs(art, "ippo_train_auto_resume")]
    assert not rescue.exists()


@pytest.mark.parametrize("policy", ["sequential", "upsert"])
def test_a_rescued_run_the_rerun_did_not_make_is_put_back_in_run_idx_order(
    art: Path, policy: str
) -> None:
    _killed_writer(art, policy, 2, 7)
    run_script(RERUN, art, policy, 5)

    (done,) = recover(art, prefer="stored")

    assert (1, 1) == (done.stored, done.already)
    runs = stage_runs(art, "ippo_train")
    assert [(0, 0.0), (1, 1.0), (2, 2.0), (3, 3.0), (4, 4.0), (7, 107.0)] == [
        (r["run_idx"], r["seconds"]) for r in runs
    ]
    data_total = sum(r["seconds"] for r in runs)
    import json

    assert data_total == json.loads((art / "timings.json").read_text())["ippo_train"][
        "total_seconds"
    ]


def test_the_rescue_file_of_a_killed_writer_is_folded_without_a_rerun(art: Path) -> None:
    _killed_writer(art, "sequential", 0, 1, 2)

    (done,) = recover(art)

    assert (3, 0) == (done.stored, done.already)
    assert [100.0, 101.0, 102.0] == [r["seconds"] for r in stage_runs(art, "ippo_train")]
    assert [] == recover(art)


def test_a_process_that_reuses_the_dead_writers_pid_is_not_taken_for_it(art: Path) -> None:
    # Liveness is the pid with its start time: a pid alive now but started later names
    # another process, and the file is folded.
    rescue = _killed_writer(art, "sequential", 0)
    import json

    payload = json.loads(rescue.read_text())
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        payload["owner"]["pid"] = sleeper.pid  # alive, but not the writer
        rescue.write_text(json.dumps(payload))

        (done,) = recover(art)
    finally:
        os.kill(sleeper.pid, signal.SIGKILL)
        sleeper.wait()
    assert (1, None) == (done.stored, done.skipped)
