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

import math
from collections.abc import Callable

import attrs

from stagetimer._store.rules import is_valid_seconds, valid_durations

__all__ = ["UNITS", "Unit", "format_duration", "three_digits", "unit_for"]

_MICRO = "\N{MICRO SIGN}s"
_DAY = 86400.0
_INF = math.inf


# Where the three rounded digits of a number reach the next decade: the smallest float at
# or above the decimal tie, so that ``x >= bound`` decides on exact values. Where the
# float nearest a tie lies below it (9.995 is 9.99499..., 0.0009995 is 0.00099949...),
# the bound is the float after it: ``x >= 9.995`` read 9.995 as ``10.0`` (its digits
# are 9.99), and 0.0009995 s as ``0.999 ms``. Literals: a comparison with a constant is
# the cheapest test there is; the tests derive each bound from its decimal tie.
_S_100 = 99.95  # 99.95 as a float lies above the decimal 99.95
_S_10 = 9.995000000000001
_S_1 = 0.9995
_MS_100 = 0.09995000000000001
_MS_10 = 0.009995
_MS_1 = 0.0009995000000000002
_US_100 = 9.995e-05
_US_10 = 9.995e-06
_US_1 = 9.995000000000001e-07
_NS_100 = 9.995e-08


def three_digits(value: float) -> str:
    """A number >= 0 in three significant digits: ``850``, ``77.8``, ``5.12``, ``0.0417``;
    at least the whole number up to 99,999 (``1234``), e-notation past it (``1.23e+05``).

    Rounded half-even from the float's exact value, as ``format`` rounds it: the float
    ``9.995`` (9.99499...) reads ``9.99``.
    """
    if value >= 99999.5:
        return f"{value:.3g}"
    if value >= _S_100:
        return f"{value:.0f}"
    if value >= _S_10:
        return f"{value:.1f}"
    if value >= _S_1:
        return f"{value:.2f}"
    if value == 0:
        return "0"  # also -0.0, which "{:.0f}" wrote "-0"
    return f"{value:#.3g}"  # "#": the trailing zero kept, 0.180


# A number in ms or µs is rounded once, from the seconds' own exact value: ``format`` with
# 3 or 6 more decimals, and the decimal point moved in the text. ``three_digits(seconds
# * 1e3)`` rounded twice: 0.1235 s (0.123499999... exactly) is 123.5 as a float and read
# ``124 ms``; 0.9994999999999999 s read ``1000 ms``.


def _in_unit(seconds: float, shift: int, bounds: tuple[float, float, float, float, float]) -> str:
    """``seconds`` (>= 0, finite) as a number of the unit ``10**-shift`` s (3: ms, 6: µs).

    ``bounds``: where that number's digits reach 100, 10, 1 and 0.1, and where they reach
    1000 (the next unit). From 0.1 to below 999.5 units (the usual values, a standard
    deviation too) the digits come from one ``format`` of the seconds with ``shift`` to
    ``shift + 3`` decimals, read at their place; the rest in ``_scaled``.
    """
    hundred, ten, one, tenth, next_unit = bounds
    specs = _SPECS[shift]
    if seconds >= hundred:
        if seconds < next_unit:
            return format(seconds, specs[0])[shift - 1 :]  # ms: "0.123" -> "123"
        return _scaled(seconds, shift)
    if seconds >= ten:
        text = format(seconds, specs[1])  # ms: "0.0123" -> "12.3"
        return f"{text[shift : shift + 2]}.{text[shift + 2]}"
    if seconds >= one:
        text = format(seconds, specs[2])  # ms: "0.00123" -> "1.23"
        return f"{text[shift + 1]}.{text[shift + 2 :]}"
    if seconds >= tenth:
        return "0." + format(seconds, specs[3])[shift + 2 :]  # ms: "0.000523" -> "0.523"
    return _scaled(seconds, shift)


#: the formats of ``_in_unit``: ``shift`` to ``shift + 3`` decimals
_SPECS = {shift: tuple(f".{shift + extra}f" for extra in range(4)) for shift in (3, 6)}


_MS_BOUNDS = (_MS_100, _MS_10, _MS_1, _US_100, _S_1)
_US_BOUNDS = (_US_100, _US_10, _US_1, _NS_100, _MS_1)


def _in_ms(seconds: float) -> str:
    """``seconds`` (>= 0, finite) as a number of ms (``_in_unit``)."""
    return _in_unit(seconds, 3, _MS_BOUNDS)


def _in_us(seconds: float) -> str:
    """``seconds`` (>= 0, finite) as a number of µs (``_in_unit``)."""
    return _in_unit(seconds, 6, _US_BOUNDS)


