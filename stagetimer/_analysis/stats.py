"""Every statistic stagetimer shows, from the standard library alone, defined once here.

- :class:`Summary` and :func:`summarise`: the numbers a stage's runs are summed up by
  (mean, median, sample standard deviation, quartiles); :func:`moments` is their
  arithmetic without the object, for a caller that summarises ten thousand stages.
  The quartiles interpolate linearly between order statistics, as numpy's and pandas'
  defaults do (``statistics.quantiles(..., method="inclusive")``), so a notebook
  reproduces the table. Only durations a writer could have stored enter them
  (``stagetimer._store.rules.valid_durations``).
- :func:`betainc`: the regularized incomplete beta function I_x(a, b), by the
  continued fraction of Numerical Recipes (3rd ed., section 6.4, modified Lentz).
- :func:`t_sf` and :func:`t_ppf`: Student's t upper tail and quantile; the tail
  is ``I_x(df/2, 1/2) / 2`` with ``x = df / (df + t**2)``, and the quantile solves
  it by Newton's method from the Cornish-Fisher expansion.

The tests built on them (Welch's and the paired t, Benjamini-Hochberg) are in
``significance``.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Sequence

import attrs

__all__ = [
    "Summary",
    "betainc",
    "mean_and_variance",
    "median",
    "moments",
    "summarise",
    "t_ppf",
    "t_sf",
]

_EPSILON = 1e-15
_TINY = 1e-300
_MAX_ITERATIONS = 10_000
_LGAMMA_HALF = math.lgamma(0.5)


def _continued_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b), converging fast for x < (a + 1) / (a + b + 2).

    Each loop evaluates the even and the odd term (written out: this is the hot path
    of every interval ``compare`` gives).
    """
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    tiny, epsilon = _TINY, _EPSILON  # locals: this loop runs about a million times a suite
    c = 1.0
    d = 1.0 - qab * x / qap
    # (chained comparisons, not abs(): no function call in the hot loop)
    d = 1.0 / (d if d > tiny or d < -tiny else tiny)
    h = d
    for m in range(1, _MAX_ITERATIONS + 1):
        m2 = 2 * m
        even = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + even * d
        d = 1.0 / (d if d > tiny or d < -tiny else tiny)
        c = 1.0 + even / c
        if -tiny < c < tiny:
            c = tiny
        h *= d * c
        odd = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + odd * d
        d = 1.0 / (d if d > tiny or d < -tiny else tiny)
        c = 1.0 + odd / c
        if -tiny < c < tiny:
            c = tiny
        step = d * c
        h *= step
        if -epsilon < step - 1.0 < epsilon:
            return h
    raise ArithmeticError(f"I_x(a, b) did not converge for a={a!r}, b={b!r}, x={x!r}")


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b) for a, b > 0 and 0 <= x <= 1.

    >>> round(betainc(2.0, 3.0, 0.4), 12)
    0.5248
    """
    if not (a > 0 and b > 0):
        raise ValueError(f"betainc needs a > 0 and b > 0, not a={a!r}, b={b!r}")
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"betainc needs 0 <= x <= 1, not x={x!r}")
    return _betainc(a, b, x, 1.0 - x)


def _betainc(a: float, b: float, x: float, y: float) -> float:
    """I_x(a, b) given both ``x`` and ``y = 1 - x``, each computed without cancellation."""
    if x == 0.0 or y == 1.0:
        return 0.0
    if y == 0.0 or x == 1.0:
        return 1.0
    log_x = math.log(x) if x < 0.5 else math.log1p(-y)
    log_y = math.log(y) if y < 0.5 else math.log1p(-x)
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * log_x + b * log_y
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _continued_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _continued_fraction(b, a, y) / b


def t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with ``df`` degrees of freedom (any real df > 0)."""
    if not df > 0:
        raise ValueError(f"degrees of freedom must be > 0, not {df!r}")
    t2 = t * t
    a, x, y = df / 2.0, df / (df + t2), t2 / (df + t2)
    if 0.0 < y < 3.0 / (a + 2.5) and x >= 0.5:
        # Near the centre (t**2 below about 6, where every 95 % interval's quantile lies)
        # the fraction of the complement, I_y(1/2, a), converges in about half the terms;
        # its result is kept unless it is so small that the subtraction lost digits.
        log_front = math.lgamma(a + 0.5) - math.lgamma(a) - _LGAMMA_HALF
        log_front += a * math.log1p(-y) + 0.5 * math.log(y)
        whole = 1.0 - math.exp(log_front) * _continued_fraction(0.5, a, y) / 0.5
        tail = 0.5 * whole if whole > 1e-3 else 0.5 * _betainc(a, 0.5, x, y)
    else:
        tail = 0.5 * _betainc(a, 0.5, x, y)
    return tail if t >= 0 else 1.0 - tail


def _t_pdf(t: float, df: float) -> float:
    log_norm = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(log_norm - (df + 1) / 2 * math.log1p(t * t / df))


