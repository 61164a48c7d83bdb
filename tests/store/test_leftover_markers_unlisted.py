"""A save never lists the markers' directory: its cost must not grow with the markers
past attempts left there (one per failed or killed attempt, kept for good). Leftovers
are still counted by readers, and the leftover marker of a run a save replaces is still
removed, found by that run's ``attempt_id``.

The listing is observed, not timed: the saving process runs under ``strace`` (real
system calls of a real process, with a timeout), and no ``getdents64`` may read the
markers' directory. The speed goal itself is in ``benchmarks/run.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers.process_life import REPO, run_script

from stagetimer import attempts
from stagetimer._format import ATTEMPTS_DIR
from stagetimer._store.markers import encode, new_attempt_id

pytestmark = pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")

#: Three stages saved (each with its marker) into argv[1]; the last, run_idx 0, resets
#: the stage (sequential): the runs before it, the leftover's among them, are dropped.
SAVES = textwrap.dedent("""
    import sys
    from stagetimer import Recorder, stage
    rec = Recorder(sys.argv[1], strict=True)
    for idx in (1, 2, 0):
        with stage("train", run_idx=idx, recorder=rec):
            pass
""")

FIRST = textwrap.dedent("""
    import sys
    from stagetimer import Recorder, stage
    with stage("train", run_idx=0, recorder=Recorder(sys.argv[1], strict=True)):
        pass
""")

LEFTOVERS = 300


def _fill(art: Path) -> None:
    """``LEFTOVERS`` failed attempts' markers, as writers leave them."""
    where = art / ATTEMPTS_DIR
    for k in range(LEFTOVERS):
        attempt_id = new_attempt_id()
        (where / f"{attempt_id}.json").write_bytes(encode({
            "format": 1, "attempt_id": attempt_id, "stage": "old", "run_idx": k,
            "started_at": "2026-11-01T10:00:00.000Z", "outcome": "raised",
            "exception": "ValueError", "seconds": 1.0,
            "ended_at": "2026-11-01T10:00:01.000Z",
        }))
        (where / f"{attempt_id}.json").chmod(0o644)


def test_saves_never_list_the_markers_directory(art: Path, tmp_path: Path) -> None:
    run_script(FIRST, art)
    (run,) = json.loads((art / "timings.json").read_text())["train"]["runs"]
    # The first attempt's marker, left as if its writer was killed after its publish.
    leftover = art / ATTEMPTS_DIR / f"{run['attempt_id']}.json"
    leftover.write_bytes(encode({"format": 1, "attempt_id": run["attempt_id"],
                                 "stage": "train", "run_idx": 0, "started_at": run.get(
                                     "started_at", "2026-11-01T10:00:00.000Z")}))
    _fill(art)
    trace = tmp_path / "trace.txt"

    done = subprocess.run(
        ["strace", "-f", "-y", "-e", "trace=getdents64", "-o", str(trace),
         sys.executable, "-c", SAVES, str(art)],
        capture_output=True, text=True, timeout=120, cwd="/tmp",
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )

    assert done.returncode == 0, done.stderr
    listed = [line for line in trace.read_text().splitlines()
              if f"{ATTEMPTS_DIR}>" in line]
    assert [] == listed, f"a save listed the markers' directory: {listed[:2]}"
    assert not leftover.exists()  # its run was replaced: found by its attempt_id
    found = attempts(str(art))
    assert LEFTOVERS == sum(a.state == "failed" for a in found)  # still counted
    assert [0] == [a.run_idx for a in found if a.state == "finished"]
