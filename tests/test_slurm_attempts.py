"""Attempts on a real Slurm cluster: a task past its time limit, a task cancelled inside
its stage, a requeued task, a task killed by its memory limit — each read back by
``stagetimer.attempts`` with the cause Slurm's own view gives.

The cluster (``slurm_cluster.py``) runs on this machine, so the same-machine evidence
(the writer's pid is gone) decides that an attempt was killed and Slurm names the
cause; a reader in a UTS namespace with another host name sees the markers as
another machine's and decides from Slurm alone. No slurmdbd: ``scontrol show job``
answers for MinJobAge (300 s) after a job ends, which these reads fall within.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.slurm_cluster import (
    SlurmCluster,
)
from helpers.slurm_fixtures import CGROUP_V1_MEMORY, cluster_or_skip, require_slurm

from stagetimer import Attempt, attempts

pytestmark = [pytest.mark.slow, pytest.mark.root]

REPO = Path(__file__).resolve().parent.parent
SECOND = datetime.timedelta(seconds=1)

#: The job: a finished ``prepare``, then ``train`` run ``run_idx`` (the array task),
#: which says it is inside (``in-<restart>``) and then does what ``mode`` says.
JOB = """
import os, sys, time
from stagetimer import Recorder, stage
art, mode = sys.argv[1], sys.argv[2]
task = int(os.environ.get("SLURM_ARRAY_TASK_ID", "0"))
restart = os.environ.get("SLURM_RESTART_COUNT", "0")
rec = Recorder(art)
if mode != "first":  # "first": train is the process's first stage (no hardware yet)
    with stage("prepare", run_idx=task, recorder=rec):
        pass
with stage("train", run_idx=task, recorder=rec):
    open(os.path.join(art, f"in-{task}-{restart}"), "w").close()
    if mode == "oom":
        held = [b"x" * (16 << 20) for _ in range(64)]  # 1 GiB, touched, over a 100 MiB limit
    elif mode in ("array", "first") and task == 0 or mode == "requeue" and restart != "0":
        pass
    else:
        time.sleep(600)
"""


@pytest.fixture(scope="module")
def slurm_installed() -> None:
    require_slurm()


@pytest.fixture(scope="module")
def cluster(slurm_installed: None) -> Iterator[SlurmCluster]:
    yield from cluster_or_skip(constrain_ram=False)


@pytest.fixture
def cluster_with_cgroups(slurm_installed: None) -> Iterator[SlurmCluster]:
    if not (CGROUP_V1_MEMORY / "memory.limit_in_bytes").is_file():
        pytest.skip(f"a memory limit Slurm enforces needs {CGROUP_V1_MEMORY} (cgroup v1)")
    yield from cluster_or_skip(constrain_ram=True)


@pytest.fixture
def reader_env(cluster: SlurmCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """Readers in this process ask this cluster."""
    monkeypatch.setenv("SLURM_CONF", cluster.env["SLURM_CONF"])


def submit(cluster: SlurmCluster, tmp_path: Path, mode: str, *options: str) -> tuple[str, Path]:
    """The job in ``mode``; returns its id and its artifact directory."""
    art = tmp_path / "art"
    art.mkdir(exist_ok=True)
    job = tmp_path / "job.py"
    job.write_text(JOB)
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/bash\nexec {sys.executable} {job} {art} {mode}\n")
    script.chmod(0o755)
    env = {"PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"}
    job_id = cluster.submit(script, "--mem=100M", f"--output={tmp_path}/out-%j", *options,
                            cwd=tmp_path, env=env)
    return job_id, art


def wait_inside(cluster: SlurmCluster, art: Path, task: int = 0, restart: int = 0) -> None:
    cluster.wait_for(f"task {task} to enter its stage",
                     lambda: (art / f"in-{task}-{restart}").exists(), timeout=120)


def utc(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text).replace(tzinfo=datetime.timezone.utc)


def end_of(cluster: SlurmCluster, job_id: str) -> datetime.datetime:
    """The job's EndTime as Slurm prints it under TZ=UTC."""
    env = {**cluster.env, "TZ": "UTC"}
    line = subprocess.run(["scontrol", "-o", "show", "job", job_id], env=env, text=True,
                          capture_output=True, timeout=30, check=True).stdout
    return utc(line.split("EndTime=")[1].split()[0])


def within_its_end(end: datetime.datetime, bound: datetime.datetime | None) -> bool:
    """Whether ``bound`` lies in the second Slurm printed as ``end`` (whole seconds,
    truncated; the marker's own times or the reader's clock may narrow it within)."""
    return bound is not None and end <= bound <= end + SECOND


def trains(art: Path) -> list[Attempt]:
    return sorted((a for a in attempts(art) if a.stage == "train"),
                  key=lambda a: (a.run_idx or 0, a.started_at or datetime.datetime.min))


def test_an_array_task_past_its_time_limit_is_killed_by_timeout(
    cluster: SlurmCluster, tmp_path: Path, reader_env: None
) -> None:
    array, art = submit(cluster, tmp_path, "array", "--array=0-1", "--time=0:05")
    cluster.wait(array, timeout=240)
    task_1 = cluster.job_fields(f"{array}_1")
    assert "TIMEOUT" == task_1["JobState"], task_1

    done, late = trains(art)

    assert ("finished", 0) == (done.state, done.run_idx)
    assert ("killed", "timeout", 1) == (late.state, late.cause, late.run_idx)
    assert late.ended_between is not None
    assert within_its_end(end_of(cluster, task_1["JobId"]), late.ended_between[0])
    assert f"Slurm job {task_1['JobId']} is TIMEOUT" in late.evidence
    assert {"job_id": task_1["JobId"], "array_task_id": "1"}.items() <= (late.job or {}).items()


