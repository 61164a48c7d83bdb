"""Sizes and rates in the units a person reads, three significant digits like durations.

One formatter for every place that shows a byte count (``stagetimer hardware``, the
report's notes, hardware differences): ``17179869184`` is ``16 GiB`` everywhere.
Sizes use binary prefixes (memory is sized in powers of two), rates decimal ones (a
bandwidth is quoted in GB/s by its makers).
"""

from __future__ import annotations

import math

__all__ = ["format_bytes", "format_energy", "format_rate", "significant"]

_BINARY = ("", "Ki", "Mi", "Gi", "Ti", "Pi")
_DECIMAL = ("", "k", "M", "G", "T", "P")


def significant(value: float) -> str:
    """Three significant digits, no trailing zeros: 16.0 → "16", 1.953 → "1.95"; the whole
    number up to 99,999, then e-notation (``1.11e+302``, never a 300-digit integer)."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    if abs(value) >= 99999.5:
        return f"{value:.3g}"
    digits = max(0, 2 - math.floor(math.log10(abs(value))))
    text = f"{value:.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _binary(value: float, unit: str) -> str:
    """``value`` in the largest binary prefix its rounded digits reach.

    Dividing by 1024 is exact, so each unit's digits are rounded once, from the exact
    value; the unit is chosen by those digits, not by the value before rounding:
    1023.7 B rounds to 1024 and is ``1 KiB``, not ``1024 B``.
    """
    if not math.isfinite(value):
        return f"{significant(value)} {unit}"
    for prefix in _BINARY[:-1]:
        # From 1023.5 on (half-even: 1023.5 itself too) the digits are 1024: the next unit.
        if abs(value) < 1023.5:
            return f"{significant(value)} {prefix}{unit}"
        value /= 1024
    return f"{significant(value)} {_BINARY[-1]}{unit}"


def _decimal(value: float, unit: str) -> str:
    """``value`` in the largest decimal prefix its three rounded digits reach.

    Dividing by 1000 rounds (2.235e6 / 1e6 is the float 2.23499...): the digits are
    taken once from the exact value (``format``'s ``e``, half-even), and the prefix from
    their exponent, so 2235000 B/s is ``2.24 MB/s`` and 999999 B/s ``1 MB/s``.
    """
    if not math.isfinite(value) or abs(value) < 1:
        return f"{significant(value)} {unit}"
    mantissa = f"{abs(value):.2e}"  # "d.dde+XX": three digits, rounded once
    exponent = int(mantissa[5:])
    power = min(exponent // 3, len(_DECIMAL) - 1)
    sign = "-" if value < 0 else ""
    shift = exponent - 3 * power
    if shift > 2:  # 1000 or more of the largest prefix: a whole number, then e-notation
        return f"{sign}{_whole(abs(value), 3 * power)} {_DECIMAL[-1]}{unit}"
    digits = mantissa[0] + mantissa[2:4]
    text = f"{digits[: shift + 1]}.{digits[shift + 1 :]}".rstrip("0").rstrip(".")
    return f"{sign}{text} {_DECIMAL[power]}{unit}"


def _whole(value: float, shift: int) -> str:
    """``value / 10**shift`` (``value`` >= 1000 * 10**shift, an integer as every float that
    large is) as ``significant`` writes it, rounded once: the whole number half-even up to
    99,999, else e-notation."""
    quotient, remainder = divmod(int(value), 10**shift)
    if 2 * remainder > 10**shift or (2 * remainder == 10**shift and quotient % 2):
        quotient += 1
    if quotient < 100000:
        return str(quotient)
    mantissa = f"{value:.2e}"
    head = mantissa[:4].rstrip("0").rstrip(".")
    return f"{head}e+{int(mantissa[5:]) - shift:02d}"


def format_bytes(value: float) -> str:
    """A byte count in binary units: ``17179869184`` → ``"16 GiB"``, ``1536`` → ``"1.5 KiB"``."""
    return _binary(value, "B")


def format_rate(value: float) -> str:
    """Bytes per second in decimal units: ``3.35e12`` → ``"3.35 TB/s"``."""
    return _decimal(value, "B/s")


def format_energy(value: float) -> str:
    """Joules in decimal units: ``312000`` → ``"312 kJ"``."""
    return _decimal(value, "J")
