"""What a suite's stages cost, for the report and for the compute statement of a paper.

``stage_use`` sums one stage's ``resources`` (the report's "used:" lines);
``compute_statement`` sums every run of a tree per hardware description and per stage
family: wall time, GPU-hours (wall time x the GPUs the process could see), CPU
core-hours (recorded CPU time of the process and its waited-for children where the run
has it, else wall time x logical CPUs, and it says which), and GPU energy where recorded.
Every rank's run counts: each rank used its own devices. Runs whose ``seconds`` no
writer could have written count for nothing, as in the report; a run nested inside its
parent's run (``nesting``) adds nothing either, its time and use being inside its parent's.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from stagetimer._analysis.attempts.attribution import attribute
from stagetimer._analysis.attempts.lost import lost_bounds
from stagetimer._analysis.attempts.scan import Attempt
from stagetimer._analysis.impossible_values import number, possible_cpus, possible_resources
from stagetimer._analysis.nesting import NESTED_NOTE, nested_of
from stagetimer._analysis.tree import Artifact, load_tree
from stagetimer._format import continued_stage, is_training_name
from stagetimer._store.records import RunTiming
from stagetimer._store.rules import is_valid_seconds
from stagetimer.hardware import Hardware

__all__ = [
    "FAMILIES",
    "SHORTEST_FOR_CPU_USE",
    "Amounts",
    "ComputeStatement",
    "HardwareCompute",
    "StageUse",
    "add_lost",
    "compute_statement",
    "family",
    "side_by_side",
    "stage_use",
    "statement_from",
]

#: The stage families of a compute statement, in the order it lists them.
FAMILIES = ("training", "checkpoint", "NashConv", "the rest")
_JOULES_PER_KWH = 3.6e6
#: Wall time a stage's runs need in all before their CPU use is shown (seconds): the
#: counters are read just outside the timed block, a few µs that a 40 µs stage would
#: show as 1.15.
SHORTEST_FOR_CPU_USE = 0.01


def family(stage: str) -> str:
    """``training`` (``*_train`` and its continuation), ``checkpoint`` (``checkpoint_*``),
    ``NashConv`` (``nashconv``) or ``the rest``."""
    base = continued_stage(stage) or stage
    if is_training_name(base):
        return "training"
    if base.startswith("checkpoint"):
        return "checkpoint"
    if base == "nashconv":
        return "NashConv"
    return "the rest"


def _with_resources(runs: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The runs (parsed: mappings) that hold ``resources``: most stages of most suites
    recorded none, and then their callers build nothing."""
    return [run for run in runs if "resources" in run]


@attrs.define
class _Tally:
    """What a set of runs used, summed over the runs that recorded each figure: the one
    sum behind the report's ``used:`` lines and ``compare``'s side by side."""

    cpu: float = 0.0
    #: wall time of the runs with a ``cpu_seconds``, the denominator of the CPU use
    wall: float = 0.0
    cpu_runs: int = 0
    children: float = 0.0
    children_runs: int = 0
    energy: float = 0.0
    energy_runs: int = 0
    peak: int | None = None

    def add(self, seconds: object, resources: object) -> bool:
        """Count one run; True when it holds the largest memory peak so far."""
        if type(resources) is not dict or not is_valid_seconds(seconds):
            return False
        if (value := number(resources, "cpu_seconds")) is not None:
            self.cpu += value
            self.wall += seconds
            self.cpu_runs += 1
        if (value := number(resources, "children_cpu_seconds")) is not None:
            self.children, self.children_runs = self.children + value, self.children_runs + 1
        if (value := number(resources, "gpu_energy_joules")) is not None:
            self.energy, self.energy_runs = self.energy + value, self.energy_runs + 1
        return self._raise_peak(number(resources, "memory_peak_bytes"))

    def _raise_peak(self, value: float | None) -> bool:
        """Hold ``value`` as the memory peak when it is the largest so far."""
        if value is not None and (self.peak is None or value > self.peak):
            self.peak = int(value)
            return True
        return False

    @property
    def empty(self) -> bool:
        return self.cpu_use is None and not (self.children or self.energy_runs) and (
            self.peak is None
        )

    @property
    def cpu_use(self) -> float | None:
        """CPU time / wall time; None below ``SHORTEST_FOR_CPU_USE`` of wall time, where
        the few microseconds of the counters' own reads would show as use."""
        return self.cpu / self.wall if self.wall >= SHORTEST_FOR_CPU_USE else None


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
    name: str, runs: Sequence[Mapping[str, Any]], hardware: Mapping[str, Hardware | None]
) -> StageUse | None:
    """The use of stage ``name`` from its runs as stored (mappings); None when none of
    them recorded any."""
    used = _with_resources(runs)
    if not used:
        return None
    tally = _Tally()
    limit: int | None = None
    for run in used:
        if tally.add(run.get("seconds"), run.get("resources")):
            limit = _limit(run, hardware)
    if tally.empty:
        return None
    return StageUse(
        name=name,
        cpu_use=tally.cpu_use,
        children_cpu_seconds=tally.children if tally.children_runs else None,
        peak_bytes=tally.peak,
        limit_bytes=limit,
        energy_joules=tally.energy if tally.energy_runs else None,
        energy_runs=tally.energy_runs,
        runs=len(runs),
    )


