"""The CPU probe: affinity, physical cores, model name, CPU quota."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.fake_hardware import FakeRoot, cpuinfo_block

from stagetimer._system.files import parse_cpu_list
from stagetimer.hardware import capture_hardware
from stagetimer.hardware._cpu import affinity, cpu_quota, model_name, node_cpus, physical_cores


@pytest.fixture
def fake(tmp_path: Path) -> FakeRoot:
    return FakeRoot(tmp_path)


def smt_machine(fake: FakeRoot) -> None:
    """4 logical CPUs on 2 cores, siblings numbered apart as Intel numbers them: (0,2), (1,3)."""
    for cpu, siblings in enumerate(["0,2", "1,3", "0,2", "1,3"]):
        fake.topology(cpu, core_cpus_list=siblings, thread_siblings_list=siblings, core=cpu % 2)


def two_socket_machine(fake: FakeRoot) -> None:
    """2 packages x 2 cores, no SMT, an old kernel without *_list files: core_id repeats."""
    for cpu in range(4):
        fake.topology(cpu, package=cpu // 2, core=cpu % 2, die=None)


@pytest.mark.parametrize(
    ("allowed", "expected"), [("0-3", (0, 1, 2, 3)), ("0,2", (0, 2)), ("1", (1,)), ("", ())]
)
def test_fixture_affinity_comes_from_cpus_allowed_list(
    fake: FakeRoot, allowed: str, expected: tuple[int, ...]
) -> None:
    fake.status(allowed)

    assert (expected, "/proc/self/status Cpus_allowed_list") == affinity(fake.root)


def test_live_affinity_without_sched_getaffinity_uses_cpu_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # macOS has no sched_getaffinity: every CPU, and the source says why.
    monkeypatch.delattr("os.sched_getaffinity", raising=False)
    monkeypatch.setattr("os.cpu_count", lambda: 8)

    cpus, where = affinity("/")

    assert (cpus, where) == (tuple(range(8)), "os.cpu_count() (no CPU affinity interface here)")


@pytest.mark.parametrize(
    ("text", "expected"),
    [("0-3,8,10-11\n", (0, 1, 2, 3, 8, 10, 11)), ("5", (5,)), ("3-1", None), ("x", None)],
)
def test_cpu_list_parser(text: str, expected: tuple[int, ...] | None) -> None:
    assert expected == parse_cpu_list(text)


@pytest.mark.parametrize(
    ("allowed", "cores"), [("0-3", 2), ("0-1", 2), ("0,2", 1), ("3", 1)]
)
def test_smt_cores_count_siblings_once(fake: FakeRoot, allowed: str, cores: int) -> None:
    smt_machine(fake)
    fake.status(allowed)

    hw = capture_hardware(root=fake.root, environ={}, nvml=None)

    assert cores == hw.cpu.physical_cores


@pytest.mark.parametrize(("cpus", "cores"), [((0, 1, 2, 3), 4), ((1, 2), 2), ((0, 1), 2)])
def test_two_sockets_core_id_repeats_across_packages(
    fake: FakeRoot, cpus: tuple[int, ...], cores: int
) -> None:
    two_socket_machine(fake)

    count, where = physical_cores(fake.root, cpus)

    assert cores == count
    assert "physical_package_id/die_id/core_id" in where


def test_physical_cores_unknown_without_topology(fake: FakeRoot) -> None:
    count, where = physical_cores(fake.root, (0, 1))

    assert count is None
    assert "cpuN" in where


def test_logical_cpus_is_the_affinity_size(fake: FakeRoot) -> None:
    smt_machine(fake)
    fake.status("1-3")

    hw = capture_hardware(root=fake.root, environ={})

    # which CPUs is the run's placement (its ``cpus``), not part of the description
    assert (hw.cpu.affinity, hw.cpu.logical_cpus) == (None, 3)


@pytest.mark.parametrize(("hypervisor", "guest"), [(True, True), (False, False)])
def test_model_name_and_guest_visibility_from_cpuinfo(
    fake: FakeRoot, hypervisor: bool, guest: bool
) -> None:
    fake.cpuinfo(cpuinfo_block(i, hypervisor=hypervisor) for i in range(2))

    name, visible, _, _ = model_name(fake.root, (0, 1))

    assert ("AMD EPYC", guest) == (name, visible)


def test_model_name_of_hybrid_parts_joins_distinct_names(fake: FakeRoot) -> None:
    fake.cpuinfo(
        [cpuinfo_block(0, model="Big Core"), cpuinfo_block(1, model="Little Core"),
         cpuinfo_block(2, model="Little Core")]
    )

    assert model_name(fake.root, (0, 1, 2))[0] == "Big Core / Little Core"


def test_model_name_only_from_affine_cpus(fake: FakeRoot) -> None:
    fake.cpuinfo([cpuinfo_block(0, model="Big Core"), cpuinfo_block(1, model="Little Core")])

    assert model_name(fake.root, (1,))[0] == "Little Core"


@pytest.mark.parametrize(
    ("quotas", "expected"),
    [
        ({"": (-1, 100000), "/job": (150000, 100000), "/job/task": (-1, 100000)}, 1.5),
        ({"": (-1, 100000), "/job": (400000, 100000), "/job/task": (50000, 100000)}, 0.5),
        ({"": (-1, 100000), "/job": (-1, 100000), "/job/task": (-1, 100000)}, None),
    ],
)
def test_v1_cpu_quota_is_smallest_over_ancestors(
    fake: FakeRoot, quotas: dict[str, tuple[int, int]], expected: float | None
) -> None:
    fake.hybrid(cpu="/job/task")
    for directory, (quota, period) in quotas.items():
        fake.files(
            f"/sys/fs/cgroup/cpu{directory}",
            {"cpu.cfs_quota_us": quota, "cpu.cfs_period_us": period},
        )

    assert expected == cpu_quota(fake.root)[0]


@pytest.mark.parametrize(("cpu_max", "expected"), [("200000 100000", 2.0), ("max 100000", None)])
def test_v2_cpu_max_gives_quota_in_cpus(
    fake: FakeRoot, cpu_max: str, expected: float | None
) -> None:
    fake.v2("/user.slice/job")
    fake.files("/sys/fs/cgroup/user.slice/job", {"cpu.max": cpu_max})

    assert expected == cpu_quota(fake.root)[0]


def test_node_cpus_counts_the_online_list_not_the_affinity(fake: FakeRoot) -> None:
    fake.write("/sys/devices/system/cpu/online", "0-191\n")
    fake.status("4-7")

    hw = capture_hardware(root=fake.root, environ={})

    assert (4, 192) == (hw.cpu.logical_cpus, hw.cpu.node_logical_cpus)
    assert "/sys/devices/system/cpu/online" == hw.sources["cpu.node_logical_cpus"]


def test_node_cpus_unknown_without_sysfs(fake: FakeRoot) -> None:
    count, where = node_cpus(fake.root)

    assert count is None
    assert "/sys/devices/system/cpu/online" in where
