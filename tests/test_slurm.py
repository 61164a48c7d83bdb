"""A real Slurm job array records every seed with the allocation its task could use.

Each test starts a single-node cluster on this machine (``slurm_cluster.py``),
submits ``examples/slurm/seed_array.sbatch`` as a job array, every task recording
its seed with ``policy="upsert"`` into one shared directory, and reads both
sidecars back (and runs ``stagetimer report`` on them). Without cgroup enforcement
the memory allocation is visible only as ``SLURM_MEM_PER_NODE``; with
``ConstrainRAMSpace`` it is the limit of the job's cgroup v1 ancestors (the task's
own group shows the unlimited sentinel). The tasks' job ids are in each run's
``job``, not in the hardware description: tasks with the same allocation on one
node share one description.

Needs root and Debian's Slurm packages (installed here when missing); skipped
with the reason where the machine cannot run a cluster, except that on CI
(``CI=true``) a failed install or start fails (``helpers/slurm_fixtures.py``).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.cli import run_cli
from helpers.slurm_cluster import (
    DaemonDied,
    SlurmCluster,
)
from helpers.slurm_fixtures import CGROUP_V1_MEMORY, cluster_or_skip, require_slurm

from stagetimer import load_hardware, load_timings
from stagetimer.hardware import Hardware, hardware_differences

pytestmark = [pytest.mark.slow, pytest.mark.root]

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "slurm"
SEEDS = [0, 1, 2, 3]
ONE_GIB = 1024**3


@pytest.fixture(scope="module")
def slurm_installed() -> None:
    require_slurm()


@pytest.fixture
def cluster_without_cgroups(slurm_installed: None) -> Iterator[SlurmCluster]:
    limited = _own_finite_memory_limit()
    if limited is not None:
        pytest.skip(
            f"this process's memory cgroup is limited ({limited}): "
            "a job without cgroup enforcement inherits it and the probe rightly reports it "
            "instead of SLURM_MEM_PER_NODE"
        )
    yield from cluster_or_skip(constrain_ram=False)


@pytest.fixture
def cluster_with_cgroups(slurm_installed: None) -> Iterator[SlurmCluster]:
    if not (CGROUP_V1_MEMORY / "memory.limit_in_bytes").is_file():
        pytest.skip(f"ConstrainRAMSpace with cgroup/v1 needs {CGROUP_V1_MEMORY} (cgroup v1)")
    yield from cluster_or_skip(constrain_ram=True)


def _own_finite_memory_limit() -> str | None:
    """The first finite cgroup v1 memory limit from this process's group up, as 'path=value'."""
    with open("/proc/self/cgroup") as cgroups:
        for line in cgroups:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            if "memory" in controllers.split(","):
                directory = CGROUP_V1_MEMORY / path.lstrip("/")
                while True:
                    limit_file = directory / "memory.limit_in_bytes"
                    if limit_file.is_file():
                        value = int(limit_file.read_text())
                        if value < 2**62:  # v1 "unlimited" reads as about 2**63
                            return f"{limit_file}={value}"
                    if directory == CGROUP_V1_MEMORY:
                        break
                    directory = directory.parent
    return None


def run_seed_array(
    cluster: SlurmCluster,
    tmp_path: Path,
    seeds: list[int] = SEEDS,
    *,
    mem: str = "1G",
    cpus: int = 1,
) -> tuple[dict[int, str], Path, str]:
    """Submit the example array, wait for it; return {array task: job id}, artifacts, diagnostics.

    ``seeds`` are the array's task ids, ``mem`` and ``cpus`` each task's ``--mem``
    and ``--cpus-per-task``. Fails the test, with the job's output and the daemons'
    logs, if a task does not end COMPLETED with exit code 0 within 120 s.
    """
    artifacts = tmp_path / "exports" / "ippo"
    output = tmp_path / f"slurm-out-{seeds[0]}"
    output.mkdir()
    env = {**cluster.env, "PYTHON": sys.executable, "STAGETIMER_DIR": str(artifacts)}
    env.pop("STAGETIMER_DISABLE", None)
    array_id = cluster.submit(
        EXAMPLE / "seed_array.sbatch",
        f"--array={','.join(map(str, seeds))}",
        f"--mem={mem}",
        f"--cpus-per-task={cpus}",
        f"--output={output}/slurm-%A_%a.out",
        cwd=EXAMPLE,  # the script runs train_seed.py from $SLURM_SUBMIT_DIR
        env=env,
    )

    def diagnostics() -> str:
        tasks = _array_tasks(cluster.show_job(array_id))
        states = "\n".join(
            f"task {task}: job {job_id} {state}, exit code {code}"
            for task, (job_id, state, code) in sorted(tasks.items())
        )
        outputs = "\n".join(
            f"==== {path.name} ====\n{path.read_text(errors='replace')}"
            for path in sorted(output.glob("*"))
        )
        return f"array job {array_id}:\n{states}\n{outputs}\n{cluster.logs()}"

    try:
        cluster.wait(array_id, timeout=120)
    except (TimeoutError, DaemonDied) as error:
        pytest.fail(f"{str(error).splitlines()[0]}\n{diagnostics()}")
    tasks = _array_tasks(cluster.show_job(array_id))
    report = diagnostics()
    assert sorted(tasks) == seeds, report
    assert {(state, code) for _, state, code in tasks.values()} == {("COMPLETED", "0:0")}, report
    return {task: job_id for task, (job_id, _, _) in tasks.items()}, artifacts, report


