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


def _scaled(value: float, unit: str, base: float, prefixes: tuple[str, ...]) -> str:
    """``value`` in the largest prefix it reaches."""
    for prefix in prefixes[:-1]:
        if abs(value) < base:
            return f"{significant(value)} {prefix}{unit}"
        value /= base
    return f"{significant(value)} {prefixes[-1]}{unit}"


def format_bytes(value: float) -> str:
    """A byte count in binary units: ``17179869184`` → ``"16 GiB"``, ``1536`` → ``"1.5 KiB"``."""
    return _scaled(value, "B", 1024, _BINARY)


def format_rate(value: float) -> str:
    """Bytes per second in decimal units: ``3.35e12`` → ``"3.35 TB/s"``."""
    return _scaled(value, "B/s", 1000, _DECIMAL)


def format_energy(value: float) -> str:
    """Joules in decimal units: ``312000`` → ``"312 kJ"``."""
    return _scaled(value, "J", 1000, _DECIMAL)