def _cornish_fisher(z: float, df: float) -> float:
    """The t quantile's expansion around the normal quantile ``z`` (Abramowitz & Stegun 26.7.5)."""
    z2 = z * z
    terms = (
        (z2 + 1) * z / 4,
        ((5 * z2 + 16) * z2 + 3) * z / 96,
        (((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / 384,
        ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) * z / 92160,
    )
    return z + sum(term / df ** (power + 1) for power, term in enumerate(terms))


@functools.lru_cache(maxsize=8)
def _normal_quantile(p: float) -> float:
    return statistics.NormalDist().inv_cdf(p)


def t_ppf(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (0 < p < 1, df > 0).

    >>> round(t_ppf(0.975, 10), 9)
    2.228138852
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"a quantile needs 0 < p < 1, not {p!r}")
    if not df > 0 or math.isnan(df):
        raise ValueError(f"degrees of freedom must be > 0, not {df!r}")
    if p < 0.5:
        return -_upper_t_ppf(1.0 - p, df)
    return _upper_t_ppf(p, df)


def _upper_t_ppf(p: float, df: float) -> float:
    """``t_ppf`` for a checked ``p`` of 1/2 or more."""
    if p == 0.5:
        return 0.0
    alpha = 1.0 - p
    z = _normal_quantile(p)
    if math.isinf(df):
        return z
    # The expansion is good for df of a few and more; below, start from the normal
    # quantile, which lies left of the root: the tail is convex, so Newton steps from
    # the left approach the root from the left.
    return _newton(max(_cornish_fisher(z, df), z) if df >= 3 else z, alpha, df)


def _newton(t: float, alpha: float, df: float) -> float:
    """The root of ``t_sf(t, df) = alpha`` by Newton steps from ``t``, left of it."""
    for _ in range(200):
        excess = t_sf(t, df) - alpha
        step = excess / _t_pdf(t, df)
        # Never step past zero; far in the tail a full step may overshoot a flat density.
        t_next = t + step if t + step > 0 else t / 2
        # Near the root Newton converges quadratically: the error left after a full step
        # is about (f''/2f') * step**2, where f = sf - alpha and f''/f' = (df + 1) t /
        # (df + t**2). Once the step is small beside t (near the root), stop when that
        # estimate is below 1e-10 of the quantile: usually one evaluation of the tail
        # fewer than waiting for the next step to come out below 1e-9.
        if t + step > 0 and abs(step) <= 1e-3 * t_next:
            curvature = (df + 1.0) * t_next / (df + t_next * t_next)
            if 0.5 * curvature * step * step <= 1e-10 * max(1.0, t_next):
                return t_next
        if abs(t_next - t) <= 1e-9 * max(1.0, abs(t_next)):
            return t_next
        t = t_next
    return t  # pragma: no cover - Newton converges in a handful of steps


# --- summaries ------------------------------------------------------------------------


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


def median(ordered: Sequence[float]) -> float:
    """The median of ``ordered`` (sorted, not empty): the mean of the middle two for an
    even count."""
    n = len(ordered)
    half = n // 2
    if n % 2:
        return ordered[half]
    low, high = ordered[half - 1], ordered[half]
    middle = (low + high) / 2
    # two values past 8.9e307 overflow when added: halve them first
    return middle if middle < math.inf else low / 2 + high / 2


def _variance(values: Sequence[float], mean: float) -> float:
    """The sample variance (n - 1) of ``values`` (two or more) about ``mean``, summed exactly."""
    return math.fsum([(v - mean) * (v - mean) for v in values]) / (len(values) - 1)


def _stdev(values: Sequence[float], mean: float) -> float:
    """The sample standard deviation of ``values`` (two or more) about ``mean``.

    Deviations past 1e154 overflow when squared (the runs [0.0, 1e300], which a recorder
    accepts, deviate by 5e299): those are scaled by the largest deviation first.
    """
    variance = _variance(values, mean)
    if variance < math.inf:
        return math.sqrt(variance)
    scale = max(abs(v - mean) for v in values)
    if not scale < math.inf:
        return scale
    scaled = math.fsum([((v - mean) / scale) ** 2 for v in values]) / (len(values) - 1)
    return scale * math.sqrt(scaled)


def _mean(values: Sequence[float], total: float) -> float:
    """``total / n``, or when the sum of finite values overflowed (two runs of 1e308), the
    sum of each value divided by n, which cannot."""
    n = len(values)
    if total < math.inf:
        return total / n
    return sum([v / n for v in values], 0.0)


def _quantile(ordered: Sequence[float], fraction: float) -> float:
    position = (len(ordered) - 1) * fraction
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def moments(
    seconds: Sequence[float], total: float
) -> tuple[float, float, float | None, list[float]]:
    """``(mean, median, stdev, ordered)`` of ``seconds`` (not empty), ``total`` their sum
    (left to right from 0.0, as the writer sums ``total_seconds``)."""
    n = len(seconds)
    mean = _mean(seconds, total)
    ordered = sorted(seconds)
    stdev = _stdev(seconds, mean) if n > 1 else None
    return mean, median(ordered), stdev, ordered


def summarise(seconds: Sequence[float], *, quartiles: bool = True) -> Summary:
    """The summary of ``seconds`` (already valid: see ``valid_durations``).

    The total is summed left to right, as the writer sums ``total_seconds``. Without
    ``quartiles``, ``q1`` and ``q3`` are None (the text report does not show them).
    """
    n = len(seconds)
    if n == 0:
        return Summary(0, 0.0, None, None, None, None, None, None, None)
    total = sum(seconds, 0.0)
    mean, middle, stdev, ordered = moments(seconds, total)
    q1 = q3 = None
    if quartiles:
        if n > 1:
            q1, q3 = _quantile(ordered, 0.25), _quantile(ordered, 0.75)
        else:
            q1 = q3 = ordered[0]
    return Summary(n, total, mean, middle, stdev, ordered[0], ordered[-1], q1, q3)


def mean_and_variance(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample variance (n - 1; NaN for one value), two passes with exact sums."""
    n = len(values)
    if n == 0:
        raise ValueError("mean_and_variance needs at least one value")
    mean = math.fsum(values) / n
    if n < 2:
        return mean, math.nan
    return mean, _variance(values, mean)
