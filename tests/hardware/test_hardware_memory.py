"""The memory probe: cgroup v1/v2 limits over ancestors, Slurm variables, node RAM."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from helpers.fake_hardware import GIB, MOUNTINFO_HYBRID, FakeRoot

from stagetimer.hardware import _memory
from stagetimer.hardware._cgroup import cgroup_mounts, locate, parse_cgroup_file
from stagetimer.hardware._memory import is_unlimited, node_total_bytes, probe_memory

MIB = 1024**2
UNLIMITED_4K = 9223372036854771712
UNLIMITED_16K = 9223372036854759424
UNLIMITED_64K = 9223372036854710272
UNLIMITED_RES_COUNTER = 9223372036854775807


@pytest.fixture
def fake(tmp_path: Path) -> FakeRoot:
    root = FakeRoot(tmp_path)
    root.meminfo()
    return root


def v1_group(fake: FakeRoot, directory: str, limit: int, hierarchical: int | None = None) -> None:
    fake.files(
        f"/sys/fs/cgroup/memory{directory}",
        {"memory.limit_in_bytes": limit, "memory.usage_in_bytes": 123456},
    )
    if hierarchical is not None:
        fake.write(
            f"/sys/fs/cgroup/memory{directory}/memory.stat",
            f"cache 0\nrss 4096\nhierarchical_memory_limit {hierarchical}\n"
            f"hierarchical_memsw_limit {UNLIMITED_4K}\ntotal_cache 0\n",
        )


# --- cgroup v2 ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("limits", "expected", "where"),
    [
        ({"job_42": 2 * GIB, "job_42/step_0": "max", "job_42/step_0/task_0": "max"}, 2 * GIB,
         "job_42/memory.max"),
        ({"job_42": 2 * GIB, "job_42/step_0": GIB, "job_42/step_0/task_0": "max"}, GIB,
         "job_42/step_0/memory.max"),
        ({"job_42": "max", "job_42/step_0": "max", "job_42/step_0/task_0": 3 * GIB}, 3 * GIB,
         "job_42/step_0/task_0/memory.max"),
    ],
)
def test_v2_limit_is_smallest_finite_memory_max_over_ancestors(
    fake: FakeRoot, limits: dict[str, object], expected: int, where: str
) -> None:
    fake.v2("/system.slice/slurmstepd.scope/job_42/step_0/task_0")
    base = "/sys/fs/cgroup/system.slice/slurmstepd.scope"
    for directory, limit in limits.items():
        fake.files(f"{base}/{directory}", {"memory.max": limit, "memory.high": "max"})
    fake.files("/sys/fs/cgroup/system.slice", {"memory.max": "max"})

    info, sources = probe_memory(fake.root, {})

    assert (expected, "cgroup_v2") == (info.limit_bytes, info.source)
    assert f"{base}/{where}" == sources["memory.limit_bytes"]


def test_v2_records_smallest_memory_high_beside_the_limit(fake: FakeRoot) -> None:
    # Slurm's cgroup/v2 plugin: memory.max = allocation * AllowedRAMSpace%,
    # memory.high = allocation.
    fake.v2("/system.slice/slurmstepd.scope/job_7/step_batch/user/task_0")
    base = "/sys/fs/cgroup/system.slice/slurmstepd.scope/job_7"
    fake.files(base, {"memory.max": 1181116006, "memory.high": GIB})
    fake.files(f"{base}/step_batch", {"memory.max": 1181116006, "memory.high": GIB})
    fake.files(f"{base}/step_batch/user/task_0", {"memory.max": "max", "memory.high": "max"})

    info, sources = probe_memory(fake.root, {})

    assert (info.limit_bytes, info.high_bytes) == (1181116006, GIB)
    # On a tie the nearest group is named: the step, not the job.
    assert f"{base}/step_batch/memory.high" == sources["memory.high_bytes"]


@pytest.mark.parametrize("path", ["/", "/../sibling/job_9"])
def test_v2_namespaced_path_reads_the_mount_point(fake: FakeRoot, path: str) -> None:
    # Inside a cgroup namespace the container's own group is mounted at /sys/fs/cgroup.
    fake.cgroups(
        f"0::{path}\n",
        "1204 1195 0:29 / /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - cgroup2 cgroup "
        "rw,nsdelegate,memory_recursiveprot\n",
    )
    fake.files(
        "/sys/fs/cgroup", {"cgroup.controllers": "cpu io memory pids", "memory.max": 512 * MIB}
    )

    info, sources = probe_memory(fake.root, {})

    assert (info.limit_bytes, info.source) == (512 * MIB, "cgroup_v2")
    assert sources["memory.limit_bytes"].startswith("/sys/fs/cgroup/memory.max")


def test_v2_without_memory_controller_gives_no_limit(fake: FakeRoot) -> None:
    fake.v2("/user.slice", controllers="cpu io pids")
    fake.files("/sys/fs/cgroup/user.slice", {"memory.max": GIB})

    info, sources = probe_memory(fake.root, {})

    assert info.limit_bytes is None
    assert "cgroup.controllers does not list it" in sources["memory.limit_bytes"]


# --- hybrid and cgroup v1 --------------------------------------------------------


def test_hybrid_layout_reads_memory_from_v1_not_the_v2_mount(fake: FakeRoot) -> None:
    # 0::/ is present, but the v2 mount holds only hugetlb: memory is on v1.
    fake.hybrid(memory="/process_api/60b200d332b4075355a8a4af9437f297")
    v1_group(fake, "", UNLIMITED_4K)
    v1_group(fake, "/process_api", UNLIMITED_4K)
    v1_group(fake, "/process_api/60b200d332b4075355a8a4af9437f297", GIB, hierarchical=GIB)
    fake.files("/sys/fs/cgroup/unified", {"memory.max": 5 * MIB})

    info, sources = probe_memory(fake.root, {})

    assert (info.limit_bytes, info.source) == (GIB, "cgroup_v1")
    assert sources["memory.limit_bytes"].endswith(
        "/process_api/60b200d332b4075355a8a4af9437f297/memory.limit_in_bytes"
    )


def test_v1_limit_from_an_ancestor_of_the_slurm_task_group(fake: FakeRoot) -> None:
    # Observed under slurmd with cgroup/v1: job_N and step_batch hold the limit, task_0 is
    # unlimited.
    group = "/slurm_vm/uid_0/job_3/step_batch/task_0"
    fake.hybrid(memory=group)
    v1_group(fake, "/slurm_vm/uid_0/job_3", GIB)
    v1_group(fake, "/slurm_vm/uid_0/job_3/step_batch", GIB)
    v1_group(fake, group, UNLIMITED_4K)

    info, sources = probe_memory(fake.root, {})

    assert (info.limit_bytes, info.source) == (GIB, "cgroup_v1")
    assert (
        sources["memory.limit_bytes"]
    ) == "/sys/fs/cgroup/memory/slurm_vm/uid_0/job_3/step_batch/memory.limit_in_bytes"


@pytest.mark.parametrize(
    "sentinel", [UNLIMITED_4K, UNLIMITED_16K, UNLIMITED_64K, UNLIMITED_RES_COUNTER]
)
def test_v1_unlimited_sentinel_is_not_a_limit(fake: FakeRoot, sentinel: int) -> None:
    fake.hybrid(memory="/x")
    v1_group(fake, "", sentinel)
    v1_group(fake, "/x", sentinel, hierarchical=sentinel)

    info, _ = probe_memory(fake.root, {})

    assert (info.limit_bytes, info.source) == (None, None)


@pytest.mark.parametrize(
    ("value", "unlimited"),
    [(UNLIMITED_4K, True), (UNLIMITED_64K, True), (2**63 - 1, True), (2**40, False), (GIB, False)],
)
def test_is_unlimited_separates_sentinels_from_real_limits(value: int, unlimited: bool) -> None:
    assert unlimited == is_unlimited(value)


@pytest.mark.parametrize(
    ("cgroup_path", "leaf"),
    [
        ("/docker/0123abcd", "/sys/fs/cgroup/memory"),
        ("/docker/0123abcd/inner", "/sys/fs/cgroup/memory/inner"),
        ("/elsewhere", "/sys/fs/cgroup/memory"),
    ],
)
def test_v1_mount_with_subpath_root_maps_like_jdk(
    fake: FakeRoot, cgroup_path: str, leaf: str
) -> None:
    # A Docker container without a cgroup namespace: the mount's ROOT is /docker/<id>.
    fake.cgroups(
        f"12:memory:{cgroup_path}\n",
        "1290 1283 0:35 /docker/0123abcd /sys/fs/cgroup/memory ro,nosuid,nodev,noexec,"
        "relatime master:17 - cgroup cgroup rw,memory\n",
    )

    located = locate(fake.root, "memory")

    assert not isinstance(located, str)
    assert leaf == located.dirs[0]


def test_v1_subpath_mount_reads_the_container_limit(fake: FakeRoot) -> None:
    fake.cgroups(
        "12:memory:/docker/0123abcd\n",
        "1290 1283 0:35 /docker/0123abcd /sys/fs/cgroup/memory ro,nosuid,nodev,noexec,"
        "relatime master:17 - cgroup cgroup rw,memory\n",
    )
    v1_group(fake, "", 256 * MIB, hierarchical=256 * MIB)

    info, sources = probe_memory(fake.root, {})

    assert (info.limit_bytes, info.source) == (256 * MIB, "cgroup_v1")
    assert sources["memory.limit_bytes"] == "/sys/fs/cgroup/memory/memory.limit_in_bytes"


def test_v1_hierarchical_limit_reveals_an_ancestor_the_container_cannot_see(
    fake: FakeRoot,
) -> None:
    fake.cgroups(
        "12:memory:/docker/0123abcd\n",
        "1290 1283 0:35 /docker/0123abcd /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n",
    )
    v1_group(fake, "", UNLIMITED_4K, hierarchical=768 * MIB)

    info, sources = probe_memory(fake.root, {})

    assert info.limit_bytes == 768 * MIB
    assert "hierarchical_memory_limit" in sources["memory.limit_bytes"]


def test_octal_escaped_mount_point_is_unescaped(fake: FakeRoot) -> None:
    # fs/proc_namespace.c mangles a space in a mount point as \040.
    fake.cgroups(
        "4:memory:/a\n",
        "35 31 0:32 / /sys/fs/cgroup/my\\040memory rw - cgroup cgroup rw,memory\n",
    )
    fake.files("/sys/fs/cgroup/my memory/a", {"memory.limit_in_bytes": GIB})

    info, _ = probe_memory(fake.root, {})

    assert info.limit_bytes == GIB


def test_deleted_suffix_is_dropped_from_the_cgroup_path() -> None:
    assert parse_cgroup_file("4:memory:/gone (deleted)\n") == [("4", ("memory",), "/gone")]


def test_mountinfo_parser_keeps_only_cgroup_mounts_with_their_options() -> None:
    mounts = cgroup_mounts(MOUNTINFO_HYBRID)

    assert (mounts[0].mount_point, mounts[0].super_options) == ("/sys/fs/cgroup/cpu", ("rw", "cpu"))
    assert {"cgroup", "cgroup2"} == {m.fs_type for m in mounts}


# --- several mounts of one hierarchy, mount ROOTs relative to the namespace ----------

# A container's own cgroup2 mount, rooted at its group (created with cgroupns=host), and
# the host's tree bind-mounted at /host/sys/fs/cgroup: one hierarchy (same 0:29 device).
CONTAINER_MOUNT = (
    "1290 1283 0:29 /org/tenant /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - "
    "cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n"
)
HOST_TREE_MOUNT = (
    "1301 1283 0:29 / /host/sys/fs/cgroup ro,nosuid,nodev,noexec,relatime master:9 - "
    "cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n"
)


def container_beside_host_tree(fake: FakeRoot, mountinfo: str) -> None:
    fake.cgroups("0::/org/tenant/app\n", mountinfo)
    fake.files("/sys/fs/cgroup", {"cgroup.controllers": "cpu memory pids", "memory.max": 2 * GIB})
    fake.files("/sys/fs/cgroup/app", {"memory.max": "max"})
    fake.files("/host/sys/fs/cgroup", {"cgroup.controllers": "cpu memory pids"})
    fake.files("/host/sys/fs/cgroup/org", {"memory.max": GIB})
    fake.files("/host/sys/fs/cgroup/org/tenant", {"memory.max": 2 * GIB})
    fake.files("/host/sys/fs/cgroup/org/tenant/app", {"memory.max": "max"})


@pytest.mark.parametrize(
    "mountinfo",
    [CONTAINER_MOUNT + HOST_TREE_MOUNT, HOST_TREE_MOUNT + CONTAINER_MOUNT],
    ids=["container-mount-first", "host-tree-first"],
)
def test_ancestor_limit_visible_only_through_another_mount_of_the_hierarchy_counts(
    fake: FakeRoot, mountinfo: str
) -> None:
    container_beside_host_tree(fake, mountinfo)

    info, sources = probe_memory(fake.root, {})

    assert (GIB, "cgroup_v2") == (info.limit_bytes, info.source)
    assert "/host/sys/fs/cgroup/org/memory.max" == sources["memory.limit_bytes"]


@pytest.mark.parametrize(
    "mountinfo",
    [CONTAINER_MOUNT + HOST_TREE_MOUNT, HOST_TREE_MOUNT + CONTAINER_MOUNT],
    ids=["container-mount-first", "host-tree-first"],
)
def test_each_group_is_read_once_preferring_the_mount_under_sys_fs_cgroup(
    fake: FakeRoot, mountinfo: str
) -> None:
    container_beside_host_tree(fake, mountinfo)

    located = locate(fake.root, "memory")

    assert not isinstance(located, str)
    assert (
        "/sys/fs/cgroup/app",  # /org/tenant/app
        "/sys/fs/cgroup",  # /org/tenant
        "/host/sys/fs/cgroup/org",
        "/host/sys/fs/cgroup",  # the root group
    ) == located.dirs
    assert "the 4 cgroup v2 groups up to /sys/fs/cgroup and /host/sys/fs/cgroup" == located.span()


def test_mount_rooted_above_the_namespace_maps_path_minus_root(fake: FakeRoot) -> None:
    # A cgroup2 mount made outside the reader's cgroup namespace, whose root is two levels
    # down: mountinfo shows its ROOT relative to the namespace (kernfs_path_from_node), and
    # /proc/self/cgroup does the same for a process moved out of the namespace.
    fake.cgroups(
        "0::/../../app\n",
        "1204 1195 0:29 /../.. /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - cgroup2 "
        "cgroup2 rw,nsdelegate,memory_recursiveprot\n",
    )
    fake.files("/sys/fs/cgroup", {"cgroup.controllers": "memory", "memory.max": 3 * GIB})
    fake.files("/sys/fs/cgroup/app", {"memory.max": GIB})

    info, sources = probe_memory(fake.root, {})

    assert (GIB, "/sys/fs/cgroup/app/memory.max") == (
        info.limit_bytes, sources["memory.limit_bytes"]
    )


@pytest.mark.parametrize(
    ("root", "path", "dirs"),
    [
        # path minus ROOT, as automemlimit's resolveCgroupPath and automaxprocs' Translate
        ("/", "/a/b", ("/m/a/b", "/m/a", "/m")),
        ("/a", "/a/b", ("/m/b", "/m")),
        ("/a", "/a", ("/m",)),
        ("/../..", "/../../app", ("/m/app", "/m")),
        ("/../..", "/../..", ("/m",)),
        ("/..", "/../x/y", ("/m/x/y", "/m/x", "/m")),
        # the namespace root / is not an ancestor of /../sibling: the mount point is a guess
        ("/", "/../sibling", ("/m",)),
        # a path beside ROOT is not shown: the mount point is a guess
        ("/a", "/b", ("/m",)),
        ("/a", "/ab", ("/m",)),
    ],
)
def test_v2_directories_are_the_path_minus_the_mount_root(
    fake: FakeRoot, root: str, path: str, dirs: tuple[str, ...]
) -> None:
    fake.cgroups(f"0::{path}\n", f"30 25 0:29 {root} /m rw - cgroup2 cgroup2 rw\n")
    fake.files("/m", {"cgroup.controllers": "memory"})

    located = locate(fake.root, "memory")

    assert not isinstance(located, str)
    assert dirs == located.dirs


def test_v1_controller_mounted_twice_reads_each_group_once(fake: FakeRoot) -> None:
    # automemlimit's v1_conflicting_mounts fixture: one memory hierarchy at two places.
    fake.cgroups(
        "12:memory:/workload/job\n",
        "41 30 0:37 /workload /run/containerd/rootfs/sys/fs/cgroup/memory rw,nosuid,nodev,"
        "noexec,relatime - cgroup cgroup rw,memory\n"
        "42 30 0:37 /workload /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime - cgroup "
        "cgroup rw,memory\n",
    )
    v1_group(fake, "/job", UNLIMITED_4K, hierarchical=512 * MIB)
    v1_group(fake, "", 768 * MIB)

    info, sources = probe_memory(fake.root, {})

    assert (512 * MIB, "/sys/fs/cgroup/memory/job/memory.stat (hierarchical_memory_limit)") == (
        info.limit_bytes, sources["memory.limit_bytes"]
    )


# --- Slurm and node RAM ---------------------------------------------------------


def no_cgroup_limit(fake: FakeRoot) -> None:
    fake.hybrid(memory="/slurm")
    v1_group(fake, "", UNLIMITED_4K)
    v1_group(fake, "/slurm", UNLIMITED_4K, hierarchical=UNLIMITED_4K)


@pytest.mark.parametrize(
    ("environ", "expected", "where"),
    [
        ({"SLURM_MEM_PER_NODE": "1024"}, 1024 * MIB, "SLURM_MEM_PER_NODE"),
        ({"SLURM_MEM_PER_CPU": "700", "SLURM_CPUS_ON_NODE": "2"}, 1400 * MIB,
         "SLURM_MEM_PER_CPU * SLURM_CPUS_ON_NODE"),
        ({"SLURM_MEM_PER_GPU": "8192", "SLURM_GPUS_ON_NODE": "2"}, 16384 * MIB,
         "SLURM_MEM_PER_GPU * SLURM_GPUS_ON_NODE"),
    ],
)
def test_slurm_request_used_when_no_cgroup_limit(
    fake: FakeRoot, environ: dict[str, str], expected: int, where: str
) -> None:
    no_cgroup_limit(fake)

    info, sources = probe_memory(fake.root, environ)

    assert (expected, "slurm") == (info.limit_bytes, info.source)
    assert where == sources["memory.limit_bytes"]


@pytest.mark.parametrize(("node_id", "cpus"), [("0", 72), ("1", 72), ("2", 36)])
def test_slurm_mem_per_cpu_expands_job_cpus_per_node_by_node_id(
    fake: FakeRoot, node_id: str, cpus: int
) -> None:
    no_cgroup_limit(fake)
    environ = {
        "SLURM_MEM_PER_CPU": "100",
        "SLURM_JOB_CPUS_PER_NODE": "72(x2),36",
        "SLURM_NODEID": node_id,
    }

    info, _ = probe_memory(fake.root, environ)

    assert 100 * cpus * MIB == info.limit_bytes


def test_slurm_mem_per_node_zero_means_whole_node_not_a_limit(fake: FakeRoot) -> None:
    no_cgroup_limit(fake)

    info, sources = probe_memory(fake.root, {"SLURM_MEM_PER_NODE": "0"})

    assert (info.limit_bytes, info.source) == (None, None)
    assert "whole node" in sources["memory.limit_bytes"]


def test_slurm_mem_per_gpu_zero_means_whole_node_even_without_gpu_count(fake: FakeRoot) -> None:
    no_cgroup_limit(fake)

    info, sources = probe_memory(fake.root, {"SLURM_MEM_PER_GPU": "0"})

    assert (info.limit_bytes, info.source) == (None, None)
    assert "SLURM_MEM_PER_GPU=0 asks for the whole node: no finite limit" in (
        sources["memory.limit_bytes"]
    )


def test_cgroup_limit_beats_slurm_request(fake: FakeRoot) -> None:
    fake.hybrid(memory="/job")
    v1_group(fake, "/job", GIB)

    info, _ = probe_memory(fake.root, {"SLURM_MEM_PER_NODE": "4096"})

    assert (info.limit_bytes, info.source) == (GIB, "cgroup_v1")


def test_nothing_visible_gives_no_limit_but_node_total(fake: FakeRoot) -> None:
    no_cgroup_limit(fake)

    info, sources = probe_memory(fake.root, {})

    assert (info.limit_bytes, info.source, info.node_total_bytes) == (None, None, 24683656 * 1024)
    assert "never used as the limit" in sources["memory.limit_bytes"]


def test_node_total_off_linux_falls_back_to_psutil(monkeypatch: pytest.MonkeyPatch) -> None:
    # Live root without /proc/meminfo (macOS): psutil, imported only then.
    class FakePsutil:
        @staticmethod
        def virtual_memory() -> object:
            return type("svmem", (), {"total": 16 * GIB})()

    monkeypatch.setattr(_memory, "read_or_reason", lambda root, path: (None, "missing"))
    monkeypatch.setitem(sys.modules, "psutil", FakePsutil)

    assert node_total_bytes("/") == (16 * GIB, "psutil.virtual_memory().total")


def test_node_total_missing_without_proc_meminfo(tmp_path: Path) -> None:
    assert node_total_bytes(str(tmp_path)) == (None, "/proc/meminfo does not exist")
