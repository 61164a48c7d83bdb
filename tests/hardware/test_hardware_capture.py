"""capture_hardware as a whole: provenance, degradation, determinism, caching, display."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import attrs
import pytest
from helpers.fake_hardware import GIB, FakeNvml, FakeRoot, a100, cpuinfo_block, l4

from stagetimer._format import RESOURCE_FIELDS
from stagetimer.hardware import (
    Hardware,
    _capture,
    capture_hardware,
    description,
    format_bytes,
    hardware_id,
    summary_line,
)


def field_paths(hw: Hardware) -> set[str]:
    """Every leaf field of the description except ``sources`` itself, and the four values
    of a run's ``resources``, whose source (or why one is missing) is said here once.

    ``cpu.numa_nodes`` is left out of a description where it is unknown (so that an
    older description read back keeps its id), but its source still says why.
    """
    paths: set[str] = {"cpu.numa_nodes", *(f"resources.{key}" for key in RESOURCE_FIELDS)}
    for key, value in description(hw).items():
        if key == "sources":
            continue
        if key == "gpus":
            paths.add("gpus")
            for slot, gpu in enumerate(value):
                paths.update(f"gpus[{slot}].{name}" for name in gpu)
        elif isinstance(value, dict) and key != "sources":
            paths.update(f"{key}.{name}" for name in value)
        else:
            paths.add(key)
    return paths


def ci_guest(fake: FakeRoot) -> None:
    """A fixture of the CI guest: 2 vCPUs, hybrid cgroups with a 1 GiB v1 limit."""
    fake.hybrid(memory="/process_api/60b2")
    fake.files("/sys/fs/cgroup/memory", {"memory.limit_in_bytes": 9223372036854771712})
    fake.files("/sys/fs/cgroup/memory/process_api/60b2", {"memory.limit_in_bytes": GIB})
    fake.files("/sys/fs/cgroup/cpu", {"cpu.cfs_quota_us": -1, "cpu.cfs_period_us": 100000})
    fake.status("0-1")
    fake.meminfo()
    fake.cpuinfo(cpuinfo_block(i, mhz="2445.400") for i in range(2))
    for cpu in (0, 1):
        fake.topology(cpu, core_cpus_list=str(cpu), core=cpu)
    fake.files("/sys/devices/system/node/node0", {"cpulist": "0-1"})


@pytest.fixture
def guest(tmp_path: Path) -> FakeRoot:
    fake = FakeRoot(tmp_path)
    ci_guest(fake)
    return fake


def test_fixture_of_the_ci_guest_is_described_fully(guest: FakeRoot) -> None:
    hw = capture_hardware(root=guest.root, environ={}, nvml=FakeNvml([]))

    assert (
        hw.cpu.affinity,
        hw.cpu.logical_cpus,
        hw.cpu.physical_cores,
        hw.cpu.clock_min_mhz,
        hw.cpu.clock_max_mhz,
        hw.cpu.clock_source,
        hw.cpu.model_name,
        hw.cpu.model_name_guest_visible,
        hw.cpu.quota_cpus,
    ) == (
        None,  # which CPUs is placement: each run's ``cpus``, not the description
        2,
        2,
        2445.4,
        2445.4,
        "kvm_cpuinfo",
        "AMD EPYC",
        True,
        None,
    )
    assert hw.cpu.numa_nodes == 1
    assert (hw.memory.limit_bytes, hw.memory.source, hw.memory.node_total_bytes) == (
        GIB,
        "cgroup_v1",
        24683656 * 1024,
    )


@pytest.mark.parametrize("gpus", [[], [a100(), l4()]], ids=["no-gpu", "two-gpus"])
def test_sources_cover_every_field(guest: FakeRoot, gpus: list[Any]) -> None:
    hw = capture_hardware(root=guest.root, environ={"SLURM_JOB_ID": "1"}, nvml=FakeNvml(gpus))

    assert field_paths(hw) == set(hw.sources)


def test_sources_cover_every_field_on_the_live_system() -> None:
    hw = capture_hardware()

    assert field_paths(hw) == set(hw.sources)


def test_root_without_sys_degrades_to_none_with_reasons(tmp_path: Path) -> None:
    fake = FakeRoot(tmp_path)
    fake.status("0-3")
    fake.meminfo()

    hw = capture_hardware(root=fake.root, environ={}, nvml=FakeNvml([]))

    assert (
        hw.cpu.affinity,
        hw.cpu.physical_cores,
        hw.cpu.clock_max_mhz,
        hw.memory.limit_bytes,
        hw.cpu.quota_cpus,
    ) == (None, None, None, None, None)
    assert hw.cpu.logical_cpus == 4
    assert "does not exist" in hw.sources["cpu.physical_cores"]
    assert field_paths(hw) == set(hw.sources)


def test_empty_root_like_macos_never_raises(tmp_path: Path) -> None:
    hw = capture_hardware(root=str(tmp_path), environ={}, nvml=FakeNvml([]))

    assert (
        hw.cpu.affinity,
        hw.cpu.logical_cpus,
        hw.cpu.model_name,
        hw.memory.node_total_bytes,
        hw.memory.limit_bytes,
    ) == (None, 0, None, None, None)
    assert "/proc/self/cgroup does not exist" in hw.sources["memory.limit_bytes"]


def test_unreadable_files_degrade_like_missing_ones(tmp_path: Path) -> None:
    # A directory where a file should be makes open() fail with IsADirectoryError.
    fake = FakeRoot(tmp_path)
    for path in ("proc/self/cgroup", "proc/cpuinfo", "proc/meminfo", "proc/self/status"):
        (tmp_path / path).mkdir(parents=True)

    hw = capture_hardware(root=fake.root, environ={}, nvml=FakeNvml([]))

    assert (hw.memory.limit_bytes, hw.cpu.model_name, hw.cpu.logical_cpus) == (None, None, 0)
    assert "unreadable" in hw.sources["cpu.model_name"]


def test_same_machine_gives_the_same_hardware_id(guest: FakeRoot) -> None:
    first = capture_hardware(root=guest.root, environ={}, nvml=FakeNvml([a100()]))
    guest.write("/proc/meminfo", "MemTotal:       24683656 kB\nMemFree:         1000 kB\n")
    guest.write(
        "/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq", "999\n"
    )  # volatile values change; the description must not
    second = capture_hardware(root=guest.root, environ={}, nvml=FakeNvml([a100()]))

    assert hardware_id(first) == hardware_id(second)


def test_missing_limit_reason_does_not_name_the_login_session(tmp_path: Path) -> None:
    # systemd gives each login a new session-N.scope: the same machine must keep its id.
    ids = set()
    for session in ("session-3.scope", "session-4.scope"):
        fake = FakeRoot(tmp_path / session)
        fake.v2(f"/user.slice/user-1000.slice/{session}")
        fake.files(f"/sys/fs/cgroup/user.slice/user-1000.slice/{session}", {"memory.max": "max"})
        ids.add(hardware_id(capture_hardware(root=fake.root, environ={}, nvml=FakeNvml([]))))

    assert len(ids) == 1


def test_description_is_json_ready(guest: FakeRoot) -> None:
    hw = capture_hardware(root=guest.root, environ={"SLURM_JOB_ID": "5"}, nvml=FakeNvml([l4()]))

    assert description(hw) == json.loads(json.dumps(description(hw)))


def test_live_capture_is_cached() -> None:
    assert capture_hardware() is capture_hardware()


def test_fixture_capture_is_not_cached(guest: FakeRoot) -> None:
    assert capture_hardware(root=guest.root, environ={}) is not capture_hardware(
        root=guest.root, environ={}
    )


def test_concurrent_first_captures_probe_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = _capture._capture

    def slow_capture(root: str, environ: Any, nvml: Any) -> Hardware:
        calls.append(1)
        time.sleep(0.05)
        return real(root, environ, nvml)

    monkeypatch.setattr(_capture, "_capture", slow_capture)
    _capture.clear_cache()
    results: list[Hardware] = []
    threads = [
        threading.Thread(target=lambda: results.append(capture_hardware())) for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert (len(calls), len(results), len({id(r) for r in results})) == (1, 8, 1)


@pytest.mark.parametrize(
    ("gpus", "expected"),
    [
        ([], "AMD EPYC \u00d72 (2 cores), 1 GiB limit (cgroup_v1), no GPU"),
        (
            [a100(), a100("GPU-1"), l4()],
            "AMD EPYC \u00d72 (2 cores), 1 GiB limit (cgroup_v1), "
            "2\u00d7 NVIDIA A100-SXM4-40GB + 1\u00d7 NVIDIA L4",
        ),
    ],
)
def test_summary_line(guest: FakeRoot, gpus: list[Any], expected: str) -> None:
    hw = capture_hardware(root=guest.root, environ={}, nvml=FakeNvml(gpus))

    assert expected == summary_line(hw)


def test_summary_line_without_limit_names_node_ram(tmp_path: Path) -> None:
    fake = FakeRoot(tmp_path)
    fake.meminfo()

    hw = capture_hardware(root=fake.root, environ={}, nvml=FakeNvml([]))

    assert (
        summary_line(hw)
    ) == "unknown CPU \u00d70 (cores unknown), no memory limit (node 23.5 GiB), no GPU"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (512, "512 B"), (1536, "1.5 KiB"), (GIB, "1 GiB"), (5 * 1024**4, "5 TiB"),
        (25 * 10**9, "23.3 GiB"),
    ],
)
def test_format_bytes(value: int, text: str) -> None:
    assert text == format_bytes(value)


# --- job identity is not hardware ------------------------------------------------------

FIRST_EDITION = Path(__file__).parent.parent / "data" / "first_edition_slurm"


def slurm_task(fake: FakeRoot, job: int, step: str = "batch") -> None:
    """The CI guest as a task of a Slurm job under cgroup v1 ConstrainRAMSpace: the limit
    is on job_N and its step; the task's own group shows the unlimited sentinel."""
    ci_guest(fake)
    job_dir = f"/sys/fs/cgroup/memory/slurm_n1/uid_0/job_{job}"
    fake.hybrid(memory=f"/slurm_n1/uid_0/job_{job}/step_{step}/task_0")
    fake.files(job_dir, {"memory.limit_in_bytes": GIB})
    fake.files(f"{job_dir}/step_{step}", {"memory.limit_in_bytes": GIB})
    fake.files(f"{job_dir}/step_{step}/task_0", {"memory.limit_in_bytes": 9223372036854771712})