def _array_tasks(show_job: str) -> dict[int, tuple[str, str, str]]:
    """``scontrol show job`` of an array → {task id: (job id, state, exit code)}."""
    tasks = {}
    for record in show_job.split("\n\n"):
        fields = dict(re.findall(r"(\w+)=(\S*)", record))
        if "ArrayTaskId" in fields:
            task = int(fields["ArrayTaskId"])
            tasks[task] = (fields["JobId"], fields["JobState"], fields["ExitCode"])
    return tasks


def test_array_without_cgroups_takes_memory_from_slurm_mem_per_node(
    cluster_without_cgroups: SlurmCluster, tmp_path: Path
) -> None:
    job_ids, artifacts, report = run_seed_array(cluster_without_cgroups, tmp_path)

    for hardware in _hardware_of_each_seed(artifacts, job_ids, report):
        assert (hardware.memory.limit_bytes, hardware.memory.source) == (ONE_GIB, "slurm")
        assert "SLURM_MEM_PER_NODE" in hardware.sources["memory.limit_bytes"]


def test_array_with_constrain_ram_takes_memory_from_the_job_cgroup(
    cluster_with_cgroups: SlurmCluster, tmp_path: Path
) -> None:
    job_ids, artifacts, report = run_seed_array(cluster_with_cgroups, tmp_path)

    for hardware in _hardware_of_each_seed(artifacts, job_ids, report):
        assert (hardware.memory.limit_bytes, hardware.memory.source) == (ONE_GIB, "cgroup_v1")
        # The task's own group (task_0) shows the unlimited sentinel; the limit is on its
        # job_N and step_batch ancestors, named without the job's id.
        where = hardware.sources["memory.limit_bytes"]
        assert re.search(r"/slurm_[^/]+/uid_0/job_N/", where), where
        assert "/task_" not in where


def test_tasks_with_one_allocation_share_one_hardware_id(
    cluster_with_cgroups: SlurmCluster, tmp_path: Path
) -> None:
    # Two CPUs per task on this two-CPU node: every task is pinned to the same CPUs.
    _, artifacts, report = run_seed_array(cluster_with_cgroups, tmp_path, cpus=2)

    runs = load_timings(artifacts).stages["ippo_train"].runs
    hardware_ids = {run.hardware_id for run in runs}
    assert (1, 1) == (len(hardware_ids), len(load_hardware(artifacts).hardware)), report


def test_each_run_holds_its_task_s_job_identity(
    cluster_with_cgroups: SlurmCluster, tmp_path: Path
) -> None:
    job_ids, artifacts, report = run_seed_array(cluster_with_cgroups, tmp_path, cpus=2)

    runs = load_timings(artifacts).stages["ippo_train"].runs
    # The array's id is its first job record's, the smallest: the other tasks split off it.
    array_job_id = min(job_ids.values(), key=int)
    expected = [
        {
            "scheduler": "slurm",
            "job_id": job_ids[seed],
            "array_job_id": array_job_id,
            "array_task_id": str(seed),
            "node_name": cluster_with_cgroups.host,
        }
        for seed in SEEDS
    ]
    keys = ("scheduler", "job_id", "array_job_id", "array_task_id", "node_name")
    actual = [{key: (run.job or {}).get(key) for key in keys} for run in runs]
    assert expected == actual, report


