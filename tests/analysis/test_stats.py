"""The Student-t quantile and Welch's interval, checked against scipy."""

from __future__ import annotations

import math
import random

import pytest

from stagetimer._analysis.compare.significance import welch_test
from stagetimer._analysis.stats import betainc, mean_and_variance, t_ppf, t_sf

scipy_stats = pytest.importorskip("scipy.stats")
scipy_special = pytest.importorskip("scipy.special")

DFS = [0.5, 1.0, 1.37, 2.0, 2.5, 3.0, 4.2, 5.0, 8.9, 18.0, 30.0, 121.5, 1e3, 1e5]
PROBABILITIES = [0.5001, 0.6, 0.9, 0.95, 0.975, 0.995, 0.9999]


def relative(a: float, b: float) -> float:
    return abs(a - b) / abs(b)


@pytest.mark.parametrize("df", DFS)
def test_t_quantile_matches_scipy(df: float) -> None:
    worst = max(relative(t_ppf(p, df), float(scipy_stats.t.ppf(p, df))) for p in PROBABILITIES)

    assert worst < 1e-8


@pytest.mark.parametrize("df", DFS)
def test_t_quantile_below_one_half_is_the_mirror_image(df: float) -> None:
    assert -t_ppf(0.975, df) == t_ppf(0.025, df)


@pytest.mark.parametrize("df", DFS)
@pytest.mark.parametrize("t", [-3.0, -0.2, 0.0, 0.7, 2.0, 12.0])
def test_t_upper_tail_matches_scipy(t: float, df: float) -> None:
    assert math.isclose(t_sf(t, df), float(scipy_stats.t.sf(t, df)), rel_tol=1e-9, abs_tol=1e-15)


@pytest.mark.parametrize(
    ("a", "b", "x"),
    [(0.5, 0.5, 0.3), (2.0, 3.0, 0.4), (50.0, 0.5, 0.97), (0.25, 8.0, 0.01), (1e3, 0.5, 0.999)],
)
def test_incomplete_beta_matches_scipy(a: float, b: float, x: float) -> None:
    assert math.isclose(betainc(a, b, x), float(scipy_special.betainc(a, b, x)), rel_tol=1e-10)


def welch_interval(a: list[float], b: list[float]) -> tuple[float, float]:
    """The 95 % interval of mean(a) - mean(b) by compare's Welch test."""
    result = welch_test((*mean_and_variance(a), len(a)), (*mean_and_variance(b), len(b)))
    return result.low, result.high


@pytest.mark.parametrize("seed", range(12))
def test_welch_interval_matches_scipy_ttest_ind(seed: int) -> None:
    rng = random.Random(seed)
    a = [rng.gauss(1.0, rng.uniform(0.01, 0.5)) for _ in range(rng.randint(2, 30))]
    b = [rng.gauss(1.1, rng.uniform(0.01, 0.5)) for _ in range(rng.randint(2, 30))]
    expected = scipy_stats.ttest_ind(a, b, equal_var=False).confidence_interval()

    low, high = welch_interval(a, b)
    assert relative(low, float(expected.low)) < 1e-9
    assert relative(high, float(expected.high)) < 1e-9


def test_welch_interval_of_samples_without_spread_is_the_difference() -> None:
    assert (-1.0, -1.0) == welch_interval([2.0, 2.0], [3.0, 3.0, 3.0])


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: t_ppf(1.0, 3), "0 < p < 1, not 1.0"),
        (lambda: t_ppf(0.5, 0), "must be > 0, not 0"),
        (lambda: t_ppf(0.5, math.nan), "must be > 0, not nan"),
        (lambda: betainc(0, 1, 0.5), "a > 0 and b > 0"),
        (lambda: betainc(1, 1, 1.5), "0 <= x <= 1, not x=1.5"),
        (lambda: welch_interval([1.0], [1.0, 2.0]), "at least 2 values per sample, not 1 and 2"),
    ],
)
def test_bad_arguments_are_refused_naming_the_value(call: object, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        call()  # type: ignore[operator]
