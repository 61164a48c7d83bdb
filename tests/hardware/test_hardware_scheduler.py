"""The scheduler probe (a job's allocation) and job_identity (which job it is)."""

from __future__ import annotations

import pytest

from stagetimer.hardware import job_identity
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


def test_slurm_job_is_described_by_its_allocation_variables() -> None:
    info, sources = probe_scheduler(SLURM_ENV)

    assert ("slurm", None) == (info.kind, info.job_id)
    assert {
        "SLURM_JOB_NUM_NODES": "1",
        "SLURM_NTASKS": "1",
        "SLURM_CPUS_PER_TASK": "1",
        "SLURM_CPUS_ON_NODE": "1",
        "SLURM_JOB_CPUS_PER_NODE": "1",
        "SLURM_MEM_PER_NODE": "1024",
        "SLURM_JOB_PARTITION": "debug",
    } == info.env
    assert "SLURM_JOB_ID is set" == sources["scheduler.kind"]


@pytest.mark.parametrize(
    "identity",
    [
        "SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_JOB_NAME",
        "SLURM_JOB_NODELIST", "SLURM_RESTART_COUNT", "SLURMD_NODENAME", "SLURM_SUBMIT_DIR",
        "SLURM_PROCID", "SLURM_TASK_PID", "SLURM_JOB_START_TIME", "HOME",
    ],
)  # fmt: skip
def test_slurm_job_identity_per_task_and_volatile_variables_are_not_hardware(
    identity: str,
) -> None:
    info, sources = probe_scheduler(SLURM_ENV)

    assert identity not in info.env
    assert all(SLURM_ENV[identity] not in where for where in sources.values())


def test_two_tasks_of_one_array_share_the_scheduler_part() -> None:
    other_task = {
        **SLURM_ENV, "SLURM_JOB_ID": "1043", "SLURM_ARRAY_TASK_ID": "3",
        "SLURM_RESTART_COUNT": "1", "SLURM_TASK_PID": "8200",
    }  # fmt: skip

    assert probe_scheduler(SLURM_ENV) == probe_scheduler(other_task)


def test_pbs_job_is_described_by_its_queue_and_cpus() -> None:
    info, _ = probe_scheduler(PBS_ENV)

    assert ("pbs", None, {"PBS_QUEUE": "workq", "NCPUS": "8"}) == (info.kind, info.job_id, info.env)


def test_torque_allocation_variables_are_kept() -> None:
    info, _ = probe_scheduler(
        {"PBS_JOBID": "17.torque", "PBS_NUM_NODES": "2", "PBS_NUM_PPN": "4", "PBS_NP": "8",
         "PBS_ARRAYID": "5"}
    )  # fmt: skip

    assert {"PBS_NUM_NODES": "2", "PBS_NUM_PPN": "4", "PBS_NP": "8"} == info.env


def test_no_job_gives_no_scheduler_and_no_variables() -> None:
    info, sources = probe_scheduler({"SLURM_CONF": "/etc/slurm/slurm.conf", "HOME": "/root"})

    assert (info.kind, info.job_id, info.env) == (None, None, {})
    assert "not a batch job" in sources["scheduler.kind"]


def test_slurm_wins_when_both_job_ids_are_set() -> None:
    info, sources = probe_scheduler({**PBS_ENV, "SLURM_JOB_ID": "9"})

    expected = (("slurm", {}), "no allocation variable is set")
    assert expected == ((info.kind, info.env), sources["scheduler.env"])


def test_slurm_job_identity_names_the_task_and_where_it_ran() -> None:
    expected = {
        "scheduler": "slurm",
        "job_id": "1042",
        "array_job_id": "1040",
        "array_task_id": "2",
        "restart_count": "0",
        "node_name": "vm",
        "node_list": "vm",
        "submit_dir": "/work/main",
    }
    assert expected == job_identity(SLURM_ENV)


def test_slurm_step_id_is_part_of_the_identity_inside_a_step() -> None:
    identity = job_identity({"SLURM_JOB_ID": "7", "SLURM_STEP_ID": "0"})

    assert {"scheduler": "slurm", "job_id": "7", "step_id": "0"} == identity


def test_pbs_job_identity_names_the_array_task_and_submit_host() -> None:
    expected = {
        "scheduler": "pbs",
        "job_id": "4711[3].pbs",
        "array_job_id": "4711[].pbs",
        "array_task_id": "3",
        "submit_host": "login1",
        "submit_dir": "/home/u/exp",
    }
    assert expected == job_identity(PBS_ENV)


def test_torque_array_index_is_the_array_task_id() -> None:
    identity = job_identity({"PBS_JOBID": "17-5.torque", "PBS_ARRAYID": "5"})

    assert {"scheduler": "pbs", "job_id": "17-5.torque", "array_task_id": "5"} == identity


def test_empty_identity_variables_are_left_out() -> None:
    identity = job_identity({"SLURM_JOB_ID": "7", "SLURM_ARRAY_TASK_ID": "", "SLURMD_NODENAME": ""})

    assert {"scheduler": "slurm", "job_id": "7"} == identity


def test_no_job_has_no_identity() -> None:
    assert job_identity({"SLURM_CONF": "/etc/slurm/slurm.conf", "SLURM_JOB_ID": ""}) is None


def test_job_identity_reads_the_process_environment_by_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("SLURM_JOB_ID", "PBS_JOBID", "SLURM_ARRAY_TASK_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SLURM_JOB_ID", "31")
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "4")

    assert {"scheduler": "slurm", "job_id": "31", "array_task_id": "4"} == job_identity()


def test_each_call_returns_its_own_dict() -> None:
    first = job_identity(SLURM_ENV)
    assert first is not None
    first["job_id"] = "changed"

    assert "1042" == (job_identity(SLURM_ENV) or {})["job_id"]


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
