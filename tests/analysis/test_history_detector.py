"""The change-point detector on synthetic series with a fixed seed: its goals as tests.

A/A series (the same code again and again) of 100 points raise a false alert in at
most 1 % of series; steps of 3 noise standard deviations are found within one point in
at least 90 % of series; the same points give the same answer; a series of 1,000
points is detected (the time is in ``benchmarks/``, not here).
"""

from __future__ import annotations

import math
import random

import pytest

from stagetimer._analysis.history.changepoints import DETECTION_LEVEL, detect, find_changes

SD = 0.05  # the noise of one seed, in log-seconds (5 %)


def series(
    rng: random.Random, n: int, seeds: int, steps: list[tuple[int, float]], *,
    between: float = 0.0, outliers: float = 0.0,
) -> list[list[float]]:
    """``n`` points of ``seeds`` log-normal durations around 1 s; each (index, size)
    step multiplies every later point by exp(size * SD); ``between``: extra noise of
    each point (in SD), shared by its seeds; ``outliers``: the share of seeds 1.5x slow."""
    points, level = [], 0.0
    for i in range(n):
        level += sum(size * SD for at, size in steps if at == i)
        shift = rng.gauss(0.0, between * SD)
        point = []
        for _ in range(seeds):
            value = math.exp(level + shift + rng.gauss(0.0, SD))
            point.append(value * 1.5 if rng.random() < outliers else value)
        points.append(point)
    return points


@pytest.mark.parametrize("seeds", [1, 3, 5])
@pytest.mark.parametrize(("between", "outliers"), [(0.0, 0.0), (1.0, 0.0), (0.0, 0.02)])
def test_false_alerts_on_a_a_series_are_at_most_one_percent(
    seeds: int, between: float, outliers: float
) -> None:
    rng = random.Random(20261206 + seeds)
    alerts = sum(
        bool(find_changes(series(rng, 100, seeds, [], between=between, outliers=outliers)))
        for _ in range(400)
    )
    assert alerts / 400 <= 0.01


@pytest.mark.parametrize("seeds", [1, 3, 5])
@pytest.mark.parametrize("size", [3.0, -3.0, 5.0])
def test_steps_of_three_noise_sds_are_found_within_one_point(seeds: int, size: float) -> None:
    rng = random.Random(7 * seeds + int(size))
    found = 0
    for _ in range(200):
        at = rng.randrange(5, 96)
        changes = find_changes(series(rng, 100, seeds, [(at, size)]))
        found += any(abs(c.index - at) <= 1 for c in changes)
    assert found / 200 >= 0.90


def test_two_steps_are_both_found() -> None:
    rng = random.Random(3)
    both = 0
    for _ in range(100):
        a, b = rng.randrange(10, 45), rng.randrange(55, 90)
        changes = [c.index for c in find_changes(series(rng, 100, 3, [(a, 4.0), (b, -4.0)]))]
        both += any(abs(c - a) <= 1 for c in changes) and any(abs(c - b) <= 1 for c in changes)
    assert both >= 90


def test_a_step_says_its_direction_and_a_small_p_value() -> None:
    rng = random.Random(11)
    [change] = find_changes(series(rng, 40, 3, [(25, 6.0)]))
    assert change.index == 25
    assert change.statistic > 0
    assert change.p_value < DETECTION_LEVEL


def test_one_slow_seed_in_a_point_is_no_change() -> None:
    points = [[1.0, 1.01, 0.99] for _ in range(30)]
    points[-1] = [1.0, 1.01, 3.0]  # the newest point: one seed slowed by a neighbour's job
    assert find_changes(points) == []


def test_the_newest_point_of_several_agreeing_seeds_is_a_change() -> None:
    rng = random.Random(5)
    points = series(rng, 30, 5, [])
    points.append([v * 1.4 for v in series(rng, 1, 5, [])[0]])
    assert [c.index for c in find_changes(points)] == [30]


def test_the_same_points_give_the_same_changes() -> None:
    points = series(random.Random(1), 300, 3, [(100, 3.0), (200, -2.0)])
    assert detect(points) == detect([list(p) for p in points])


@pytest.mark.parametrize("seeds", [1, 2, 3])
def test_durations_without_noise_change_only_where_they_change(seeds: int) -> None:
    assert find_changes([[1.0] * seeds] * 10) == []  # no spread at all: no division by it
    assert find_changes([[0.1 + 0.2] * seeds] * 10 + [[0.3] * seeds] * 10) == []  # rounding
    assert [c.index for c in find_changes([[1.0] * seeds] * 10 + [[2.0] * seeds] * 10)] == [10]


def test_fewer_than_four_points_are_not_tested() -> None:
    assert detect([[1.0], [1.0], [9.0]]) == ([], [])


def test_invalid_durations_are_left_out_and_the_indices_kept() -> None:
    rng = random.Random(2)
    points: list[list[float]] = series(rng, 40, 3, [(20, 8.0)])
    points[5] = [math.nan, -1.0]  # no valid seed: skipped, still counted
    assert [c.index for c in find_changes(points)] == [20]


def test_a_thousand_points_are_detected() -> None:
    points = series(random.Random(9), 1000, 5, [(300, 3.0), (700, -3.0)])
    assert [c.index for c in find_changes(points)] in ([300, 700], [299, 700], [300, 701])


def test_a_level_outside_zero_and_one_is_refused() -> None:
    with pytest.raises(ValueError, match=r"level must lie between 0 and 1, not 1\.5"):
        detect([[1.0]] * 5, level=1.5)
