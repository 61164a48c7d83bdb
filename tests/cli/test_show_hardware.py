"""``stagetimer hardware``'s text: every field once, each source or reason said once,
NVML errors in words, and nothing wider than a 100-column terminal."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from helpers.fake_hardware import (
    ERROR_CODES,
    GIB,
    FakeGpu,
    FakeNvml,
    FakeRoot,
    a100,
    cpuinfo_block,
    h200_observed,
    l4,
)

from stagetimer.hardware import Hardware, capture_hardware, description
from stagetimer.hardware._show import WIDTH, format_hardware, plain_words

SLURM = {
    "SLURM_JOB_ID": "4711",
    "SLURM_JOB_PARTITION": "gpu-long-running-partition",
    "SLURM_CPUS_PER_TASK": "16",
    "SLURM_CPUS_ON_NODE": "32",
    "SLURM_JOB_CPUS_PER_NODE": "32(x4)",
    "SLURM_GPUS_ON_NODE": "4",
    "SLURM_NTASKS": "4",
    "SLURM_JOB_NUM_NODES": "4",
    "SLURM_MEM_PER_NODE": "515000",
    "CUDA_VISIBLE_DEVICES": "0,1,2",
}


def node(fake: FakeRoot, *, limited: bool) -> None:
    """A hybrid-cgroup node with two CPUs, with or without a memory limit."""
    fake.hybrid(memory="/slurm/uid_0/job_4711/step_batch")
    fake.files("/sys/fs/cgroup/memory", {"memory.limit_in_bytes": 9223372036854771712})
    if limited:
        fake.files("/sys/fs/cgroup/memory/slurm/uid_0/job_4711/step_batch",
                   {"memory.limit_in_bytes": 4 * GIB})
    fake.files("/sys/fs/cgroup/cpu", {"cpu.cfs_quota_us": -1, "cpu.cfs_period_us": 100000})
    fake.status("0-1")
    fake.meminfo()
    fake.cpuinfo(cpuinfo_block(i, mhz="2445.400") for i in range(2))
    for cpu in (0, 1):
        fake.topology(cpu, core_cpus_list=str(cpu), core=cpu)


def capture(tmp_path: Path, *, limited: bool, environ: dict[str, str], nvml: FakeNvml) -> Hardware:
    fake = FakeRoot(tmp_path)
    node(fake, limited=limited)
    return capture_hardware(root=fake.root, environ=environ, nvml=nvml)


CASES = {
    "no driver, no job": dict(
        limited=False, environ={},
        nvml=FakeNvml([], init_error=ERROR_CODES["NVML_ERROR_LIBRARY_NOT_FOUND"]),
    ),
    "slurm job, three GPUs": dict(limited=True, environ=SLURM,
                                  nvml=FakeNvml([a100(), l4(), h200_observed()])),
    "a GPU without bus width": dict(
        limited=True, environ={},
        nvml=FakeNvml([FakeGpu("NVIDIA GH200 480GB", "GPU-1", 102005473280, 0, 2619,
                               clock_error=ERROR_CODES["NVML_ERROR_NOT_SUPPORTED"])]),
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_every_line_fits_a_100_column_terminal(tmp_path: Path, case: str) -> None:
    text = format_hardware(capture(tmp_path, **CASES[case]))  # type: ignore[arg-type]

    assert [] == [line for line in text.splitlines() if len(line) > WIDTH]


@pytest.mark.parametrize("case", list(CASES))
def test_every_field_of_the_description_has_its_row(tmp_path: Path, case: str) -> None:
    hw = capture(tmp_path, **CASES[case])  # type: ignore[arg-type]
    stored = description(hw)
    expected = [key for key, value in stored.items() if not isinstance(value, dict)]
    for section, value in stored.items():
        if isinstance(value, dict) and section != "sources":
            expected += [f"{section}.{name}" for name in value]
    for slot, gpu in enumerate(stored["gpus"]):
        expected += [f"gpus[{slot}].{name}" for name in gpu]

    rows = {line.split(" ", 1)[0] for line in format_hardware(hw).splitlines()}

    assert [] == [path for path in expected if path not in rows]


def notes(text: str) -> list[str]:
    """The notes of the listing: ``(from …)`` or ``(reason)``, at a row's end or on the
    lines below a group of rows, joined where they wrap."""
    found: list[str] = []
    current: str | None = None
    for line in text.splitlines()[2:]:
        if line.startswith(" "):
            part = line.strip()
            if current is not None:
                current += " " + part
            elif part.startswith("("):
                current = part
            else:
                continue  # a long value continuing under its column
        else:
            match = re.search(r"  (\(.*)$", line)
            if match is None:
                continue
            current = match.group(1)
        if current.count("(") == current.count(")"):
            found.append(current.removeprefix("(from ").removeprefix("(").removesuffix(")"))
            current = None
    return found


@pytest.mark.parametrize("case", list(CASES))
def test_each_source_and_reason_is_said_once(tmp_path: Path, case: str) -> None:
    hw = capture(tmp_path, **CASES[case])  # type: ignore[arg-type]
    text = format_hardware(hw)

    said = Counter(notes(text))

    assert {} == {note: n for note, n in said.items() if n > 1}


@pytest.mark.parametrize("case", list(CASES))
def test_every_missing_value_is_followed_by_its_reason(tmp_path: Path, case: str) -> None:
    hw = capture(tmp_path, **CASES[case])  # type: ignore[arg-type]
    text = format_hardware(hw)
    stored = description(hw)
    missing = [path for path in hw.sources if "." in path and "[" not in path
               and path.split(".")[0] in stored
               and stored[path.split(".")[0]].get(path.split(".", 1)[1], 0) is None]
    values = {line[30:].strip() for line in text.splitlines()}

    assert [] == [
        path for path in missing
        if plain_words(hw.sources[path]) not in set(notes(text)) | values
    ]


def test_a_missing_nvml_library_reads_as_no_nvidia_driver(tmp_path: Path) -> None:
    text = format_hardware(capture(tmp_path, **CASES["no driver, no job"]))  # type: ignore[arg-type]

    assert 1 == text.count("no NVIDIA driver (NVML library not found)")
    assert "NVMLError" not in text


@pytest.mark.parametrize(
    ("stored", "shown"),
    [
        ("NVML unavailable: NVMLError_LibraryNotFound at nvmlInit",
         "no NVIDIA driver (NVML library not found)"),
        ("NVML unavailable: NVMLError_DriverNotLoaded at nvmlInit", "NVIDIA driver not loaded"),
        ("NVML unavailable: NVMLError_NoPermission at nvmlInit",
         "no permission to query the GPU (NVML)"),
        ("nvmlDeviceGetMaxClockInfo: NVMLError_NotSupported (reported 0 or failed)",
         "nvmlDeviceGetMaxClockInfo: not supported by this GPU or driver (reported 0 or failed)"),
        ("nvmlDeviceGetMemoryBusWidth: NVMLError_FunctionNotFound",
         "nvmlDeviceGetMemoryBusWidth: not in this driver's NVML (driver too old)"),
        ("NVML unavailable: OSError at nvmlInit", "NVML unavailable: OSError at nvmlInit"),
        ("NVML unavailable: NVMLError_Brandnew at nvmlInit",
         "NVML unavailable: NVMLError_Brandnew at nvmlInit"),
    ],
)
def test_nvml_errors_are_said_in_words(stored: str, shown: str) -> None:
    assert shown == plain_words(stored)


def test_a_value_too_long_for_its_line_continues_under_its_column(tmp_path: Path) -> None:
    lines = format_hardware(
        capture(tmp_path, **CASES["slurm job, three GPUs"])  # type: ignore[arg-type]
    ).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("scheduler.env "))
    column = lines[start].index("SLURM_")

    assert " " * column + "SLURM_" in lines[start + 1]
