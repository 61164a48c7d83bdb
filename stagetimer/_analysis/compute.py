"""What a suite's stages cost, for the report and for the compute statement of a paper.

``stage_use`` sums one stage's ``resources`` (the report's "used:" lines);
``compute_statement`` sums every run of a tree per hardware description and per stage
family: wall time, GPU-hours (wall time x the GPUs the process could see), CPU
core-hours (recorded CPU time of the process and its waited-for children where the run
has it, else wall time x logical CPUs, and it says which), and GPU energy where recorded.
Every rank's run counts: each rank used its own devices. Runs whose ``seconds`` no
writer could have written count for nothing, as in the report.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from stagetimer._analysis.tree import Artifact, load_tree
from stagetimer._format import TRAINING_SUFFIX, continued_stage
from stagetimer._store.records import RunTiming
from stagetimer._store.rules import is_valid_seconds
from stagetimer.hardware import Hardware

__all__ = [
    "FAMILIES",
    "Amounts",
    "ComputeStatement",
    "HardwareCompute",
    "StageUse",
    "compute_statement",
    "family",
    "side_by_side",
    "stage_use",
    "statement_from",
]

#: The stage families of a compute statement, in the order it lists them.
FAMILIES = ("training", "checkpoint", "NashConv", "the rest")
_JOULES_PER_KWH = 3.6e6


def family(stage: str) -> str:
    """``training`` (``*_train`` and its continuation), ``checkpoint`` (``checkpoint_*``),
    ``NashConv`` (``nashconv``) or ``the rest``."""
    base = continued_stage(stage) or stage
    if base.endswith(TRAINING_SUFFIX) and base != TRAINING_SUFFIX:
        return "training"
    if base.startswith("checkpoint"):
        return "checkpoint"
    if base == "nashconv":
        return "NashConv"
    return "the rest"


def _number(resources: Mapping[str, Any] | None, key: str) -> float | None:
    """A stored resource value a writer could have written (a finite number ≥ 0), else None."""
    value: Any = None if resources is None else resources.get(key)
    if type(value) not in (int, float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an int beyond a float
        return None
    return number if math.isfinite(number) and number >= 0 else None


@attrs.frozen
class StageUse:
    """What one stage's runs used, summed over the runs that recorded it."""

    name: str
    #: cpu_seconds / seconds over the runs with both (above 1: several threads busy)
    cpu_use: float | None
    children_cpu_seconds: float | None
    #: the largest memory peak of a run, and the memory limit of that run's hardware
    peak_bytes: int | None
    limit_bytes: int | None
    energy_joules: float | None
    #: runs with energy / runs in all (energy of only some runs is said so)
    energy_runs: int
    runs: int


def stage_use(
    name: str, runs: Sequence[RunTiming], hardware: Mapping[str, Hardware | None]
) -> StageUse | None:
    """The use of stage ``name``; None when none of its runs recorded any."""
    cpu = wall = children = energy = 0.0
    with_cpu = with_children = energy_runs = 0
    peak: int | None = None
    limit: int | None = None
    for run in runs:
        if run.resources is None or not is_valid_seconds(run.seconds):
            continue
        used = _number(run.resources, "cpu_seconds")
        if used is not None:
            cpu, wall, with_cpu = cpu + used, wall + run.seconds, with_cpu + 1
        more = _number(run.resources, "children_cpu_seconds")
        if more is not None:
            children, with_children = children + more, with_children + 1
        joules = _number(run.resources, "gpu_energy_joules")
        if joules is not None:
            energy, energy_runs = energy + joules, energy_runs + 1
        bytes_ = _number(run.resources, "memory_peak_bytes")
        if bytes_ is not None and (peak is None or bytes_ > peak):
            peak = int(bytes_)
            hw = hardware.get(run.hardware_id) if run.hardware_id else None
            limit = hw.memory.limit_bytes if hw is not None else None
    if not (with_cpu or with_children or peak is not None or energy_runs):
        return None
    return StageUse(
        name=name,
        cpu_use=cpu / wall if with_cpu and wall > 0 else None,
        children_cpu_seconds=children if with_children else None,
        peak_bytes=peak,
        limit_bytes=limit,
        energy_joules=energy if energy_runs else None,
        energy_runs=energy_runs,
        runs=len(runs),
    )


def _side(runs: Sequence[Any]) -> dict[str, float | None] | None:
    """One side of ``compare``: CPU use over its runs, children CPU and energy per run,
    the largest memory peak; None when no run recorded any (raw runs, as parsed)."""
    cpu = wall = children = energy = 0.0
    with_cpu = with_children = with_energy = 0
    peak: int | None = None
    for run in runs:
        resources = run.get("resources") if type(run) is dict else None
        if type(resources) is not dict or not is_valid_seconds(run.get("seconds")):
            continue
        if (value := _number(resources, "cpu_seconds")) is not None:
            cpu, wall, with_cpu = cpu + value, wall + run["seconds"], with_cpu + 1
        if (value := _number(resources, "children_cpu_seconds")) is not None:
            children, with_children = children + value, with_children + 1
        if (value := _number(resources, "gpu_energy_joules")) is not None:
            energy, with_energy = energy + value, with_energy + 1
        if (value := _number(resources, "memory_peak_bytes")) is not None:
            peak = int(value) if peak is None else max(peak, int(value))
    if not (with_cpu or with_children or with_energy or peak is not None):
        return None
    return {
        "cpu_use": cpu / wall if with_cpu and wall > 0 else None,
        "children_cpu_seconds_mean": children / with_children if with_children else None,
        "memory_peak_bytes_max": peak,
        "gpu_energy_joules_mean": energy / with_energy if with_energy else None,
    }


