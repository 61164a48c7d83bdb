"""Artifact trees written directly in the file format, for the compute statement's tests.

Two hardware descriptions: a node with 4 x H100 (64 logical CPUs, 512 GiB limit) and a
CPU-only machine (2 logical CPUs). The figures ``tests/analysis/test_compute.py``
expects are worked out in the comments.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["CPU_ONLY", "GIB", "GPU_NODE", "H100", "run", "two_machine_tree", "write"]

GIB = 1 << 30
H100 = "NVIDIA H100 80GB HBM3"
GPU_NODE = {
    "cpu": {"model_name": "AMD EPYC 9654 96-Core Processor", "logical_cpus": 64},
    "memory": {"limit_bytes": 512 * GIB, "source": "cgroup_v2"},
    "gpus": [{"index": i, "name": H100} for i in range(4)],
    "sources": {},
}
CPU_ONLY = {
    "cpu": {"model_name": "Intel Xeon Gold 6248", "logical_cpus": 2},
    "memory": {"limit_bytes": 8 * GIB, "source": "slurm"},
    "gpus": [],
    "sources": {},
}


def run(seconds: float, hw: str | None, i: int | None = None, **used: float) -> dict[str, Any]:
    out: dict[str, Any] = {"seconds": seconds}
    if hw is not None:
        out["hardware_id"] = hw
    if i is not None:
        out["run_idx"] = i
    if used:
        out["resources"] = used
    return out


def write(directory: Path, hardware: dict[str, Any], stages: dict[str, list[Any]]) -> None:
    directory.mkdir(parents=True)
    timings = {
        name: {"total_seconds": sum(r["seconds"] for r in runs), "runs": runs}
        for name, runs in stages.items()
    }
    (directory / "timings.json").write_text(json.dumps(timings))
    (directory / "timings_hardware.json").write_text(
        json.dumps({"schema_version": 1, "hardware": hardware})
    )


def two_machine_tree(tmp_path: Path) -> Path:
    """The tree under ``tmp_path``: ``gpu/ippo`` on the GPU node, ``cpu/ippo`` CPU only."""
    write(tmp_path / "gpu" / "ippo", {"hw-gpu": GPU_NODE}, {
        # 3600 s + 5400 s = 2.5 h x 4 GPUs = 10 GPU-hours; CPU (7200 + 3600) s each = 6
        # core-hours; 3.6 MJ each = 2 kWh.
        "ippo_train": [
            run(3600, "hw-gpu", 0, cpu_seconds=7200, children_cpu_seconds=3600,
                gpu_energy_joules=3.6e6, memory_peak_bytes=100 * GIB),
            run(5400, "hw-gpu", 1, cpu_seconds=7200, children_cpu_seconds=3600,
                gpu_energy_joules=3.6e6),
        ],
        # 120 s x 4 = 0.1333 GPU-hours; 60 s CPU = 0.01667 core-hours; 72 kJ = 0.02 kWh.
        "checkpoint_save": [
            run(60, "hw-gpu", 0, cpu_seconds=30, gpu_energy_joules=36000),
            run(60, "hw-gpu", 1, cpu_seconds=30, gpu_energy_joules=36000),
        ],
        # No resources: 0.5 h x 4 = 2 GPU-hours; 0.5 h x 64 CPUs = 32 core-hours, estimated.
        "nashconv": [run(1800, "hw-gpu")],
        # Left out: no hardware id, and seconds no writer stores.
        "alpharank": [run(10, None), run(-1, "hw-gpu")],
    })
    write(tmp_path / "cpu" / "ippo", {"hw-cpu": CPU_ONLY}, {
        # 7200 s, 10800 s CPU = 3 core-hours, no GPU-hours.
        "ippo_train_auto_resume": [run(7200, "hw-cpu", 0, cpu_seconds=10800)],
        # 360 s x 2 CPUs = 0.2 core-hours, estimated.
        "satisfaction": [run(360, "hw-cpu")],
    })
    return tmp_path