def array_task_environ(job: int, task: int) -> dict[str, str]:
    return {
        "SLURM_JOB_ID": str(job),
        "SLURM_ARRAY_JOB_ID": "4710",
        "SLURM_ARRAY_TASK_ID": str(task),
        "SLURM_JOB_NAME": "ippo",
        "SLURM_JOB_PARTITION": "debug",
        "SLURM_CPUS_ON_NODE": "2",
        "SLURM_MEM_PER_NODE": "1024",
        "SLURM_RESTART_COUNT": "0",
        "SLURMD_NODENAME": "n1",
        "SLURM_JOB_NODELIST": "n1",
    }


def test_two_tasks_of_one_array_on_one_node_share_one_description(tmp_path: Path) -> None:
    first, second = FakeRoot(tmp_path / "a"), FakeRoot(tmp_path / "b")
    slurm_task(first, 4711)
    slurm_task(second, 4712)
    # The fixture roots differ in their paths; the live system reads both from "/".
    one = capture_hardware(root=first.root, environ=array_task_environ(4711, 0), nvml=FakeNvml([]))
    two = capture_hardware(root=second.root, environ=array_task_environ(4712, 1), nvml=FakeNvml([]))

    as_json = [
        json.dumps(description(hw), sort_keys=True).replace(root, "<root>")
        for hw, root in ((one, first.root), (two, second.root))
    ]
    assert as_json[0] == as_json[1]


