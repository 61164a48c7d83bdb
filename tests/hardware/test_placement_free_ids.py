"""One machine, one hardware id, whichever CPUs a process is pinned to: two real
processes pinned to CPU 0 and to CPU 1 describe fixture machines without ACPI CPPC (most
Intel servers), without cpufreq, without topology. The fixture's ``/proc/self`` is the
reading process's own, so its affinity is the real pinning."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.fake_hardware import FakeRoot, cpuinfo_block

pytestmark = pytest.mark.skipif(
    not hasattr(os, "sched_getaffinity") or not {0, 1} <= os.sched_getaffinity(0),
    reason="needs CPUs 0 and 1",
)

CAPTURE = textwrap.dedent("""
    import json, os, sys
    sys.path.insert(0, sys.argv[2])
    from helpers.fake_hardware import FakeNvml
    from stagetimer.hardware import capture_hardware, hardware_id
    hw = capture_hardware(root=sys.argv[1], environ={}, nvml=FakeNvml([]))
    print(json.dumps({"id": hardware_id(hw), "sources": hw.sources,
                      "pinned": sorted(os.sched_getaffinity(0))}))
""")


def _machine(fake: FakeRoot) -> None:
    """Two CPUs of a bare-metal machine (no hypervisor flag), nothing per CPU yet."""
    (fake.path / "proc").mkdir(parents=True, exist_ok=True)
    (fake.path / "proc" / "self").symlink_to("/proc/self")  # the reader's own
    fake.meminfo()
    fake.cpuinfo(cpuinfo_block(i, hypervisor=False, tsc_known_freq=False) for i in range(2))
    fake.files("/sys/devices/system/node/node0", {"cpulist": "0-1"})


def _cpufreq_without_cppc(fake: FakeRoot) -> None:
    for cpu in (0, 1):
        fake.cpufreq(cpu, 800000, 3500000)
        fake.topology(cpu, core_cpus_list=str(cpu), core=cpu)


def _neither_cpufreq_nor_topology(fake: FakeRoot) -> None:
    pass


def _unreadable_cppc(fake: FakeRoot) -> None:
    for cpu in (0, 1):
        fake.cpufreq(cpu, 800000, 3500000)
        fake.topology(cpu, core_cpus_list=str(cpu), core=cpu)
        fake.files(f"/sys/devices/system/cpu/cpu{cpu}/acpi_cppc", {"nominal_freq": 0})


def _pinned(root: Path, cpu: int) -> dict[str, object]:
    done = subprocess.run(
        ["taskset", "-c", str(cpu), sys.executable, "-c", CAPTURE, str(root),
         str(Path(__file__).parents[1])],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    "machine", [_cpufreq_without_cppc, _neither_cpufreq_nor_topology, _unreadable_cppc]
)
def test_processes_pinned_to_cpu_0_and_cpu_1_get_one_hardware_id(
    tmp_path: Path, machine: Callable[[FakeRoot], None]
) -> None:
    fake = FakeRoot(tmp_path / "root")
    _machine(fake)
    machine(fake)

    first, second = _pinned(fake.path, 0), _pinned(fake.path, 1)

    assert ([0], [1]) == (first["pinned"], second["pinned"])
    assert first["sources"] == second["sources"]
    assert first["id"] == second["id"]
    assert "/cpu0/" not in json.dumps(first["sources"])
