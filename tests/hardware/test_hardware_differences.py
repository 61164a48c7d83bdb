"""hardware_differences: the fields that change a stage's duration, and only those."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from stagetimer.hardware import (
    CpuInfo,
    Difference,
    GpuInfo,
    Hardware,
    MemoryInfo,
    SchedulerInfo,
    description,
    format_differences,
    hardware_differences,
)

GIB = 1024**3


def _a100(index: int = 0) -> GpuInfo:
    return GpuInfo(
        index=index,
        name="NVIDIA A100-SXM4-40GB",
        uuid=f"GPU-a100-{index}",
        memory_usable_bytes=42_505_273_344,
        memory_bus_width_bits=5120,
        max_memory_clock_mhz=1215,
        peak_memory_bandwidth_bytes_per_s=1_555_200_000_000,
    )


def _machine() -> Hardware:
    return Hardware(
        host="node17",
        os="Linux 6.1.0-18-amd64",
        python="CPython 3.11.7",
        machine="x86_64",
        cpu=CpuInfo(
            affinity=(0, 1, 2, 3),
            logical_cpus=4,
            physical_cores=2,
            clock_min_mhz=1500.0,
            clock_max_mhz=3500.0,
            clock_source="cpufreq",
            model_name="AMD EPYC 7763 64-Core Processor",
            quota_cpus=None,
            node_logical_cpus=128,
        ),
        memory=MemoryInfo(limit_bytes=16 * GIB, source="cgroup_v1", node_total_bytes=512 * GIB),
        gpus=(_a100(),),
        scheduler=SchedulerInfo(kind="slurm", env={"SLURM_JOB_PARTITION": "gpu"}),
        sources={"memory.limit_bytes": "/sys/fs/cgroup/memory/slurm/memory.limit_in_bytes"},
    )


def _changed(path: str, value: Any) -> dict[str, Any]:
    """The machine's stored description with the value at dotted ``path`` replaced."""
    data = copy.deepcopy(description(_machine()))
    keys = path.replace("[0]", ".0").split(".")
    target: Any = data
    for key in keys[:-1]:
        target = target[int(key)] if key.isdigit() else target[key]
    target[keys[-1]] = value
    return data


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        (
            "cpu.model_name",
            "Intel Xeon Gold 6348",
            Difference("cpu.model_name", "AMD EPYC 7763 64-Core Processor", "Intel Xeon Gold 6348"),
        ),
        ("cpu.logical_cpus", 8, Difference("cpu.logical_cpus", 4, 8)),
        ("cpu.physical_cores", 4, Difference("cpu.physical_cores", 2, 4)),
        ("cpu.clock_max_mhz", 2450.0, Difference("cpu.clock_max_mhz", 3500.0, 2450.0)),
        ("cpu.quota_cpus", 2.0, Difference("cpu.quota_cpus", None, 2.0)),
        ("memory.limit_bytes", 64 * GIB, Difference("memory.limit_bytes", 16 * GIB, 64 * GIB)),
        ("memory.high_bytes", 8 * GIB, Difference("memory.high_bytes", None, 8 * GIB)),
        (
            "gpus[0].name",
            "NVIDIA H100 80GB HBM3",
            Difference("gpus[0].name", "NVIDIA A100-SXM4-40GB", "NVIDIA H100 80GB HBM3"),
        ),
        (
            "gpus[0].memory_usable_bytes",
            85_520_809_984,
            Difference("gpus[0].memory_usable_bytes", 42_505_273_344, 85_520_809_984),
        ),
        (
            "gpus[0].peak_memory_bandwidth_bytes_per_s",
            3_352_320_000_000,
            Difference(
                "gpus[0].peak_memory_bandwidth_bytes_per_s", 1_555_200_000_000, 3_352_320_000_000
            ),
        ),
        ("python", "CPython 3.12.1", Difference("python", "CPython 3.11", "CPython 3.12")),
        ("python", "PyPy 3.11.7", Difference("python", "CPython 3.11", "PyPy 3.11")),
        ("os", "Darwin 23.1.0", Difference("os", "Linux", "Darwin")),
        ("machine", "aarch64", Difference("machine", "x86_64", "aarch64")),
    ],
)
def test_a_field_that_changes_timings_is_a_difference(
    path: str, value: Any, expected: Difference
) -> None:
    assert [expected] == hardware_differences(_machine(), _changed(path, value))


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("host", "node18"),
        ("python", "CPython 3.11.2"),
        ("os", "Linux 6.1.0-21-amd64"),
        ("cpu.clock_max_mhz", 3520.0),  # within 1 %
        ("cpu.clock_min_mhz", 800.0),
        ("cpu.affinity", [4, 5, 6, 7]),
        ("cpu.node_logical_cpus", 64),
        ("memory.source", "slurm"),
        ("memory.node_total_bytes", 1024 * GIB),
        ("gpus[0].uuid", "GPU-other"),
        ("gpus[0].index", 3),
        ("scheduler.env", {"SLURM_JOB_PARTITION": "gpu", "SLURM_JOB_ID": "4712"}),
        ("scheduler.job_id", "4712"),
        ("sources", {"memory.limit_bytes": "SLURM_MEM_PER_NODE"}),
        ("gpu_reason", "no driver"),
    ],
)
def test_a_field_that_does_not_change_timings_is_no_difference(path: str, value: Any) -> None:
    assert [] == hardware_differences(_machine(), _changed(path, value))