def _limit(run: Mapping[str, Any], hardware: Mapping[str, Hardware | None]) -> int | None:
    """The memory limit of the hardware a run (as stored) ran on, where it is known."""
    hardware_id = run.get("hardware_id")
    hw = hardware.get(hardware_id) if type(hardware_id) is str else None
    return hw.memory.limit_bytes if hw is not None else None


def _side(runs: Sequence[Any]) -> dict[str, float | None] | None:
    """One side of ``compare``: CPU use over its runs, children CPU and energy per run,
    the largest memory peak; None when no run recorded any (raw runs, as parsed)."""
    used = _with_resources(runs)
    if not used:
        return None
    tally = _Tally()
    for run in used:
        tally.add(run.get("seconds"), run.get("resources"))
    if tally.empty:
        return None
    return {
        "cpu_use": tally.cpu_use,
        "children_cpu_seconds_mean": _mean(tally.children, tally.children_runs),
        "memory_peak_bytes_max": tally.peak,
        "gpu_energy_joules_mean": _mean(tally.energy, tally.energy_runs),
    }


def _mean(total: float, runs: int) -> float | None:
    """A figure's mean over the runs that recorded it; None where none did."""
    return total / runs if runs else None


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

    def add(
        self, run: RunTiming, gpus: int, logical_cpus: int, kept: Mapping[str, Any] | None
    ) -> None:
        """Count ``run``, whose resources are ``kept`` (``possible_resources``)."""
        hours = run.seconds / 3600.0
        self.runs += 1
        self.wall_seconds += run.seconds
        self.gpu_hours += hours * gpus
        cpu = number(kept, "cpu_seconds")
        if cpu is not None:
            cpu += number(kept, "children_cpu_seconds") or 0.0
            self.cpu_core_hours += cpu / 3600.0
            self.cpu_recorded_runs += 1
        else:
            self.cpu_core_hours += hours * logical_cpus
        joules = number(kept, "gpu_energy_joules")
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
    #: wall time failed and killed attempts lost on this description (killed ones at
    #: the lower end of when they ended), and how many they were
    lost_seconds: float = 0.0
    lost_attempts: int = 0

    @property
    def lost_gpu_hours(self) -> float:
        return self.lost_seconds / 3600.0 * self.gpu_count

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
            "lost": {
                "attempts": self.lost_attempts,
                "wall_seconds": self.lost_seconds,
                "gpu_hours": self.lost_gpu_hours,
            },
        }


@attrs.define
class ComputeStatement:
    """Per hardware description, what the runs under some paths cost."""

    hardware: list[HardwareCompute]
    #: runs left out: no hardware_id, or one the hardware sidecar does not describe
    undescribed_runs: int = 0
    #: runs left out because their ``seconds`` is one no writer could have written
    invalid_runs: int = 0
    #: values no writer could have stored (a resource or a CPU count), each named with
    #: where it is and what was used instead, as the report names impossible seconds
    flags: list[str] = attrs.Factory(list)
    #: failed and killed attempts no hardware description could be given to, and the
    #: wall time they lost (``attribution``: the group ``lost`` calls "(not described)")
    unattributed_lost_attempts: int = 0
    unattributed_lost_seconds: float = 0.0
    #: failed and killed attempts left out: their markers hold values no writer writes
    odd_attempts: int = 0
    #: runs counted inside their parent's run (``nesting``): their wall time, CPU time
    #: and energy are inside the parent's, so they add nothing to any sum
    nested_runs: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "hardware": [h.to_dict() for h in self.hardware],
            "undescribed_runs": self.undescribed_runs,
            "invalid_runs": self.invalid_runs,
            "flags": list(self.flags),
            "not_described_lost": {
                "attempts": self.unattributed_lost_attempts,
                "wall_seconds": self.unattributed_lost_seconds,
            },
            "odd_attempts": self.odd_attempts,
            "nested_runs": self.nested_runs,
            "nested_note": NESTED_NOTE if self.nested_runs else None,
        }


def _describe(hardware_id: str, hw: Hardware, flags: list[str]) -> HardwareCompute:
    names = tuple(dict.fromkeys(g.name for g in hw.gpus if g.name))
    return HardwareCompute(
        hardware_id, hw.cpu.model_name, possible_cpus(hardware_id, hw, flags), len(hw.gpus),
        names, hw.memory.limit_bytes,
    )


def _where(path: str, name: str, run: RunTiming) -> str:
    if run.run_idx is not None:
        return f"{path}: stage {name} run {run.run_idx}"
    return f"{path}: stage {name}"


