"""``stagetimer watch --json`` following a real job array: 12 tasks, throttle ``%2``.

The array's size and throttle come from Slurm (``scontrol show job``): the stage has no
``expected_runs``, so the 12 runs expected are the array's tasks. The watcher runs
until everything is done and exits 0 by itself (no ``--once``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.slurm_cluster import (
    SlurmCluster,
)
from helpers.slurm_fixtures import cluster_or_skip, require_slurm

pytestmark = [pytest.mark.slow, pytest.mark.root]

REPO = Path(__file__).resolve().parent.parent

JOB = """
import os, sys, time
from stagetimer import Recorder, stage
task = int(os.environ["SLURM_ARRAY_TASK_ID"])
with stage("train", run_idx=task, recorder=Recorder(sys.argv[1], policy="upsert")):
    time.sleep(2.0 + task % 3)
"""


@pytest.fixture(scope="module")
def cluster() -> Iterator[SlurmCluster]:
    require_slurm()
    yield from cluster_or_skip(constrain_ram=False)


def test_watch_follows_a_throttled_array_to_its_end(cluster: SlurmCluster,
                                                    tmp_path: Path) -> None:
    art = tmp_path / "art"
    art.mkdir()
    job = tmp_path / "job.py"
    job.write_text(JOB)
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/bash\nexec {sys.executable} {job} {art}\n")
    script.chmod(0o755)
    env = {"PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"}
    cluster.submit(script, "--array=0-11%2", "--mem=100M",
                   f"--output={tmp_path}/out-%A_%a", cwd=tmp_path, env=env)

    watched = subprocess.run(
        [sys.executable, "-m", "stagetimer", "watch", "--json", "--interval", "0.5", str(art)],
        env={**os.environ, **cluster.env, **env}, capture_output=True, text=True,
        timeout=300,
    )

    assert watched.returncode == 0, watched.stderr + cluster.logs()
    snapshots = [json.loads(line) for line in watched.stdout.splitlines()]
    stages = [s["directories"][0]["stages"][0] for s in snapshots
              if s["directories"] and s["directories"][0]["stages"]]
    assert len(stages) >= 10, watched.stdout
    done = [s["done"] for s in stages]
    pending = [s["pending"] for s in stages]
    assert done == sorted(done) and done[-1] == 12
    assert pending == sorted(pending, reverse=True) and pending[-1] == 0
    assert pending[0] >= 8  # the array's size came from Slurm: 12 expected, not the runs seen
    assert max(s["running"] for s in stages) == 2 and all(s["running"] <= 2 for s in stages)
    # the time to go falls: its median over the first third above the last third's
    etas = [s["eta_seconds"]["p50"] for s in stages if s["eta_seconds"] is not None]
    third = max(len(etas) // 3, 1)
    assert sum(etas[:third]) / third > sum(etas[-third:]) / third
    last = stages[-1]
    assert (last["done"], last["running"], last["pending"]) == (12, 0, 0)
    assert snapshots[-1]["eta_seconds"] == {"p50": 0.0, "p90": 0.0}


PLAN_JOB = """
import os, sys, time
from stagetimer import Recorder, stage
task = int(os.environ["SLURM_ARRAY_TASK_ID"])
with stage("train", run_idx=task, recorder=Recorder(sys.argv[1], policy="upsert")):
    time.sleep(0.5 if task < 3 else 600)
"""


def test_plan_counts_a_timed_out_task_as_at_least_its_limit(cluster: SlurmCluster,
                                                           tmp_path: Path) -> None:
    """Three tasks finish in half a second, two run into a 20 s time limit: the
    suggestion is above the limit (their partial time taken as durations, or left out,
    would put it near a second)."""
    art = tmp_path / "art"
    art.mkdir()
    job = tmp_path / "job.py"
    job.write_text(PLAN_JOB)
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/bash\nexec {sys.executable} {job} {art}\n")
    script.chmod(0o755)
    env = {"PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"}
    array = cluster.submit(script, "--array=0-4", "--time=0:20", "--mem=100M",
                           f"--output={tmp_path}/out-%A_%a", cwd=tmp_path, env=env)
    cluster.wait(array, timeout=240)

    ran = subprocess.run([sys.executable, "-m", "stagetimer", "plan", "--json", str(art)],
                         env={**os.environ, **cluster.env, **env}, capture_output=True,
                         text=True, timeout=120)

    assert ran.returncode == 0, ran.stderr
    from stagetimer import attempts

    seen = [(a.run_idx, a.state, a.cause, a.hardware_id, a.seconds) for a in attempts(art)]
    [suggestion] = json.loads(ran.stdout)["suggestions"]
    assert (suggestion["ended"], suggestion["censored"]) == (3, 2), "; ".join(map(str, seen))
    assert suggestion["time_seconds"] >= 20.0
