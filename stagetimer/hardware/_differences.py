"""hardware_differences: the fields of two descriptions that can change a stage's duration.

Two runs are measured on "the same hardware" when these fields agree, whatever
else differs: the host name, the job, the Python patch level, the kernel build,
``sources`` and the reasons a value is missing are not differences. The fields:

- ``cpu.model_name``, ``cpu.logical_cpus``, ``cpu.physical_cores``, ``cpu.quota_cpus``,
  and ``cpu.numa_nodes`` where both sides know it (which CPUs a run was placed on is no
  difference: it is the run's ``cpus``, not part of the description);
- ``cpu.clock_max_mhz`` when the two differ by more than 1 % (cpufreq tables of
  one SKU disagree in the last digits between firmware releases);
- ``memory.limit_bytes``, ``memory.high_bytes``;
- ``gpus`` (the number of visible GPUs) and, for each GPU both sides list,
  ``gpus[i].name``, ``gpus[i].memory_usable_bytes`` and
  ``gpus[i].peak_memory_bandwidth_bytes_per_s``;
- ``python`` (implementation and ``major.minor``: ``"CPython 3.11"``), ``os``
  (the system's name, ``"Linux"``, not its release) and ``machine`` (``"x86_64"``).

Either side may be a :class:`~stagetimer.hardware.Hardware` or a description as
stored in ``timings_hardware.json`` (a dict, possibly written by an older
version: missing keys read as unknown).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from stagetimer._errors import InvalidTypeError
from stagetimer._system.units import format_bytes, format_rate, significant
from stagetimer.hardware._model import Hardware, description

__all__ = [
    "Difference",
    "as_description",
    "format_differences",
    "format_value",
    "hardware_differences",
]

#: relative difference of ``cpu.clock_max_mhz`` below which two clocks are the same
CLOCK_TOLERANCE = 0.01


@attrs.frozen
class Difference:
    """One field that differs: its dotted name and the value on each side (None: unknown/none)."""

    field: str
    base: Any
    new: Any

    def to_dict(self) -> dict[str, Any]:
        """``{"field", "base", "new"}``, as ``stagetimer compare --json`` prints it."""
        return {"field": self.field, "base": self.base, "new": self.new}


def _get(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, Mapping):
            return None
        data = data.get(key)
    return data


def _python_minor(value: Any) -> Any:
    """``"CPython 3.11.7"`` → ``"CPython 3.11"``; anything else as it is."""
    if not isinstance(value, str):
        return value
    implementation, _, version = value.rpartition(" ")
    parts = version.split(".")
    if len(parts) < 2:
        return value
    minor = ".".join(parts[:2])
    return f"{implementation} {minor}" if implementation else minor


def _os_name(value: Any) -> Any:
    """``"Linux 6.1.0-18-amd64"`` → ``"Linux"`` (the release is not a difference)."""
    if not isinstance(value, str):
        return value
    return value.split(" ", 1)[0]


def _finite(value: Any) -> float | None:
    """``value`` as a float where it is a finite int or float (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _clock_differs(base: Any, new: Any) -> bool:
    low, high = _finite(base), _finite(new)
    if low is None or high is None:
        return not _same(base, new)
    scale = max(abs(low), abs(high))
    return scale > 0 and abs(low - high) > CLOCK_TOLERANCE * scale


def _same(base: Any, new: Any) -> bool:
    # 8 and 8.0 are one value (a quota written by another version may be a float); Python
    # compares an int with a float exactly, where float() of both would round: 2**53 + 1
    # bytes and 2**53 bytes are two limits. A bool is not a count: True is not 1.
    if isinstance(base, bool) != isinstance(new, bool):
        return False
    return bool(base == new)


#: (field, path in the description, normalisation)
_SCALARS: tuple[tuple[str, tuple[str, ...], Callable[[Any], Any] | None], ...] = (
    ("cpu.model_name", ("cpu", "model_name"), None),
    ("cpu.logical_cpus", ("cpu", "logical_cpus"), None),
    ("cpu.physical_cores", ("cpu", "physical_cores"), None),
    ("cpu.numa_nodes", ("cpu", "numa_nodes"), None),
    ("cpu.clock_max_mhz", ("cpu", "clock_max_mhz"), None),
    ("cpu.quota_cpus", ("cpu", "quota_cpus"), None),
    ("memory.limit_bytes", ("memory", "limit_bytes"), None),
    ("memory.high_bytes", ("memory", "high_bytes"), None),
)
#: fields compared only when both sides know them: a description written before the
#: field existed (0.2 and earlier have no ``cpu.numa_nodes``) is not different hardware
_KNOWN_ONLY = frozenset({"cpu.numa_nodes"})
_GPU_FIELDS = ("name", "memory_usable_bytes", "peak_memory_bandwidth_bytes_per_s")
_PLATFORM: tuple[tuple[str, Callable[[Any], Any]], ...] = (
    ("python", _python_minor),
    ("os", _os_name),
    ("machine", lambda value: value),
)


def as_description(
    value: object, kind: type[Any], describe: Callable[[Any], Mapping[str, Any]]
) -> Mapping[str, Any]:
    """``value`` as a stored description: ``describe(value)`` for a ``kind`` object, a
    mapping as it is; anything else is an ``InvalidTypeError`` naming it."""
    if isinstance(value, kind):
        return describe(value)
    if isinstance(value, Mapping):
        return value
    raise InvalidTypeError(
        f"expected a {kind.__name__} or a stored description (dict), not "
        f"{type(value).__name__}: {value!r}",
        value,
    )


def _as_dict(hardware: Hardware | Mapping[str, Any]) -> Mapping[str, Any]:
    return as_description(hardware, Hardware, description)


def _gpus(data: Mapping[str, Any]) -> Sequence[Any]:
    gpus = data.get("gpus")
    return gpus if isinstance(gpus, (list, tuple)) else ()


def hardware_differences(
    base: Hardware | Mapping[str, Any], new: Hardware | Mapping[str, Any]
) -> list[Difference]:
    """The differences between two descriptions that can change a stage's duration.

    Empty when the two are like for like, even if they were measured on different
    hosts, in different jobs or under another Python patch release.

    >>> a = {"python": "CPython 3.11.7", "memory": {"limit_bytes": 2**34}}
    >>> b = {"python": "CPython 3.11.2", "memory": {"limit_bytes": 2**36}}
    >>> hardware_differences(a, b)
    [Difference(field='memory.limit_bytes', base=17179869184, new=68719476736)]
    """
    left, right = _as_dict(base), _as_dict(new)
    found: list[Difference] = []
    for field, path, _ in _SCALARS:
        old_value, new_value = _get(left, *path), _get(right, *path)
        if _scalar_differs(field, old_value, new_value):
            found.append(Difference(field, old_value, new_value))
    found += _gpu_differences(_gpus(left), _gpus(right))
    for field, normalise in _PLATFORM:
        old_value, new_value = normalise(left.get(field)), normalise(right.get(field))
        if old_value != new_value:
            found.append(Difference(field, old_value, new_value))
    return found


def _scalar_differs(field: str, base: Any, new: Any) -> bool:
    if field == "cpu.clock_max_mhz":
        return _clock_differs(base, new)
    if field in _KNOWN_ONLY and None in (base, new):
        return False
    return not _same(base, new)


def _gpu_differences(base: Sequence[Any], new: Sequence[Any]) -> list[Difference]:
    """The number of GPUs where it differs, then each field of each GPU both sides list."""
    found: list[Difference] = []
    if len(base) != len(new):
        found.append(Difference("gpus", len(base), len(new)))
    for index, (old_gpu, new_gpu) in enumerate(zip(base, new, strict=False)):
        for name in _GPU_FIELDS:
            old_value, new_value = _get(old_gpu, name), _get(new_gpu, name)
            if not _same(old_value, new_value):
                found.append(Difference(f"gpus[{index}].{name}", old_value, new_value))
    return found


#: what None means for a field: no limit, or not known
_NONE_MEANS = {
    "cpu.quota_cpus": "no quota",
    "memory.limit_bytes": "no limit",
    "memory.high_bytes": "no limit",
}


def format_value(field: str, value: Any) -> str:
    """``value`` of ``field`` in units a person reads: ``17179869184`` bytes → ``"16 GiB"``."""
    if value is None:
        return _NONE_MEANS.get(field, "unknown")
    number, unit = _finite(value), _unit(field)
    if unit is None or number is None:
        return str(value)
    return unit(number)


#: (the end of a field's name, how its number is written), the first that fits
_UNITS: tuple[tuple[str, Callable[[float], str]], ...] = (
    ("_bytes_per_s", format_rate),
    ("_bytes", format_bytes),
    ("_mhz", lambda number: f"{significant(number)} MHz"),
)


def _unit(field: str) -> Callable[[float], str] | None:
    """How a number of ``field`` is written, None where it is written as it is."""
    if field == "cpu.quota_cpus":
        return lambda number: f"{significant(number)} CPUs"
    return next((unit for end, unit in _UNITS if field.endswith(end)), None)


def format_differences(differences: Sequence[Difference]) -> str:
    """The differences in words, ``"; "``-separated, or ``""`` when there are none.

    >>> format_differences([Difference("memory.limit_bytes", 2**34, 2**36)])
    'memory.limit_bytes: 16 GiB → 64 GiB'
    """
    return "; ".join(
        f"{d.field}: {format_value(d.field, d.base)} → {format_value(d.field, d.new)}"
        for d in differences
    )