def _inside_parents(artifact: Artifact) -> set[int]:
    """The ``id()`` of each run of ``artifact`` nested inside its parent's run."""
    runs = [run for stage in artifact.timings.stages.values() for run in stage.runs]
    if all(run.parent is None for run in runs):
        return set()
    return {id(run) for run, nested in zip(runs, nested_of(runs), strict=True) if nested}


def statement_from(artifacts: Iterable[Artifact]) -> ComputeStatement:
    """The compute statement of artifacts already read (``load_tree``)."""
    found: dict[str, HardwareCompute] = {}
    statement = ComputeStatement([])
    for artifact in artifacts:
        described = artifact.hardware.hardware
        inside = _inside_parents(artifact)
        for name, stage in artifact.timings.stages.items():
            kind = family(name)
            for run in stage.runs:
                entry = _entry_of(run, statement, found, described, inside)
                if entry is None:
                    continue
                gpus, cpus = entry.gpu_count, entry.logical_cpus
                kept = possible_resources(
                    _where(artifact.path, name, run), run, cpus, statement.flags
                )
                entry.total.add(run, gpus, cpus, kept)
                entry.families.setdefault(kind, Amounts()).add(run, gpus, cpus, kept)
    statement.hardware = sorted(found.values(), key=lambda h: -h.total.wall_seconds)
    return statement


def _entry_of(run: RunTiming, statement: ComputeStatement, found: dict[str, HardwareCompute],
              described: Mapping[str, Hardware | None], inside: set[int],
              ) -> HardwareCompute | None:
    """The entry of the hardware ``run`` ran on (added on its first run); None, counted in
    ``statement``, for a run that counts for none: invalid, nested, undescribed."""
    if not is_valid_seconds(run.seconds):
        statement.invalid_runs += 1
        return None
    if id(run) in inside:  # its time and use are inside its parent's run
        statement.nested_runs += 1
        return None
    hw = described.get(run.hardware_id) if run.hardware_id else None
    if hw is None or run.hardware_id is None:
        statement.undescribed_runs += 1
        return None
    entry = found.get(run.hardware_id)
    if entry is None:
        entry = found[run.hardware_id] = _describe(run.hardware_id, hw, statement.flags)
    return entry


def add_lost(
    statement: ComputeStatement,
    found: Iterable[Attempt],
    described: Mapping[str, Hardware | None] | None = None,
) -> None:
    """Add to each hardware description of ``statement`` the time its failed and killed
    attempts lost (``attempts``; a killed one at the lower end of when it ended), each
    attributed as ``lost`` attributes it; ``described``: the descriptions of the
    directories read (a description none of whose runs finished still gets its lost
    time). What no description can be given to is counted apart, never dropped."""
    listed = list(found)
    known = described or {}
    hardware = attribute(listed, _hosts(known))
    by_id = {hw.hardware_id: hw for hw in statement.hardware}
    for attempt in listed:
        if attempt.state not in ("failed", "killed"):
            continue
        if attempt.odd:
            statement.odd_attempts += 1
            continue
        entry = _entry(statement, by_id, known, hardware[id(attempt)])
        _book_lost(statement, entry, _lost(attempt))


def _hosts(described: Mapping[str, Hardware | None]) -> dict[str, str | None]:
    """Each hardware id described -> the host it names (what ``attribute`` reads)."""
    return {hw_id: hw.host for hw_id, hw in described.items() if hw is not None}


def _book_lost(statement: ComputeStatement, entry: HardwareCompute | None, lost: float,
               ) -> None:
    """Add an attempt's ``lost`` seconds to its hardware's entry, or apart where it has
    none."""
    if entry is None:
        statement.unattributed_lost_attempts += 1
        statement.unattributed_lost_seconds += lost
        return
    entry.lost_seconds += lost
    entry.lost_attempts += 1


def _lost(attempt: Attempt) -> float:
    """The seconds a failed or killed attempt lost (a killed one: the lower end)."""
    if attempt.state == "failed":
        return attempt.seconds if is_valid_seconds(attempt.seconds) else 0.0
    return lost_bounds(attempt)[0]


def _entry(statement: ComputeStatement, by_id: dict[str, HardwareCompute],
           known: Mapping[str, Hardware | None], hardware_id: str | None,
           ) -> HardwareCompute | None:
    """The statement's entry of ``hardware_id``, added where only its description is
    known (no run of it finished); None where it has none."""
    entry = by_id.get(hardware_id or "")
    hw = known.get(hardware_id) if hardware_id is not None else None
    if entry is None and hardware_id is not None and hw is not None:
        entry = by_id[hardware_id] = _describe(hardware_id, hw, statement.flags)
        statement.hardware.append(entry)
    return entry


def compute_statement(*paths: str | os.PathLike[str]) -> ComputeStatement:
    """The compute statement of every artifact directory at or under ``paths`` (errors as
    ``load_tree``)."""
    return statement_from(load_tree(*paths))
