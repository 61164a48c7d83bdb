"""The scheduler probe: Slurm and PBS jobs, and the allow-list of their variables."""

from __future__ import annotations

import pytest

from stagetimer.hardware._scheduler import cpus_on_node, expand_cpus_per_node, probe_scheduler

# An sbatch array task's environment (Slurm 22.05 on the CI guest), with per-task noise.
SLURM_ENV = {
    "SLURM_JOB_ID": "1042",
    "SLURM_ARRAY_JOB_ID": "1040",
    "SLURM_ARRAY_TASK_ID": "2",
    "SLURM_JOB_NAME": "ippo",
    "SLURM_JOB_NODELIST": "vm",
    "SLURM_JOB_NUM_NODES": "1",
    "SLURM_NTASKS": "1",
    "SLURM_CPUS_PER_TASK": "1",
    "SLURM_CPUS_ON_NODE": "1",
    "SLURM_JOB_CPUS_PER_NODE": "1",
    "SLURM_MEM_PER_NODE": "1024",
    "SLURM_JOB_PARTITION": "debug",
    "SLURM_CLUSTER_NAME": "cluster",
    "SLURM_RESTART_COUNT": "0",
    "SLURM_PROCID": "0",
    "SLURM_LOCALID": "0",
    "SLURM_TASK_PID": "8123",
    "SLURMD_NODENAME": "vm",
    "SLURM_JOB_START_TIME": "1732900000",
    "SLURM_JOB_END_TIME": "1732903600",
    "SLURM_SUBMIT_DIR": "/work/main",
    "SLURM_CONF": "/etc/slurm/slurm.conf",
    "HOME": "/root",
}

PBS_ENV = {
    "PBS_JOBID": "4711[3].pbs",
    "PBS_JOBNAME": "nashconv",
    "PBS_QUEUE": "workq",
    "PBS_ARRAY_INDEX": "3",
    "PBS_ARRAY_ID": "4711[].pbs",
    "NCPUS": "8",
    "PBS_O_WORKDIR": "/home/u/exp",
    "PBS_NODEFILE": "/var/spool/pbs/aux/4711[3].pbs",
    "PBS_O_HOST": "login1",
    "PBS_ENVIRONMENT": "PBS_BATCH",
}


def test_slurm_job_is_described_by_its_allow_listed_variables() -> None:
    info, sources = probe_scheduler(SLURM_ENV)

    assert (info.kind, info.job_id) == ("slurm", "1042")
    assert {
        "SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_JOB_NAME",
        "SLURM_JOB_NODELIST", "SLURM_JOB_NUM_NODES", "SLURM_NTASKS", "SLURM_CPUS_PER_TASK",
        "SLURM_CPUS_ON_NODE", "SLURM_JOB_CPUS_PER_NODE", "SLURM_MEM_PER_NODE",
        "SLURM_JOB_PARTITION", "SLURM_CLUSTER_NAME", "SLURM_RESTART_COUNT",
    } == set(info.env)
    assert sources["scheduler.kind"] == "SLURM_JOB_ID"


@pytest.mark.parametrize(
    "noise",
    ["SLURM_PROCID", "SLURM_TASK_PID", "SLURMD_NODENAME", "SLURM_JOB_START_TIME",
     "SLURM_SUBMIT_DIR", "HOME"],
)
def test_slurm_per_task_volatile_and_path_variables_are_left_out(noise: str) -> None:
    info, _ = probe_scheduler(SLURM_ENV)

    assert noise not in info.env


def test_pbs_job_is_described_without_paths_or_submit_host() -> None:
    info, _ = probe_scheduler(PBS_ENV)

    assert (info.kind, info.job_id) == ("pbs", "4711[3].pbs")
    assert info.env == {
        "PBS_JOBID": "4711[3].pbs", "PBS_JOBNAME": "nashconv", "PBS_QUEUE": "workq",
        "PBS_ARRAY_INDEX": "3", "PBS_ARRAY_ID": "4711[].pbs", "NCPUS": "8",
    }


def test_torque_variables_are_kept() -> None:
    info, _ = probe_scheduler(
        {"PBS_JOBID": "17.torque", "PBS_NUM_NODES": "2", "PBS_NUM_PPN": "4", "PBS_NP": "8",
         "PBS_ARRAYID": "5"}
    )

    assert {"PBS_JOBID", "PBS_NUM_NODES", "PBS_NUM_PPN", "PBS_NP", "PBS_ARRAYID"} == set(info.env)


def test_no_job_gives_no_scheduler_and_no_variables() -> None:
    info, sources = probe_scheduler({"SLURM_CONF": "/etc/slurm/slurm.conf", "HOME": "/root"})

    assert (info.kind, info.job_id, info.env) == (None, None, {})
    assert "not a batch job" in sources["scheduler.kind"]


def test_slurm_wins_when_both_job_ids_are_set() -> None:
    info, _ = probe_scheduler({**PBS_ENV, "SLURM_JOB_ID": "9"})

    assert (info.kind, info.job_id, info.env) == ("slurm", "9", {"SLURM_JOB_ID": "9"})


@pytest.mark.parametrize(
    ("packed", "expanded"),
    [("72(x2),36", (72, 72, 36)), ("4", (4,)), ("2(x3)", (2, 2, 2)), ("72(x2", None)],
)
def test_job_cpus_per_node_expansion(packed: str, expanded: tuple[int, ...] | None) -> None:
    assert expanded == expand_cpus_per_node(packed)


@pytest.mark.parametrize(
    ("environ", "cpus"),
    [
        ({"SLURM_CPUS_ON_NODE": "8", "SLURM_JOB_CPUS_PER_NODE": "72(x2),36"}, 8),
        ({"SLURM_JOB_CPUS_PER_NODE": "72(x2),36", "SLURM_NODEID": "2"}, 36),
        ({"SLURM_JOB_CPUS_PER_NODE": "16"}, 16),
        ({"SLURM_JOB_CPUS_PER_NODE": "72(x2),36"}, None),
        ({"SLURM_JOB_CPUS_PER_NODE": "72(x2),36", "SLURM_NODEID": "3"}, None),
    ],
)
def test_cpus_on_this_node(environ: dict[str, str], cpus: int | None) -> None:
    assert cpus == cpus_on_node(environ)[0]