def test_tasks_pinned_to_one_cpu_each_share_one_hardware_id(
    cluster_with_cgroups: SlurmCluster, tmp_path: Path
) -> None:
    # One CPU per task on this two-CPU node: tasks run on CPU 0 and CPU 1 at once. Where
    # a task was placed is its run's cpus; the description, and its id, is the same.
    _, artifacts, report = run_seed_array(cluster_with_cgroups, tmp_path, cpus=1)

    runs = load_timings(artifacts).stages["ippo_train"].runs
    assert (1, 1) == (
        len({run.hardware_id for run in runs}), len(load_hardware(artifacts).hardware)
    ), report
    assert {run.cpus for run in runs} <= {"0", "1"}, report


def test_report_gives_no_mixed_hardware_warning_for_one_allocation(
    cluster_with_cgroups: SlurmCluster, tmp_path: Path
) -> None:
    _, artifacts, report = run_seed_array(cluster_with_cgroups, tmp_path, cpus=2)

    assert [] == _hardware_warnings(artifacts), report


def test_tasks_pinned_to_different_cpus_draw_no_mixed_hardware_warning(
    cluster_with_cgroups: SlurmCluster, tmp_path: Path
) -> None:
    # One CPU per task: two tasks run at once, on CPU 0 and CPU 1. Their descriptions
    # name different affine CPUs, but no field that changes a duration differs.
    _, artifacts, report = run_seed_array(cluster_with_cgroups, tmp_path, cpus=1)

    described = load_hardware(artifacts).hardware
    assert [] == [
        hardware_differences(a, b) for a in described.values() for b in described.values()
        if hardware_differences(a, b)
    ], report  # fmt: skip
    assert [] == _hardware_warnings(artifacts), report


def test_a_task_with_a_smaller_memory_limit_draws_a_warning_naming_the_field(
    cluster_with_cgroups: SlurmCluster, tmp_path: Path
) -> None:
    run_seed_array(cluster_with_cgroups, tmp_path, SEEDS[:-1], mem="1G", cpus=2)
    _, artifacts, report = run_seed_array(
        cluster_with_cgroups, tmp_path, SEEDS[-1:], mem="512M", cpus=2
    )

    warnings = _hardware_warnings(artifacts)
    assert (1, True, True) == (
        len(warnings),
        "memory.limit_bytes: 1 GiB → 512 MiB" in warnings[0] if warnings else False,
        all("memory.limit_bytes" in w for w in warnings),
    ), report


def _hardware_warnings(artifacts: Path) -> list[str]:
    """The lines of ``stagetimer report`` that warn of runs measured on differing hardware."""
    result = run_cli("report", str(artifacts))
    assert 0 == result.returncode, result.stderr
    return [
        line.strip()
        for line in result.stdout.splitlines()
        if "warning" in line and ("not comparable" in line or "hardware ids" in line)
    ]


def _hardware_of_each_seed(artifacts: Path, job_ids: dict[int, str], report: str) -> list[Hardware]:
    """Check what every seed's record says about its task; return the descriptions by seed.

    One run per seed, each pointing into the hardware sidecar at a description with
    one CPU and a Slurm allocation, and holding the job id of the task that ran it.
    """
    runs = load_timings(artifacts).stages["ippo_train"].runs
    sidecar = load_hardware(artifacts).hardware
    assert [run.run_idx for run in runs] == SEEDS, report
    hardware_ids = [run.hardware_id for run in runs]
    assert set(hardware_ids) - set(sidecar) == set()  # each resolves; None would be left over
    described = [sidecar[hardware_id] for hardware_id in hardware_ids if hardware_id is not None]
    assert [hw.cpu.logical_cpus for hw in described] == [1] * len(SEEDS)
    # which CPU is the run's placement: one CPU, in the kernel's list format
    assert [run.cpus is not None and run.cpus.isdigit() for run in runs] == [True] * 4, report
    assert [hw.scheduler.kind for hw in described] == ["slurm"] * len(SEEDS)
    assert [hw.scheduler.env.get("SLURM_MEM_PER_NODE") for hw in described] == ["1024"] * 4
    assert [(run.job or {}).get("job_id") for run in runs] == [job_ids[s] for s in SEEDS], report
    return described
