"""The batch job the process runs in: Slurm or PBS, its id, and the variables describing it.

Only an explicit allow-list of variables is kept: those that describe the job
and its allocation (ids, array ids, nodes, tasks, CPUs, memory, GPUs, cluster,
partition or queue, account, QOS, restarts). Per-task or per-step values
(``SLURM_PROCID``, ``SLURM_LOCALID``, ``SLURM_TASK_PID``, ``SLURM_STEP_*``),
daemon details (``SLURMD_*``), times (``SLURM_JOB_START_TIME``) and paths
(``SLURM_SUBMIT_DIR``, ``PBS_O_WORKDIR``, ``PBS_NODEFILE``) are left out: they
are not hardware, and the volatile ones would split one machine's description.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from stagetimer.hardware._model import SchedulerInfo

__all__ = [
    "PBS_VARIABLES",
    "SLURM_VARIABLES",
    "cpus_on_node",
    "expand_cpus_per_node",
    "gpus_on_node",
    "probe_scheduler",
]

#: sbatch(1) OUTPUT ENVIRONMENT VARIABLES that describe the job and its allocation
SLURM_VARIABLES: tuple[str, ...] = (
    "SLURM_JOB_ID",
    "SLURM_JOB_NAME",
    "SLURM_ARRAY_JOB_ID",
    "SLURM_ARRAY_TASK_ID",
    "SLURM_ARRAY_TASK_COUNT",
    "SLURM_ARRAY_TASK_MIN",
    "SLURM_ARRAY_TASK_MAX",
    "SLURM_ARRAY_TASK_STEP",
    "SLURM_HET_SIZE",
    "SLURM_CLUSTER_NAME",
    "SLURM_JOB_PARTITION",
    "SLURM_JOB_ACCOUNT",
    "SLURM_JOB_QOS",
    "SLURM_JOB_RESERVATION",
    "SLURM_RESTART_COUNT",
    "SLURM_JOB_NODELIST",
    "SLURM_JOB_NUM_NODES",
    "SLURM_NODEID",
    "SLURM_NTASKS",
    "SLURM_NTASKS_PER_NODE",
    "SLURM_NTASKS_PER_CORE",
    "SLURM_NTASKS_PER_SOCKET",
    "SLURM_TASKS_PER_NODE",
    "SLURM_CPUS_PER_TASK",
    "SLURM_CPUS_ON_NODE",
    "SLURM_JOB_CPUS_PER_NODE",
    "SLURM_THREADS_PER_CORE",
    "SLURM_MEM_PER_NODE",
    "SLURM_MEM_PER_CPU",
    "SLURM_MEM_PER_GPU",
    "SLURM_GPUS",
    "SLURM_GPUS_ON_NODE",
    "SLURM_GPUS_PER_NODE",
    "SLURM_GPUS_PER_TASK",
    "SLURM_GPUS_PER_SOCKET",
    "SLURM_CPUS_PER_GPU",
    "SLURM_JOB_GPUS",
    "SLURM_GPU_BIND",
    "SLURM_TRES_PER_TASK",
)

#: OpenPBS and Torque job variables that describe the job (qsub(1B); Torque adds PBS_NUM_*)
PBS_VARIABLES: tuple[str, ...] = (
    "PBS_JOBID",
    "PBS_JOBNAME",
    "PBS_QUEUE",
    "PBS_SERVER",
    "PBS_ARRAY_INDEX",
    "PBS_ARRAY_ID",
    "PBS_ARRAYID",
    "PBS_NUM_NODES",
    "PBS_NUM_PPN",
    "PBS_NP",
    "PBS_NODENUM",
    "NCPUS",
)

_GROUP = re.compile(r"^(\d+)(?:\(x(\d+)\))?$")


def expand_cpus_per_node(value: str) -> tuple[int, ...] | None:
    """Expand Slurm's compressed CPU counts: ``72(x2),36`` → ``(72, 72, 36)``; None if malformed."""
    counts: list[int] = []
    for group in value.split(","):
        match = _GROUP.match(group.strip())
        if match is None:
            return None
        counts.extend([int(match.group(1))] * int(match.group(2) or 1))
    return tuple(counts)


def _count(environ: Mapping[str, str], name: str) -> int | None:
    """The whole number ``name`` holds (surrounding blanks allowed), or None if unset or not one."""
    raw = environ.get(name, "").strip()
    # isdecimal, not isdigit: int() refuses digits such as "²" that isdigit accepts.
    return int(raw) if raw.isdecimal() else None


def cpus_on_node(environ: Mapping[str, str]) -> tuple[int | None, str]:
    """The job's CPUs on this node, and the variables that said so (or why unknown).

    ``SLURM_CPUS_ON_NODE``, else ``SLURM_JOB_CPUS_PER_NODE`` expanded and indexed
    by ``SLURM_NODEID`` (a single entry needs no index).
    """
    cpus = _count(environ, "SLURM_CPUS_ON_NODE")
    if cpus is not None:
        return cpus, "SLURM_CPUS_ON_NODE"
    packed = environ.get("SLURM_JOB_CPUS_PER_NODE")
    if packed is None:
        return None, "neither SLURM_CPUS_ON_NODE nor SLURM_JOB_CPUS_PER_NODE is set"
    counts = expand_cpus_per_node(packed)
    if counts is None:
        return None, f"SLURM_JOB_CPUS_PER_NODE={packed!r} is malformed"
    node = _count(environ, "SLURM_NODEID")
    if node is not None:
        if node < len(counts):
            return counts[node], "SLURM_JOB_CPUS_PER_NODE[SLURM_NODEID]"
        return None, f"SLURM_NODEID={node} is beyond SLURM_JOB_CPUS_PER_NODE={packed!r}"
    if len(counts) == 1:
        return counts[0], "SLURM_JOB_CPUS_PER_NODE"
    return None, f"SLURM_JOB_CPUS_PER_NODE={packed!r} lists several nodes and SLURM_NODEID is unset"


def gpus_on_node(environ: Mapping[str, str]) -> tuple[int | None, str]:
    """The job's GPUs on this node (``SLURM_GPUS_ON_NODE``), or why unknown."""
    gpus = _count(environ, "SLURM_GPUS_ON_NODE")
    if gpus is not None:
        return gpus, "SLURM_GPUS_ON_NODE"
    return None, "SLURM_GPUS_ON_NODE is not a count"


def probe_scheduler(environ: Mapping[str, str]) -> tuple[SchedulerInfo, dict[str, str]]:
    """The scheduler part of the description and the source of each of its fields.

    Slurm wins when both ``SLURM_JOB_ID`` and ``PBS_JOBID`` are set (a Slurm job
    started from a PBS shell keeps the outer variables; the inner job is ours).
    """
    if environ.get("SLURM_JOB_ID"):
        kind, id_variable, names = "slurm", "SLURM_JOB_ID", SLURM_VARIABLES
    elif environ.get("PBS_JOBID"):
        kind, id_variable, names = "pbs", "PBS_JOBID", PBS_VARIABLES
    else:
        reason = "neither SLURM_JOB_ID nor PBS_JOBID is set: not a batch job"
        return SchedulerInfo(), {
            "scheduler.kind": reason,
            "scheduler.job_id": reason,
            "scheduler.env": reason,
        }
    env = {name: environ[name] for name in names if name in environ}
    info = SchedulerInfo(kind=kind, job_id=environ[id_variable], env=env)
    listed = ", ".join(sorted(env))
    return info, {
        "scheduler.kind": id_variable,
        "scheduler.job_id": id_variable,
        "scheduler.env": f"environment: {listed}",
    }
