"""Durations in the units a person reads: ``850 µs``, ``77.8 ms``, ``3.2 s``, ``1 h 02 min``.

The text report and ``stagetimer table`` use these; JSON and CSV keep raw seconds.
A column of a table is written in one unit (``Unit``), so its numbers line up and
compare at a glance.
"""

from __future__ import annotations

import attrs

from stagetimer._store.rules import is_valid_seconds, valid_durations

__all__ = ["UNITS", "Unit", "format_duration", "unit_for"]

_MICRO = "\N{MICRO SIGN}s"


def _fixed(value: float, unit: str) -> str:
    """Three significant digits at most: ``850``, ``77.8``, ``5.12``."""
    if value >= 99.95:
        return f"{value:.0f} {unit}"
    if value >= 9.995:
        return f"{value:.1f} {unit}"
    return f"{value:.2f} {unit}"


def format_duration(seconds: float | None) -> str:
    """``seconds`` in a unit a person reads; ``-`` for None.

    Below a second: three significant digits (``850 µs``, ``77.8 ms``); below a
    minute, tenths of seconds (``3.2 s``, ``42.0 s``); then minutes and seconds
    (``4 min 05 s``), hours and minutes (``1 h 02 min``), days and hours
    (``3 d 04 h``). A value no writer could have
    written (negative, not finite) is shown as it is stored, e.g. ``-5 s``, ``nan s``.
    """
    if seconds is None:
        return "-"
    if not is_valid_seconds(seconds):
        return f"{seconds:g} s"
    if seconds < 59.95:
        if seconds >= 0.9995:
            return f"{seconds:.1f} s"
        if seconds >= 0.0009995:
            return _fixed(seconds * 1e3, "ms")
        if seconds == 0:
            return "0 s"
        return _fixed(seconds * 1e6, _MICRO)
    whole = round(seconds)
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    minutes = round(seconds / 60)
    if minutes < 24 * 60:
        return f"{minutes // 60} h {minutes % 60:02d} min"
    hours = round(seconds / 3600)
    return f"{hours // 24} d {hours % 24:02d} h"


@attrs.frozen
class Unit:
    """One unit for a column of durations: its name and how many seconds it holds."""

    name: str
    seconds: float

    def number(self, seconds: float) -> str:
        """``seconds`` in this unit, three significant digits (at least a whole number)."""
        value = seconds / self.seconds
        if value >= 99.95 or value == 0:
            return f"{value:.0f}"
        if value >= 9.995:
            return f"{value:.1f}"
        return f"{value:.2f}"


UNITS = (
    Unit(_MICRO, 1e-6),
    Unit("ms", 1e-3),
    Unit("s", 1.0),
    Unit("min", 60.0),
    Unit("h", 3600.0),
)


def unit_for(values: list[float]) -> Unit:
    """The unit in which the largest of ``values`` reads best (seconds when there are none)."""
    top = max(valid_durations(values), default=1.0)
    if top >= 2 * 3600:
        return UNITS[4]
    if top >= 120:
        return UNITS[3]
    if top >= 0.9995:
        return UNITS[2]
    if top >= 0.0009995:
        return UNITS[1]
    if top == 0:
        return UNITS[2]
    return UNITS[0]