def test_the_gpu_count_is_the_field_gpus() -> None:
    two = Hardware(gpus=(_a100(0), _a100(1)))
    assert [Difference("gpus", 2, 1)] == hardware_differences(two, Hardware(gpus=(_a100(0),)))


def test_a_quota_written_as_an_int_equals_the_same_float() -> None:
    as_int, as_float = _changed("cpu.quota_cpus", 2), _changed("cpu.quota_cpus", 2.0)
    assert [] == hardware_differences(as_int, as_float)


def test_a_description_missing_keys_reads_them_as_unknown() -> None:
    expected = [Difference("memory.limit_bytes", 16 * GIB, None)]
    stored = description(_machine())
    del stored["memory"]["limit_bytes"]
    assert expected == hardware_differences(_machine(), stored)


def test_a_stored_description_and_its_hardware_object_have_no_differences() -> None:
    assert [] == hardware_differences(description(_machine()), _machine())


def test_something_that_is_no_description_is_refused_by_type() -> None:
    with pytest.raises(TypeError, match="not list"):
        hardware_differences(_machine(), [1, 2])  # type: ignore[arg-type]


def test_differences_read_in_words_with_human_units() -> None:
    diffs = [
        Difference("gpus[0].name", "NVIDIA A100-SXM4-40GB", "NVIDIA H100 80GB HBM3"),
        Difference("memory.limit_bytes", 16 * GIB, 64 * GIB),
    ]
    expected = (
        "gpus[0].name: NVIDIA A100-SXM4-40GB → NVIDIA H100 80GB HBM3;"
        " memory.limit_bytes: 16 GiB → 64 GiB"
    )
    assert expected == format_differences(diffs)


@pytest.mark.parametrize(
    ("difference", "expected"),
    [
        (
            Difference("memory.limit_bytes", None, 524_288_000),
            "memory.limit_bytes: no limit → 500 MiB",
        ),
        (
            Difference("memory.high_bytes", 2_097_152_000, None),
            "memory.high_bytes: 1.95 GiB → no limit",
        ),
        (Difference("cpu.quota_cpus", None, 1.5), "cpu.quota_cpus: no quota → 1.5 CPUs"),
        (Difference("cpu.clock_max_mhz", 3500.0, 2450.0), "cpu.clock_max_mhz: 3500 MHz → 2450 MHz"),
        (Difference("cpu.physical_cores", None, 4), "cpu.physical_cores: unknown → 4"),
        (
            Difference("gpus[0].peak_memory_bandwidth_bytes_per_s", 1_555_200_000_000, None),
            "gpus[0].peak_memory_bandwidth_bytes_per_s: 1.56 TB/s → unknown",
        ),
        (Difference("gpus", 1, 0), "gpus: 1 → 0"),
    ],
)
def test_each_kind_of_value_reads_in_its_unit(difference: Difference, expected: str) -> None:
    assert expected == format_differences([difference])


def test_no_differences_format_as_nothing() -> None:
    assert "" == format_differences([])
