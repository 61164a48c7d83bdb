"""A leftover marker (its writer killed between publishing its run and removing its
marker) whose run is in ``timings.json`` is a finished attempt, whatever the next save
changes: a rerun of the same run under a new attempt id replaces the old run, and the
save that does so tells the leftover from the runs on disk before its own change, and
clears it."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from helpers.cli import run_cli
from helpers.process_life import run_script, stage_runs

from stagetimer import attempts

#: Killed at the exact point: its run published, its marker not yet removed.
KILLED_AFTER_PUBLISH = """
import os, signal, sys, time
import stagetimer._record.saver as saver
def killed(directory, ids):
    os.kill(os.getpid(), signal.SIGKILL)
saver.remove_markers = killed
from stagetimer import Recorder, stage
with stage("train", run_idx=0, recorder=Recorder(sys.argv[1])):
    time.sleep(0.2)
"""

#: The same run again, under the recorder settings argv[2] gives (JSON).
RERUN = """
import json, sys, time
from stagetimer import Recorder, stage
with stage("train", run_idx=0, recorder=Recorder(sys.argv[1], **json.loads(sys.argv[2]))):
    time.sleep(0.1)
"""

SETTINGS = {
    "sequential": {},
    "upsert": {"policy": "upsert"},
    "resume": {"resume_partial_runs": True, "completed_runs": 0},
}


@pytest.mark.parametrize("settings", list(SETTINGS.values()), ids=list(SETTINGS))
def test_a_rerun_clears_the_leftover_and_nothing_reads_as_lost(
    tmp_path: Path, settings: dict[str, object]
) -> None:
    done = run_script(KILLED_AFTER_PUBLISH, tmp_path, check=False)
    assert -signal.SIGKILL == done.returncode, done.stderr
    (first,) = stage_runs(tmp_path, "train")
    left = tmp_path / "timings.attempts" / f"{first['attempt_id']}.json"
    assert left.exists()  # the kill point: published, marker still there

    run_script(RERUN, tmp_path, json.dumps(settings))

    (second,) = stage_runs(tmp_path, "train")
    assert second["attempt_id"] != first["attempt_id"]  # the old run was replaced
    assert [] == list((tmp_path / "timings.attempts").glob("*.json"))
    assert ["finished"] == [a.state for a in attempts(tmp_path)]
    total = json.loads(run_cli("lost", tmp_path, "--json").stdout)["total"]
    assert (1.0, {}) == (total["effective_ratio"], total["lost_seconds"])