def test_a_task_cancelled_inside_its_stage_is_killed_by_cancel(
    cluster: SlurmCluster, tmp_path: Path, reader_env: None
) -> None:
    job_id, art = submit(cluster, tmp_path, "sleep")
    wait_inside(cluster, art)
    cluster.command("scancel", job_id)
    cluster.wait(job_id, timeout=60)

    (killed,) = trains(art)

    assert ("killed", "cancelled") == (killed.state, killed.cause)
    assert killed.ended_between is not None
    assert within_its_end(end_of(cluster, job_id), killed.ended_between[0])
    assert "on this machine is gone" in killed.evidence
    assert f"Slurm job {job_id} is CANCELLED" in killed.evidence


def test_a_task_cancelled_in_its_first_stage_is_lost_alike_in_lost_and_compute(
    cluster: SlurmCluster, tmp_path: Path
) -> None:
    array, art = submit(cluster, tmp_path, "first", "--array=0-1")
    wait_inside(cluster, art, task=1)
    cluster.wait_for("task 0 to finish", lambda: (art / "timings.json").exists(), timeout=120)
    cluster.command("scancel", array)
    cluster.wait(array, timeout=60)

    def read(command: str) -> dict[str, Any]:
        done = subprocess.run([sys.executable, "-m", "stagetimer", command, "--json", str(art)],
                              env={**os.environ, **cluster.env}, cwd=tmp_path, text=True,
                              capture_output=True, timeout=120, check=False)
        assert 0 == done.returncode, done.stderr
        return json.loads(done.stdout)  # type: ignore[no-any-return]

    lost, compute = read("lost"), read("compute")

    (train,) = [g for g in lost["groups"] if g["stage"] == "train"]
    (hardware,) = compute["hardware"]
    assert ({"finished": 1, "killed": 1}, hardware["hardware_id"]) == (
        train["attempts"], train["hardware_id"])  # the node's one description
    assert 1 == hardware["lost"]["attempts"]
    assert {"attempts": 0, "wall_seconds": 0.0} == compute["not_described_lost"]
    assert sum(lost["total"]["lost_seconds"].values()) == hardware["lost"]["wall_seconds"]


def test_a_reader_on_another_host_decides_from_slurm_alone(
    cluster: SlurmCluster, tmp_path: Path
) -> None:
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare(1) for a host name of its own")
    job_id, art = submit(cluster, tmp_path, "sleep")
    wait_inside(cluster, art)
    cluster.command("scancel", job_id)
    cluster.wait(job_id, timeout=60)
    read = (f"hostname reader-elsewhere && {sys.executable} -m stagetimer lost --json {art}")

    done = subprocess.run(["unshare", "--uts", "sh", "-c", read], env=cluster.env, text=True,
                          capture_output=True, timeout=120, check=False)

    assert 0 == done.returncode, done.stderr
    (train,) = [g for g in json.loads(done.stdout)["groups"] if g["stage"] == "train"]
    assert {"killed": 1} == train["attempts"]
    assert ["cancelled"] == list(train["lost_seconds"])


def test_a_requeued_task_has_two_attempts_and_one_run(
    cluster: SlurmCluster, tmp_path: Path, reader_env: None
) -> None:
    job_id, art = submit(cluster, tmp_path, "requeue", "--requeue")
    wait_inside(cluster, art)
    assert 0 == cluster.command("scontrol", "requeue", job_id).returncode
    # Once requeued (its processes gone, pending again), a job waits 120 s before it may
    # start again (its BeginTime): let it start now.
    cluster.wait_for("the job to be requeued",
                     lambda: cluster.job_fields(job_id).get("JobState") == "PENDING")
    cluster.command("scontrol", "update", f"JobId={job_id}", "StartTime=now")
    cluster.wait_for("the job to run again", lambda: (art / "in-0-1").exists(), timeout=120)
    cluster.wait(job_id, timeout=60)

    first, second = trains(art)
    (run,) = json.loads((art / "timings.json").read_text())["train"]["runs"]

    assert ("killed", "finished") == (first.state, second.state)
    assert run["attempt_id"] == second.attempt_id != first.attempt_id
    assert "Slurm requeued job" in first.evidence
    assert first.ended_between is not None and second.started_at is not None
    low, high = first.ended_between
    assert high is not None and low is not None and low <= high <= second.started_at


def test_a_task_over_its_memory_limit_is_killed_by_out_of_memory(
    cluster_with_cgroups: SlurmCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLURM_CONF", cluster_with_cgroups.env["SLURM_CONF"])
    job_id, art = submit(cluster_with_cgroups, tmp_path, "oom")
    cluster_with_cgroups.wait(job_id, timeout=120)
    assert "OUT_OF_MEMORY" == cluster_with_cgroups.job_fields(job_id)["JobState"]

    (killed,) = trains(art)

    assert ("killed", "out_of_memory") == (killed.state, killed.cause)
    assert killed.ended_between is not None
    assert within_its_end(end_of(cluster_with_cgroups, job_id), killed.ended_between[1])
    assert f"Slurm job {job_id} is OUT_OF_MEMORY" in killed.evidence