def _scaled(seconds: float, shift: int) -> str:
    """``seconds * 10**shift`` (``seconds`` >= 0 and finite) in ``three_digits``' form,
    rounded once; the general case of ``_in_ms`` and ``_in_us`` (a number of 1000 ms or
    more, or below one unit: ``1234``, ``0.0417``, ``1.00e-05``)."""
    if seconds == 0:
        return "0"
    mantissa = f"{seconds:.2e}"  # "d.dde-XX": three digits, correctly rounded
    exponent = int(mantissa[mantissa.index("e") + 1 :]) + shift
    if exponent >= 6:  # 999,500 or more: as "{:.3g}" writes it
        return f"{mantissa[:4].rstrip('0').rstrip('.')}e+{exponent:02d}"
    if exponent >= 2:  # the whole number: "1.234" (ms) is 1234
        whole = f"{seconds:.{shift}f}".replace(".", "").lstrip("0")
        if len(whole) <= 5:
            return whole
        return f"{mantissa[:4].rstrip('0').rstrip('.')}e+{exponent:02d}"
    digits = mantissa[0] + mantissa[2:4]
    if exponent == 1:
        return f"{digits[:2]}.{digits[2]}"
    if exponent == 0:
        return mantissa[:4]
    if exponent >= -4:
        return "0." + "0" * (-1 - exponent) + digits
    return f"{mantissa[:4]}e-{-exponent:02d}"  # as "{:#.3g}" writes it


def format_duration(seconds: float | None) -> str:
    """``seconds`` in a unit a person reads; ``-`` for None.

    Below a minute, three significant digits (``850 µs``, ``77.8 ms``, ``1.25 s``,
    ``12.3 s``); then minutes and seconds (``4 min 05 s``), hours and minutes
    (``1 h 02 min``), days and hours (``3 d 04 h``), and past 100 days the days
    alone (``412 d``). A value no writer could have written (negative, not finite) is
    shown as it is stored, e.g. ``-5 s``, ``nan s``. The unit is the one the rounded
    digits say: 0.9995 s is ``1.00 s``, the float below it ``999 ms``.
    """
    # 59.95 as a float lies above the decimal 59.95: every float below it reads 59.9 s.
    if type(seconds) is float and _MS_1 <= seconds < 59.95:  # most durations: one test
        if seconds >= _S_10:  # three_digits' two forms below a minute, inline
            return f"{seconds:.1f} s"
        if seconds >= _S_1:
            return f"{seconds:.2f} s"
        return f"{_in_ms(seconds)} ms"
    if seconds is None:
        return "-"
    if not is_valid_seconds(seconds):
        return f"{seconds:g} s"
    if seconds < 59.95:
        return _below_a_minute(seconds)
    return _a_minute_or_more(seconds)


def _below_a_minute(seconds: float) -> str:
    """``format_duration`` of a valid duration below 59.95 s."""
    if seconds >= _S_1:
        return f"{three_digits(seconds)} s"
    if seconds >= _MS_1:
        return f"{_in_ms(seconds)} ms"
    return "0 s" if seconds == 0 else f"{_in_us(seconds)} {_MICRO}"


def _a_minute_or_more(seconds: float) -> str:
    """``format_duration`` of a valid duration of 59.95 s or more."""
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
    #: how seconds are written in this unit where that is not a division (ms, µs: the
    #: seconds' own digits, rounded once); None for s, min, h and d
    digits: Callable[[float], str] | None = attrs.field(default=None, repr=False, eq=False)

    def number(self, seconds: float) -> str:
        """``seconds`` in this unit, three significant digits (``three_digits``)."""
        digits = self.digits
        if digits is not None and 0 <= seconds < _INF:
            return digits(seconds)
        value = seconds / self.seconds
        return three_digits(value) if value >= 0 else f"{value:g}"


UNITS = (
    Unit(_MICRO, 1e-6, _in_us),
    Unit("ms", 1e-3, _in_ms),
    Unit("s", 1.0),
    Unit("min", 60.0),
    Unit("h", 3600.0),
    Unit("d", _DAY),
)


def unit_for(values: list[float]) -> Unit:
    """The unit in which the largest of ``values`` reads best (seconds when there are none)."""
    top = max(valid_durations(values), default=1.0)
    if top == 0:
        return UNITS[2]
    return next((unit for least, unit in _UNIT_FROM if top >= least), UNITS[0])


#: the unit for the largest value from each bound up, the largest first
_UNIT_FROM = (
    (2 * _DAY, UNITS[5]),
    (2 * 3600, UNITS[4]),
    (120, UNITS[3]),
    (_S_1, UNITS[2]),  # 0.9995 s and up read 1.00 s
    (_MS_1, UNITS[1]),  # 999.5 µs and up read 1.00 ms
)