def test_the_limit_file_is_named_without_the_job_or_step(tmp_path: Path) -> None:
    fake = FakeRoot(tmp_path)
    slurm_task(fake, 4711)
    hw = capture_hardware(root=fake.root, environ=array_task_environ(4711, 0), nvml=FakeNvml([]))

    where = hw.sources["memory.limit_bytes"].replace(fake.root, "")
    assert (GIB, "/sys/fs/cgroup/memory/slurm_n1/uid_0/job_N/step_*/memory.limit_in_bytes") == (
        hw.memory.limit_bytes,
        where,
    )


def test_no_source_names_the_job_the_task_or_the_node(tmp_path: Path) -> None:
    fake = FakeRoot(tmp_path)
    slurm_task(fake, 4711, step="0")
    hw = capture_hardware(root=fake.root, environ=array_task_environ(4711, 3), nvml=FakeNvml([]))

    text = json.dumps(description(hw))
    assert [] == [word for word in ("4711", "4710", "step_0", "ippo", '"n1"') if word in text]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "/sys/fs/cgroup/memory/slurm_n1/uid_0/job_4711/step_batch/memory.limit_in_bytes",
            "/sys/fs/cgroup/memory/slurm_n1/uid_0/job_N/step_*/memory.limit_in_bytes",
        ),
        (
            "/sys/fs/cgroup/system.slice/slurmstepd.scope/job_17/step_0/user/task_3/memory.max",
            "/sys/fs/cgroup/system.slice/slurmstepd.scope/job_N/step_*/user/task_N/memory.max",
        ),
        (
            "/sys/fs/cgroup/memory/pbs_jobs.service/jobid/4711.pbs01/memory.limit_in_bytes",
            "/sys/fs/cgroup/memory/pbs_jobs.service/jobid/<job>/memory.limit_in_bytes",
        ),
        (
            "/sys/fs/cgroup/cpu/torque/17.server/cpu.cfs_quota_us",
            "/sys/fs/cgroup/cpu/torque/<job>/cpu.cfs_quota_us",
        ),
        (
            "/sys/fs/cgroup/system.slice/docker-" + "ab12" * 16 + ".scope/memory.max",
            "/sys/fs/cgroup/system.slice/docker-<id>.scope/memory.max",
        ),
        (
            "no ACPI CPPC: /sys/devices/system/cpu/cpu17/acpi_cppc/nominal_freq is 0",
            "no ACPI CPPC: /sys/devices/system/cpu/cpuN/acpi_cppc/nominal_freq is 0",
        ),
        (
            "/sys/fs/cgroup/memory/docker/" + "ab12" * 16 + "/memory.limit_in_bytes",
            "/sys/fs/cgroup/memory/docker/<id>/memory.limit_in_bytes",
        ),
        (
            "no memory.max in the 3 cgroup v2 groups up to /sys/fs/cgroup"
            " (/user.slice/user-1000.slice/session-42.scope)",
            "no memory.max in the 3 cgroup v2 groups up to /sys/fs/cgroup"
            " (/user.slice/user-1000.slice/session-N.scope)",
        ),
        (
            "/sys/fs/cgroup/kubepods.slice/kubepods-burstable-pod1b2c3d4e_1234_5678_9abc_"
            "def012345678.slice/cri-containerd-abcdef0123456789.scope/memory.max",
            "/sys/fs/cgroup/kubepods.slice/kubepods-burstable-pod<uid>.slice/"
            "cri-containerd-<id>.scope/memory.max",
        ),
        ("SLURM_MEM_PER_NODE", "SLURM_MEM_PER_NODE"),
        ("/sys/fs/cgroup/memory/job_12x/memory.max", "/sys/fs/cgroup/memory/job_12x/memory.max"),
    ],
)
def test_sources_generalise_job_step_task_container_and_session_ids(
    source: str, expected: str
) -> None:
    assert expected == _capture.generalise_source(source)


