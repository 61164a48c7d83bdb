"""The numbers a stage's runs are summed up by: mean, median, spread, quartiles.

Only durations a writer could have written enter them: a stored ``seconds`` that
is negative or not finite is kept in the file verbatim, flagged by the report and
left out here (``valid_seconds``). The quartiles interpolate linearly between
order statistics, as numpy's and pandas' defaults do (``statistics.quantiles(...,
method="inclusive")``), so a notebook reproduces the table.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import attrs

__all__ = ["Summary", "is_valid_seconds", "moments", "summarise", "valid_seconds"]

_INF = math.inf


def is_valid_seconds(value: object) -> bool:
    """A duration a writer could have stored: a finite number >= 0 (not a bool)."""
    return (type(value) is float or type(value) is int) and 0.0 <= value < _INF


def valid_seconds(values: Iterable[float]) -> list[float]:
    """``values`` without the ones no writer could have stored, in their order."""
    return [v for v in values if 0.0 <= v < _INF]


@attrs.frozen
class Summary:
    """What ``summarise`` says about some durations; None where there are none (or, for the
    standard deviation, fewer than two)."""

    runs: int
    total: float
    mean: float | None
    median: float | None
    #: sample standard deviation (n - 1)
    stdev: float | None
    minimum: float | None
    maximum: float | None
    #: first and third quartiles
    q1: float | None
    q3: float | None

    @property
    def iqr(self) -> float | None:
        """The interquartile range, q3 - q1."""
        return None if self.q1 is None or self.q3 is None else self.q3 - self.q1


def _quantile(ordered: Sequence[float], fraction: float) -> float:
    position = (len(ordered) - 1) * fraction
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def moments(
    seconds: Sequence[float], total: float
) -> tuple[float, float, float | None, list[float]]:
    """``(mean, median, stdev, ordered)`` of ``seconds`` (not empty), ``total`` their sum
    (left to right from 0.0): the arithmetic of ``summarise`` without its objects, for a
    caller that summarises ten thousand stages."""
    n = len(seconds)
    mean = total / n
    ordered = sorted(seconds)
    half = n // 2
    median = ordered[half] if n % 2 else (ordered[half - 1] + ordered[half]) / 2
    if n > 1:
        stdev: float | None = math.sqrt(sum([(x - mean) * (x - mean) for x in seconds]) / (n - 1))
    else:
        stdev = None
    return mean, median, stdev, ordered


def summarise(seconds: Sequence[float], *, quartiles: bool = True) -> Summary:
    """The summary of ``seconds`` (already valid: see ``valid_seconds``).

    The total is summed left to right, as the writer sums ``total_seconds``. Without
    ``quartiles``, ``q1`` and ``q3`` are None (the text report does not show them).
    """
    n = len(seconds)
    if n == 0:
        return Summary(0, 0.0, None, None, None, None, None, None, None)
    total = sum(seconds, 0.0)
    mean, median, stdev, ordered = moments(seconds, total)
    q1 = q3 = None
    if quartiles:
        if n > 1:
            q1, q3 = _quantile(ordered, 0.25), _quantile(ordered, 0.75)
        else:
            q1 = q3 = ordered[0]
    return Summary(n, total, mean, median, stdev, ordered[0], ordered[-1], q1, q3)
