"""Artifact directories written straight in the file format, with known durations."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from stagetimer.hardware import CpuInfo, Hardware, MemoryInfo, description, hardware_id

__all__ = ["GIB", "MACHINE", "write_artifact"]

GIB = 1024**3
MACHINE = Hardware(
    host="node1",
    os="Linux 6.1.0-18-amd64",
    python="CPython 3.11.7",
    machine="x86_64",
    cpu=CpuInfo(affinity=(0, 1), logical_cpus=2, physical_cores=2, model_name="AMD EPYC"),
    memory=MemoryInfo(limit_bytes=16 * GIB, source="cgroup_v1"),
)


def write_artifact(
    directory: Path,
    stages: Mapping[str, Sequence[float]],
    hardware: Sequence[Hardware] = (MACHINE,),
) -> Path:
    """timings.json + timings_hardware.json; run i points at hardware[i % len(hardware)]."""
    directory.mkdir(parents=True, exist_ok=True)
    ids = [hardware_id(hw) for hw in hardware]
    timings = {
        name: {
            "total_seconds": sum(v for v in seconds if math.isfinite(v)),
            "runs": [
                {"seconds": s, "hardware_id": ids[i % len(ids)], "run_idx": i}
                for i, s in enumerate(seconds)
            ],
        }
        for name, seconds in stages.items()
    }
    (directory / "timings.json").write_text(json.dumps(timings, indent=2))
    described = {hid: description(hw) for hid, hw in zip(ids, hardware, strict=True)}
    sidecar = {"schema_version": 1, "hardware": described}
    (directory / "timings_hardware.json").write_text(json.dumps(sidecar, indent=2))
    return directory
