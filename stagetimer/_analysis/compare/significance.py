"""Is a difference real: Welch's and the paired t-test with their p-values, and the
Benjamini-Hochberg adjustment over many of them.

``compare`` makes one test per stage per pair of directories: a tree of 1,000
directories x 10 stages is 10,000 tests, and at a per-test level of 5 % two
identical trees would show about 500 "significant" differences. The adjusted
``q_value`` (Benjamini & Hochberg 1995, "Controlling the false discovery rate",
J. R. Stat. Soc. B 57(1), 289-300) keeps the expected share of false verdicts
among those called at 5 %, and when nothing changed (every null true) the chance of
even one false verdict at 5 %, whatever the number of tests.

The numbers are scipy's: ``welch_test`` is ``scipy.stats.ttest_ind(a, b,
equal_var=False)`` (its ``pvalue`` and ``confidence_interval()``), ``paired_test``
is ``scipy.stats.ttest_rel`` on the same pairs, and ``benjamini_hochberg`` is
``scipy.stats.false_discovery_control(p, method="bh")``; tests check each.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from stagetimer._analysis.stats import mean_and_variance, t_ppf, t_sf

__all__ = ["TTestResult", "benjamini_hochberg", "paired_test", "welch_test"]


class TTestResult(NamedTuple):
    """A two-sided t-test of ``mean(a) - mean(b)``: the difference, its interval, its p.

    A named tuple, not an attrs class: ten thousand a suite, built at tuple speed."""

    difference: float
    low: float
    high: float
    p_value: float


def _result(difference: float, standard_error: float, df: float, confidence: float) -> TTestResult:
    """The interval and two-sided p of ``difference`` given its standard error and df.

    With no spread at all (every value equal on each side) there is no t: an interval of
    the difference alone, and p 1 when it is zero (no evidence of a change) or 0 when it
    is not (every run moved, and by the same amount).
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie between 0 and 1, not {confidence!r}")
    if standard_error == 0.0 or not df > 0:
        return TTestResult(difference, difference, difference, 1.0 if difference == 0 else 0.0)
    half = t_ppf(0.5 + confidence / 2.0, df) * standard_error
    t = abs(difference) / standard_error
    p = min(1.0, 2.0 * t_sf(t, df))
    return TTestResult(difference, difference - half, difference + half, p)


def welch_test(
    a: tuple[float, float, int], b: tuple[float, float, int], confidence: float = 0.95
) -> TTestResult:
    """Welch's t-test of ``mean(a) - mean(b)`` from each sample's (mean, variance, n), n >= 2.

    Degrees of freedom by Welch-Satterthwaite.
    """
    (mean_a, var_a, n_a), (mean_b, var_b, n_b) = a, b
    if n_a < 2 or n_b < 2:
        raise ValueError(f"Welch's test needs at least 2 values per sample, not {n_a} and {n_b}")
    se_a, se_b = var_a / n_a, var_b / n_b
    spread = se_a + se_b
    denominator = se_a * se_a / (n_a - 1) + se_b * se_b / (n_b - 1)
    # Both squares underflow only for spreads below 1e-154, where t is astronomically large
    # anyway: the smaller of the two samples' df is then the safe, conservative choice.
    df = spread * spread / denominator if denominator > 0 else float(min(n_a, n_b) - 1)
    return _result(mean_a - mean_b, math.sqrt(spread), df, confidence)


def paired_test(differences: Sequence[float], confidence: float = 0.95) -> TTestResult:
    """The paired t-test: is the mean of ``differences`` (one per pair, >= 2) zero?"""
    n = len(differences)
    if n < 2:
        raise ValueError(f"the paired test needs at least 2 pairs, not {n}")
    mean, variance = mean_and_variance(differences)
    return _result(mean, math.sqrt(variance / n), float(n - 1), confidence)


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """Each p-value adjusted for the false discovery rate over all of them (in their order).

    The i-th smallest of m p-values becomes ``min over j >= i of p_(j) * m / j``, at most 1.
    """
    m = len(p_values)
    order = sorted(range(m), key=p_values.__getitem__)
    adjusted = [0.0] * m
    running = 1.0
    for rank in range(m, 0, -1):
        index = order[rank - 1]
        running = min(running, p_values[index] * m / rank)
        adjusted[index] = running
    return adjusted
