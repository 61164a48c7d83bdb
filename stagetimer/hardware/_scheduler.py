"""The batch job the process runs in: its allocation (hardware) and its identity (not).

Two things come from a Slurm or PBS job's environment, and they go to different
places. What describes the **allocation** — partition or queue, CPUs per task and
on the node, memory per node, CPU or GPU, GPUs, node and task counts — is part of
the hardware description (``scheduler.env``). What **identifies** the job — its
id, the array job and task ids, the step, the restart count, the node's name, the
node list, the submit host and directory — is not hardware: it goes to each run's
``job`` key (:func:`job_identity`), so that the tasks of one job array on one
node share one description. Per-task values (``SLURM_PROCID``, ``SLURM_TASK_PID``),
times (``SLURM_JOB_START_TIME``) and paths (``PBS_NODEFILE``) are in neither.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from stagetimer._system.text import json_text
from stagetimer.hardware._model import SchedulerInfo

__all__ = [
    "PBS_IDENTITY",
    "PBS_VARIABLES",
    "SLURM_IDENTITY",
    "SLURM_VARIABLES",
    "cpus_on_node",
    "expand_cpus_per_node",
    "gpus_on_node",
    "job_identity",
    "probe_scheduler",
]

#: sbatch(1) OUTPUT ENVIRONMENT VARIABLES that describe the job's allocation
SLURM_VARIABLES: tuple[str, ...] = (
    "SLURM_JOB_PARTITION",
    "SLURM_JOB_NUM_NODES",
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
    "SLURM_TRES_PER_TASK",
)

#: OpenPBS and Torque variables that describe the allocation (qsub(1B); Torque adds PBS_NUM_*)
PBS_VARIABLES: tuple[str, ...] = (
    "PBS_QUEUE",
    "PBS_NUM_NODES",
    "PBS_NUM_PPN",
    "PBS_NP",
    "NCPUS",
)

#: key of a run's ``job`` -> the Slurm variable it is read from (sbatch(1), srun(1))
SLURM_IDENTITY: tuple[tuple[str, str], ...] = (
    ("job_id", "SLURM_JOB_ID"),
    ("array_job_id", "SLURM_ARRAY_JOB_ID"),
    ("array_task_id", "SLURM_ARRAY_TASK_ID"),
    ("step_id", "SLURM_STEP_ID"),
    ("restart_count", "SLURM_RESTART_COUNT"),
    ("node_name", "SLURMD_NODENAME"),
    ("node_list", "SLURM_JOB_NODELIST"),
    ("submit_host", "SLURM_SUBMIT_HOST"),
    ("submit_dir", "SLURM_SUBMIT_DIR"),
)

#: the same for PBS: OpenPBS names first, then Torque's (qsub(1B), Torque's qsub(1))
PBS_IDENTITY: tuple[tuple[str, str], ...] = (
    ("job_id", "PBS_JOBID"),
    ("array_job_id", "PBS_ARRAY_ID"),
    ("array_task_id", "PBS_ARRAY_INDEX"),
    ("array_task_id", "PBS_ARRAYID"),
    ("submit_host", "PBS_O_HOST"),
    ("submit_dir", "PBS_O_WORKDIR"),
)


#: each scheduler's identity variables
_IDENTITIES = {"slurm": SLURM_IDENTITY, "pbs": PBS_IDENTITY}
#: each scheduler's allocation variables, and the source of ``scheduler.kind``
_ALLOCATIONS = {
    "slurm": (SLURM_VARIABLES, "SLURM_JOB_ID is set"),
    "pbs": (PBS_VARIABLES, "PBS_JOBID is set"),
}


def _scheduler_of(environ: Mapping[str, str]) -> str | None:
    """ "slurm", "pbs" or None. Slurm wins when both job ids are set (a Slurm job started
    from a PBS shell keeps the outer variables; the inner job is ours)."""
    if environ.get("SLURM_JOB_ID"):
        return "slurm"
    if environ.get("PBS_JOBID"):
        return "pbs"
    return None


def job_identity(environ: Mapping[str, str] | None = None) -> dict[str, str] | None:
    """The job this process runs in, for a run's ``job`` key; None outside a batch job.

    ``{"scheduler": "slurm" | "pbs", "job_id": ...}`` plus, where the variable is
    set and not empty, ``array_job_id``, ``array_task_id``, ``step_id``,
    ``restart_count``, ``node_name``, ``node_list``, ``submit_host`` and
    ``submit_dir`` (strings, as the scheduler wrote them; a byte that is not UTF-8 as
    ``\\xNN``). Reads only the
    environment (default ``os.environ``), a dozen lookups; it returns a new dict
    each call, so a caller that caches it must not hand the same dict out to be
    changed.

    >>> job_identity({"SLURM_JOB_ID": "1042", "SLURM_ARRAY_JOB_ID": "1040",
    ...               "SLURM_ARRAY_TASK_ID": "2", "SLURMD_NODENAME": "n1"})
    {'scheduler': 'slurm', 'job_id': '1042', 'array_job_id': '1040', 'array_task_id': '2', \
'node_name': 'n1'}
    >>> job_identity({"HOME": "/root"}) is None
    True
    """
    if environ is None:
        environ = os.environ
    scheduler = _scheduler_of(environ)
    if scheduler is None:
        return None
    identity = {"scheduler": scheduler}
    for key, variable in _IDENTITIES[scheduler]:
        value = environ.get(variable)
        if value:  # the first variable set gives the key
            identity.setdefault(key, json_text(value))  # undecodable bytes as \xNN
    return identity


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
    return _this_nodes(counts, packed, _count(environ, "SLURM_NODEID"))


def _this_nodes(counts: tuple[int, ...], packed: str, node: int | None) -> tuple[int | None, str]:
    """The entry of ``SLURM_JOB_CPUS_PER_NODE`` (``packed``, expanded to ``counts``) for
    this node, ``SLURM_NODEID`` (``node``), and where it came from (or why unknown)."""
    if node is None:
        if len(counts) == 1:
            return counts[0], "SLURM_JOB_CPUS_PER_NODE"
        return None, (
            f"SLURM_JOB_CPUS_PER_NODE={packed!r} lists several nodes and SLURM_NODEID is unset"
        )
    if node < len(counts):
        return counts[node], "SLURM_JOB_CPUS_PER_NODE[SLURM_NODEID]"
    return None, f"SLURM_NODEID={node} is beyond SLURM_JOB_CPUS_PER_NODE={packed!r}"


def gpus_on_node(environ: Mapping[str, str]) -> tuple[int | None, str]:
    """The job's GPUs on this node (``SLURM_GPUS_ON_NODE``), or why unknown."""
    gpus = _count(environ, "SLURM_GPUS_ON_NODE")
    if gpus is not None:
        return gpus, "SLURM_GPUS_ON_NODE"
    return None, "SLURM_GPUS_ON_NODE is not a count"


def probe_scheduler(environ: Mapping[str, str]) -> tuple[SchedulerInfo, dict[str, str]]:
    """The scheduler part of the description (kind and allocation) and the source of each field.

    The job's identity is not part of it: see :func:`job_identity`.
    """
    kind = _scheduler_of(environ)
    if kind is None:
        reason = "neither SLURM_JOB_ID nor PBS_JOBID is set: not a batch job"
        return SchedulerInfo(), {"scheduler.kind": reason, "scheduler.env": reason}
    names, kind_source = _ALLOCATIONS[kind]
    env = {name: json_text(environ[name]) for name in names if name in environ}
    listed = f"environment: {', '.join(sorted(env))}" if env else "no allocation variable is set"
    sources = {"scheduler.kind": kind_source, "scheduler.env": listed}
    return SchedulerInfo(kind=kind, env=env), sources