def side_by_side(
    base_runs: Sequence[Any], new_runs: Sequence[Any]
) -> dict[str, dict[str, float | None] | None] | None:
    """``{"base": ..., "new": ...}``: what a stage used on each side of a comparison (no
    verdict: these are not tested), or None when neither side recorded any."""
    base, new = _side(base_runs), _side(new_runs)
    return None if base is None and new is None else {"base": base, "new": new}


@attrs.define
class Amounts:
    """Sums over a set of runs on one hardware description."""

    runs: int = 0
    wall_seconds: float = 0.0
    gpu_hours: float = 0.0
    cpu_core_hours: float = 0.0
    #: runs whose core-hours come from recorded CPU time, the others from wall x CPUs
    cpu_recorded_runs: int = 0
    energy_kwh: float = 0.0
    energy_runs: int = 0

    def add(self, run: RunTiming, gpus: int, logical_cpus: int) -> None:
        hours = run.seconds / 3600.0
        self.runs += 1
        self.wall_seconds += run.seconds
        self.gpu_hours += hours * gpus
        cpu = _number(run.resources, "cpu_seconds")
        if cpu is not None:
            cpu += _number(run.resources, "children_cpu_seconds") or 0.0
            self.cpu_core_hours += cpu / 3600.0
            self.cpu_recorded_runs += 1
        else:
            self.cpu_core_hours += hours * logical_cpus
        joules = _number(run.resources, "gpu_energy_joules")
        if joules is not None:
            self.energy_kwh += joules / _JOULES_PER_KWH
            self.energy_runs += 1

    @property
    def cpu_source(self) -> str:
        """How the CPU core-hours were found, in words."""
        if self.cpu_recorded_runs == self.runs:
            return "recorded CPU time"
        if not self.cpu_recorded_runs:
            return "wall time x logical CPUs"
        return (
            f"recorded CPU time for {self.cpu_recorded_runs} of {self.runs} runs, "
            "wall time x logical CPUs for the others"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "runs": self.runs,
            "wall_seconds": self.wall_seconds,
            "gpu_hours": self.gpu_hours,
            "cpu_core_hours": self.cpu_core_hours,
            "cpu_core_hours_source": self.cpu_source,
            "cpu_recorded_runs": self.cpu_recorded_runs,
            "energy_kwh": self.energy_kwh if self.energy_runs else None,
            "energy_runs": self.energy_runs,
        }


@attrs.define
class HardwareCompute:
    """One hardware description and what its runs cost, in total and per stage family."""

    hardware_id: str
    cpu_model: str | None
    logical_cpus: int
    gpu_count: int
    #: distinct GPU names, in the description's order
    gpu_names: tuple[str, ...]
    memory_limit_bytes: int | None
    total: Amounts = attrs.Factory(Amounts)
    families: dict[str, Amounts] = attrs.Factory(dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "hardware_id": self.hardware_id,
            "cpu_model": self.cpu_model,
            "logical_cpus": self.logical_cpus,
            "gpu_count": self.gpu_count,
            "gpu_names": list(self.gpu_names),
            "memory_limit_bytes": self.memory_limit_bytes,
            "total": self.total.to_dict(),
            "families": {name: self.families[name].to_dict() for name in FAMILIES
                         if name in self.families},
        }


@attrs.define
class ComputeStatement:
    """Per hardware description, what the runs under some paths cost."""

    hardware: list[HardwareCompute]
    #: runs left out: no hardware_id, or one the hardware sidecar does not describe
    undescribed_runs: int = 0
    #: runs left out because their ``seconds`` is one no writer could have written
    invalid_runs: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "hardware": [h.to_dict() for h in self.hardware],
            "undescribed_runs": self.undescribed_runs,
            "invalid_runs": self.invalid_runs,
        }


def _describe(hardware_id: str, hw: Hardware) -> HardwareCompute:
    names = tuple(dict.fromkeys(g.name for g in hw.gpus if g.name))
    return HardwareCompute(
        hardware_id, hw.cpu.model_name, hw.cpu.logical_cpus, len(hw.gpus), names,
        hw.memory.limit_bytes,
    )


def statement_from(artifacts: Iterable[Artifact]) -> ComputeStatement:
    """The compute statement of artifacts already read (``load_tree``)."""
    found: dict[str, HardwareCompute] = {}
    statement = ComputeStatement([])
    for artifact in artifacts:
        described = artifact.hardware.hardware
        for name, stage in artifact.timings.stages.items():
            kind = family(name)
            for run in stage.runs:
                if not is_valid_seconds(run.seconds):
                    statement.invalid_runs += 1
                    continue
                hw = described.get(run.hardware_id) if run.hardware_id else None
                if hw is None or run.hardware_id is None:
                    statement.undescribed_runs += 1
                    continue
                entry = found.get(run.hardware_id)
                if entry is None:
                    entry = found[run.hardware_id] = _describe(run.hardware_id, hw)
                gpus, cpus = entry.gpu_count, entry.logical_cpus
                entry.total.add(run, gpus, cpus)
                entry.families.setdefault(kind, Amounts()).add(run, gpus, cpus)
    statement.hardware = sorted(found.values(), key=lambda h: -h.total.wall_seconds)
    return statement


def compute_statement(*paths: str | os.PathLike[str]) -> ComputeStatement:
    """The compute statement of every artifact directory at or under ``paths`` (errors as
    ``load_tree``)."""
    return statement_from(load_tree(*paths))