def test_first_edition_descriptions_with_a_job_id_stay_readable() -> None:
    from stagetimer import load_hardware

    (hw,) = load_hardware(FIRST_EDITION).hardware.values()

    assert ("slurm", "4712", "4712") == (
        hw.scheduler.kind,
        hw.scheduler.job_id,
        hw.scheduler.env["SLURM_JOB_ID"],
    )


def test_a_first_edition_description_keeps_its_id_when_described_again() -> None:
    from stagetimer import load_hardware

    ((stored_id, hw),) = load_hardware(FIRST_EDITION).hardware.items()

    assert stored_id == hardware_id(hw)


def test_a_new_description_has_no_job_id_key(guest: FakeRoot) -> None:
    hw = capture_hardware(root=guest.root, environ=array_task_environ(4711, 0), nvml=FakeNvml([]))

    assert {"kind", "env"} == set(description(hw)["scheduler"])


def test_first_edition_and_new_descriptions_of_one_machine_have_no_differences() -> None:
    from stagetimer import load_hardware
    from stagetimer.hardware import hardware_differences

    (old,) = load_hardware(FIRST_EDITION).hardware.values()
    new = attrs.evolve(old, scheduler=attrs.evolve(old.scheduler, job_id=None, env={}))

    assert [] == hardware_differences(old, new)


def test_the_report_reads_a_first_edition_directory_with_a_job_id() -> None:
    from helpers.cli import run_cli

    result = run_cli("report", str(FIRST_EDITION))

    assert (0, "", True) == (
        result.returncode,
        result.stderr,
        "hw-bd3733d1fb5094e7" in result.stdout,
    )
