"""Values no writer stores, in a run's resources or a hardware description: each named
in a flag and left out of a compute statement's sums (as the report leaves out
impossible seconds)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from stagetimer._format import RESOURCE_FIELDS
from stagetimer._store.records import RunTiming
from stagetimer.hardware import Hardware

__all__ = ["number", "possible_cpus", "possible_resources"]


def number(resources: Mapping[str, Any] | None, key: str) -> float | None:
    """A stored resource value a writer could have written (a finite number ≥ 0), else None."""
    value: Any = None if resources is None else resources.get(key)
    if type(value) not in (int, float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an int beyond a float
        return None
    return number if 0 <= number < math.inf else None


#: Slack on CPU time against wall time x CPUs: the counters are read just outside the
#: timed block (microseconds), and rounded to the microsecond.
_CPU_SLACK_SECONDS = 0.01


def _shown(value: object) -> str:
    return f"{value:.17g}" if type(value) is float else repr(value)


def possible_resources(
    where: str, run: RunTiming, logical_cpus: int, flags: list[str]
) -> dict[str, Any] | None:
    """``run``'s resources without the values no writer could have stored, each named in
    ``flags``: a value that is not a finite number ≥ 0, and a ``cpu_seconds`` beyond what
    the run's ``logical_cpus`` give in its wall time (the process's threads run on those
    CPUs only; ``children_cpu_seconds`` has no such bound: a child may have run long
    before the stage waited for it)."""
    resources = run.resources
    if resources is None:
        return None
    kept = dict(resources)
    for key in RESOURCE_FIELDS:
        if key in resources and number(resources, key) is None:
            flags.append(f"{where}: {key} {_shown(resources[key])} is "
                         f"{_why_impossible(resources[key])}; no writer stores that, "
                         "so it is left out")
            del kept[key]
    if _cpu_beyond_wall(number(kept, "cpu_seconds"), run.seconds, logical_cpus):
        flags.append(
            f"{where}: cpu_seconds {_shown(resources['cpu_seconds'])} is more than "
            f"{run.seconds:.6g} s of wall time on {logical_cpus} logical CPUs give; no writer "
            "stores that, so wall time x logical CPUs is used"
        )
        del kept["cpu_seconds"]
    return kept


def _why_impossible(value: Any) -> str:
    """Why a stored resource value no writer stores is impossible."""
    return "negative" if type(value) in (int, float) and value < 0 else "not a finite number"


def _cpu_beyond_wall(cpu: float | None, seconds: float, logical_cpus: int) -> bool:
    """Whether ``cpu`` seconds are more than ``logical_cpus`` give in ``seconds`` of wall."""
    if cpu is None or logical_cpus <= 0:
        return False
    return cpu > seconds * logical_cpus + _CPU_SLACK_SECONDS


def possible_cpus(hardware_id: str, hw: Hardware, flags: list[str]) -> int:
    """The description's logical CPUs, or 0 (unknown) and a flag where no capture gives it."""
    cpus: object = hw.cpu.logical_cpus
    if type(cpus) is int and cpus >= 0:
        return cpus
    flags.append(
        f"hardware {hardware_id}: logical_cpus {_shown(cpus)} is not a count of CPUs; no "
        "writer stores that, so its runs without recorded CPU time count no CPU core-hours"
    )
    return 0
