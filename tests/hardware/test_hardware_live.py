"""The probes against the real machine: a real memory cgroup, real affinity, the real clock.

These run as root in CI. Each skips, saying why, only where the machine cannot
do what it needs (no cgroup memory controller, not root, not Linux).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stagetimer.hardware import capture_hardware
from stagetimer.hardware._cgroup import locate

GIB = 1024**3

CHILD_REPORTS_MEMORY = """\
import json, sys
sys.stdin.readline()  # wait until the parent moved this process into the test cgroup
from stagetimer.hardware import capture_hardware
hw = capture_hardware()
print(json.dumps({"limit": hw.memory.limit_bytes, "source": hw.memory.source,
                  "where": hw.sources["memory.limit_bytes"]}))
"""

CHILD_PINNED_TO_CPU0 = """\
import json, os
os.sched_setaffinity(0, {0})
from stagetimer.hardware import capture_hardware
hw = capture_hardware()
print(json.dumps({"affinity": hw.cpu.affinity, "logical": hw.cpu.logical_cpus}))
"""


def _memory_hierarchy() -> tuple[int, Path, Path]:
    """(cgroup version, this process's memory cgroup directory, mount point), or skip."""
    if not sys.platform.startswith("linux"):
        pytest.skip(f"cgroups are Linux-only; this is {sys.platform}")
    if os.geteuid() != 0:
        pytest.skip("creating a memory cgroup needs root")
    located = locate("/", "memory")
    if isinstance(located, str):
        pytest.skip(f"no cgroup memory controller here: {located}")
    return located.version, Path(located.dirs[0]), Path(located.mount_point)


def _limit_file(version: int) -> str:
    return "memory.limit_in_bytes" if version == 1 else "memory.max"


@contextlib.contextmanager
def _test_group() -> Iterator[tuple[int, Path]]:
    """A fresh memory cgroup below this process's own group (else the mount root); removed after."""
    version, own, mount = _memory_hierarchy()
    name = f"stagetimer-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    errors: list[str] = []
    group: Path | None = None
    for parent in (own, mount) if version == 1 else (mount, own):
        try:
            (parent / name).mkdir()
            group = parent / name
            break
        except OSError as err:
            errors.append(f"{parent}: {err.strerror}")
    if group is None:
        pytest.skip("cannot create a memory cgroup: " + "; ".join(errors))
    try:
        yield version, group
    finally:
        for directory in sorted(group.glob("**/"), key=lambda p: len(p.parts), reverse=True):
            _rmdir(directory)


def _rmdir(directory: Path) -> None:
    # The kernel may take a moment to let go of a group whose last process just exited.
    for _ in range(50):
        try:
            directory.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.05)
    directory.rmdir()


def _run_child_in(group: Path) -> dict[str, Any]:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD_REPORTS_MEMORY],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        (group / "cgroup.procs").write_text(f"{child.pid}\n")
        out, err = child.communicate("go\n", timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()
    assert child.returncode == 0, err
    result: dict[str, Any] = json.loads(out)
    return result


@pytest.mark.root
def test_real_memory_cgroup_limit_is_seen_by_a_child() -> None:
    with _test_group() as (version, group):
        (group / _limit_file(version)).write_text(f"{GIB}\n")

        result = _run_child_in(group)

    assert (GIB, f"cgroup_v{version}") == (result["limit"], result["source"])
    assert result["where"].endswith(f"{group.name}/{_limit_file(version)}")


@pytest.mark.root
def test_real_memory_cgroup_limit_of_an_ancestor_is_found_by_the_walk() -> None:
    with _test_group() as (version, group):
        (group / _limit_file(version)).write_text(f"{GIB}\n")
        if version == 2:
            (group / "cgroup.subtree_control").write_text("+memory\n")
        inner = group / "inner"
        inner.mkdir()

        result = _run_child_in(inner)

    assert (GIB, f"cgroup_v{version}") == (result["limit"], result["source"])
    # The limit is named at the ancestor that holds it, not the child's own group.
    assert result["where"].endswith(f"{group.name}/{_limit_file(version)}")


@pytest.mark.root
def test_real_affinity_of_a_pinned_child() -> None:
    if not hasattr(os, "sched_setaffinity"):
        pytest.skip(f"no sched_setaffinity on {sys.platform}")
    if 0 not in os.sched_getaffinity(0):
        pytest.skip("CPU 0 is not in this process's affinity")

    out = subprocess.run(
        [sys.executable, "-c", CHILD_PINNED_TO_CPU0],
        capture_output=True, text=True, check=True, timeout=120,
    ).stdout

    # the CPU it is pinned to is placement (each run's ``cpus``); how many is capacity
    assert json.loads(out) == {"affinity": None, "logical": 1}


def _cpuinfo_blocks() -> list[dict[str, str]]:
    blocks = []
    for chunk in Path("/proc/cpuinfo").read_text().split("\n\n"):
        pairs = (line.partition(":") for line in chunk.splitlines())
        fields = {key.strip(): value.strip() for key, _, value in pairs}
        if "processor" in fields:
            blocks.append(fields)
    return blocks


def test_live_kvm_clock_follows_the_cpuinfo_rule() -> None:
    if not Path("/proc/cpuinfo").exists():
        pytest.skip("no /proc/cpuinfo")
    cpu_dir = Path("/sys/devices/system/cpu")
    interfaces = sorted(
        str(p)
        for pattern in ("cpu[0-9]*/cpufreq/cpuinfo_max_freq", "cpu[0-9]*/acpi_cppc/nominal_freq")
        for p in cpu_dir.glob(pattern)
    )
    if interfaces:
        pytest.skip(f"this machine has a clock interface ({interfaces[0]}): the KVM rule is moot")
    blocks = _cpuinfo_blocks()
    readings = [float(b["cpu MHz"]) for b in blocks if "cpu MHz" in b]
    admitted = (
        len(readings) == len(blocks) > 0
        and all({"hypervisor", "tsc_known_freq"} <= set(b.get("flags", "").split()) for b in blocks)
        and max(readings) - min(readings) <= 0.1
    )

    hw = capture_hardware(root="/", environ={})  # a fresh capture, not the cached one

    print(f"cpu MHz {readings}; KVM rule admits them: {admitted}; {hw.sources['cpu.clock_source']}")
    if admitted:
        assert ("kvm_cpuinfo", hw.cpu.clock_min_mhz) == (hw.cpu.clock_source, hw.cpu.clock_max_mhz)
        assert hw.cpu.clock_max_mhz is not None
        assert abs(hw.cpu.clock_max_mhz - readings[0]) <= 0.1
    else:
        assert (
            hw.cpu.clock_source, hw.cpu.clock_min_mhz, hw.cpu.clock_max_mhz
        ) == (None, None, None)


def test_import_does_not_load_psutil_pynvml_or_cattrs() -> None:
    code = (
        "import stagetimer.hardware, sys; "
        "loaded = {'psutil', 'pynvml', 'cattrs'} & set(sys.modules); "
        "assert not loaded, loaded"
    )

    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)

    assert result.returncode == 0, result.stderr
