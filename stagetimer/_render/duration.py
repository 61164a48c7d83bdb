"""Durations in the units a person reads: ``850 µs``, ``77.8 ms``, ``1.25 s``, ``12.3 s``,
``1 min 02 s``, ``1 h 02 min``, ``3 d 04 h``.

Three significant digits in every unit below a minute, so that ``1.25 s`` and
``917 ms`` in one table are read to the same precision. The text report, ``compare``
and ``stagetimer table`` use these; JSON and CSV keep raw seconds. A column of a
table is written in one unit (``Unit``), so its numbers line up and compare at a
glance. Any finite float is shown in a few characters: past 100 days, days in three
significant digits (``1.16e+295 d`` for 1e300 s), never a 300-digit count.
"""

from __future__ import annotations

import attrs

from stagetimer._store.rules import is_valid_seconds, valid_durations

__all__ = ["UNITS", "Unit", "format_duration", "three_digits", "unit_for"]

_MICRO = "\N{MICRO SIGN}s"
_DAY = 86400.0


def three_digits(value: float) -> str:
    """A number >= 0 in three significant digits: ``850``, ``77.8``, ``5.12``, ``0.0417``;
    at least the whole number up to 99,999 (``1234``), e-notation past it (``1.23e+05``)."""
    if value >= 99999.5:
        return f"{value:.3g}"
    if value >= 99.95 or value == 0:
        return f"{value:.0f}"
    if value >= 9.995:
        return f"{value:.1f}"
    if value >= 0.9995:
        return f"{value:.2f}"
    return f"{value:#.3g}"  # "#": the trailing zero kept, 0.180


def format_duration(seconds: float | None) -> str:
    """``seconds`` in a unit a person reads; ``-`` for None.

    Below a minute, three significant digits (``850 µs``, ``77.8 ms``, ``1.25 s``,
    ``12.3 s``); then minutes and seconds (``4 min 05 s``), hours and minutes
    (``1 h 02 min``), days and hours (``3 d 04 h``), and past 100 days the days
    alone (``412 d``). A value no writer could have written (negative, not finite) is
    shown as it is stored, e.g. ``-5 s``, ``nan s``.
    """
    if seconds is None:
        return "-"
    if not is_valid_seconds(seconds):
        return f"{seconds:g} s"
    if seconds < 59.95:
        if seconds >= 0.9995:
            return f"{three_digits(seconds)} s"
        if seconds >= 0.0009995:
            return f"{three_digits(seconds * 1e3)} ms"
        if seconds == 0:
            return "0 s"
        return f"{three_digits(seconds * 1e6)} {_MICRO}"
    if seconds < 3599.5:
        whole = round(seconds)
        return f"{whole // 60} min {whole % 60:02d} s"
    if seconds < _DAY - 30:
        minutes = round(seconds / 60)
        return f"{minutes // 60} h {minutes % 60:02d} min"
    if seconds < 100 * _DAY - 1800:
        hours = round(seconds / 3600)
        return f"{hours // 24} d {hours % 24:02d} h"
    return f"{three_digits(seconds / _DAY)} d"


@attrs.frozen
class Unit:
    """One unit for a column of durations: its name and how many seconds it holds."""

    name: str
    seconds: float

    def number(self, seconds: float) -> str:
        """``seconds`` in this unit, three significant digits (``three_digits``)."""
        value = seconds / self.seconds
        return three_digits(value) if value >= 0 else f"{value:g}"


UNITS = (
    Unit(_MICRO, 1e-6),
    Unit("ms", 1e-3),
    Unit("s", 1.0),
    Unit("min", 60.0),
    Unit("h", 3600.0),
    Unit("d", _DAY),
)


def unit_for(values: list[float]) -> Unit:
    """The unit in which the largest of ``values`` reads best (seconds when there are none)."""
    top = max(valid_durations(values), default=1.0)
    if top >= 2 * _DAY:
        return UNITS[5]
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
