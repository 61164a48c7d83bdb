"""Change points in a series whose points each hold several seeds (replicates).

A point is one version of the software (or one suite); its seeds are the durations of
the same stage run again with other seeds, so their spread measures the noise a
change must exceed instead of guessing it. The detector works on log-seconds (a
change is a ratio, as ``compare`` measures it):

0. **The points.** A point's value is the mean of its seeds' log-seconds, or their
   median from 3 seeds on (one seed slowed by a neighbour's job does not move it); each
   value is then held within 3 standard deviations of the median of the five points
   around it (one slow night is an outlier, not a change; a step keeps its edge, which
   the median of five follows), except the newest point of 3 seeds or more: nothing
   after it tells an outlier from a step, and its seeds' agreement is the evidence (a
   nightly gate sees a slowdown the night it comes).
1. **The noise.** Each point's mean of log-seconds has the variance
   ``within / seeds + between``: ``within`` is the seeds' variance pooled over every
   point with two or more seeds; ``between`` is what the points vary by beyond
   that (the same code on another day), estimated robustly from the differences of
   successive point means (their median absolute value, which a few steps do not
   move), less what ``within`` already explains. With one seed a point, all the
   noise is ``between``.
2. **The test.** For a segment of points, each split position ``k`` gives the
   standardised difference of the weighted means on either side (weights: one over
   each point's variance); the largest is tested with Student's t (degrees of freedom
   of the noise estimate) and Bonferroni-corrected over the positions tried, so that
   a series without a change is split with probability at most ``level``.
3. **The search.** Binary segmentation: the whole series is tested, split where the
   test says, and each side tested again, until no segment splits. Each change found is
   then placed again, and tested again, between its neighbours, and dropped when that
   test no longer passes, until nothing moves.

Deterministic (no permutation, no random interval), and O(n log n) arithmetic in the
standard library: a series of 1,000 points costs a few milliseconds.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import NamedTuple

import attrs

from stagetimer._analysis.stats import median, t_sf

__all__ = ["DETECTION_LEVEL", "Change", "Detection", "detect", "find_changes", "log_seeds"]

#: the chance that a series of points without a change gets one (per series)
DETECTION_LEVEL = 0.002
#: durations below this count as this before their logarithm is taken (as ``compare``)
_FLOOR_SECONDS = 1e-6
#: the median absolute value of a standard normal: MAD / this estimates its SD
_MAD_NORMAL = 0.6744897501960817
#: the least variance of a point's value (log-seconds): durations that agree to one part
#: in a million (a constant in a test, a clock's resolution) differ by no real change
_MIN_VARIANCE = 1e-12
#: how many robust standard deviations a seed (or a point of few seeds) may lie out
_CLIP = 3.0


@attrs.frozen
class Change:
    """A change point: ``index`` is the first point after the change."""

    index: int
    #: the Bonferroni-corrected p-value of the split between the neighbouring changes
    p_value: float
    #: the standardised difference after / before (positive: slower after)
    statistic: float


class Detection(NamedTuple):
    """What ``detect`` found, and the p-value of every test it ended with (one per change,
    and one per segment left unsplit), for a correction across many series."""

    changes: list[Change]
    p_values: list[float]


def log_seeds(seconds: Sequence[float]) -> list[float]:
    """The valid seconds of one point as log-seconds (below 1 µs counted as 1 µs)."""
    if _usual(seconds):  # their logarithm taken in C
        return list(map(math.log, seconds))
    return [
        math.log(max(float(s), _FLOOR_SECONDS))
        for s in seconds
        if isinstance(s, (int, float)) and not isinstance(s, bool) and 0 <= s < math.inf
    ]


def _usual(seconds: Sequence[float]) -> bool:
    """Whether every value is a float of 1 µs or more, and their sum finite (the usual
    point)."""
    try:
        return (set(map(type, seconds)) <= {float} and min(seconds) >= _FLOOR_SECONDS
                and sum(seconds) < math.inf)
    except (TypeError, ValueError):
        return False


class _Series:
    """A series' point means, their weights and cumulative sums, and the noise's df."""

    def __init__(self, points: Sequence[Sequence[float]]) -> None:
        points = _clipped_seeds(points)
        means, factors, squares, within_df = _point_values(points)
        within = squares / within_df if within_df else 0.0
        between, between_df = _between(means, factors, within)
        variances = [max(within * f + between, _MIN_VARIANCE) for f in factors]
        clipped = _clipped_points(means, variances)
        if len(points[-1]) >= 3:  # the newest point has no neighbour after it: its seeds judge it
            clipped[-1] = means[-1]
        means = clipped
        self.weights = [1.0 / v for v in variances]
        self.means = means
        self.df = _noise_df(within, within_df, between, between_df, factors)
        self.cum_w = [0.0]
        self.cum_wx = [0.0]
        for w, m in zip(self.weights, means, strict=True):
            self.cum_w.append(self.cum_w[-1] + w)
            self.cum_wx.append(self.cum_wx[-1] + w * m)

    def best_split(self, start: int, end: int) -> tuple[int, float]:
        """The split of points ``start..end-1`` with the largest |statistic|: (index, stat)."""
        cum_w, cum_wx = self.cum_w, self.cum_wx
        w0, wx0 = cum_w[start], cum_wx[start]
        total_w, total_wx = cum_w[end] - w0, cum_wx[end] - wx0
        best_k, best_t, best_abs = start + 1, 0.0, -1.0
        for k in range(start + 1, end):
            left_w = cum_w[k] - w0
            right_w = total_w - left_w
            left_wx = cum_wx[k] - wx0
            diff = (total_wx - left_wx) / right_w - left_wx / left_w
            t = diff / math.sqrt(1.0 / left_w + 1.0 / right_w)
            if abs(t) > best_abs:
                best_k, best_t, best_abs = k, t, abs(t)
        return best_k, best_t

    def p_value(self, statistic: float, positions: int) -> float:
        """Two-sided p of the largest of ``positions`` statistics, Bonferroni-corrected."""
        if math.isinf(statistic):
            return 0.0
        return min(1.0, positions * 2.0 * t_sf(abs(statistic), self.df))


def _point_values(points: Sequence[Sequence[float]],
                  ) -> tuple[list[float], list[float], float, int]:
    """Each point's value (its mean; its median from 3 seeds, which one slow seed does not
    move) and variance factor (``_median_variance``), and the sum of squares about the
    points' means with its df."""
    means: list[float] = []
    factors: list[float] = []
    squares = 0.0
    within_df = 0
    for logs in points:
        n = len(logs)
        mean = math.fsum(logs) / n
        means.append(mean if n < 3 else median(sorted(logs)))
        factors.append(_median_variance(n))
        if n > 1:
            squares += math.fsum((v - mean) ** 2 for v in logs)
            within_df += n - 1
    return means, factors, squares, within_df


def _noise_df(within: float, within_df: int, between: float, between_df: int,
              factors: list[float]) -> float:
    """The df of the noise estimate: within's when it carries the noise, else between's;
    Welch-Satterthwaite's for the sum of the two where both do."""
    if within_df and between > 0.0:
        part = within * sum(factors) / len(factors)
        return max(1.0, (part + between) ** 2
                   / (part * part / within_df + between * between / between_df))
    return float(max(1, within_df if between == 0.0 else between_df))


def _clipped_seeds(points: Sequence[Sequence[float]]) -> list[Sequence[float]]:
    """Each seed of a point of 3 or more held within ``_CLIP`` robust standard deviations
    of its point's median: one seed slowed by a neighbour's job does not move the point.

    The scale is the median absolute deviation of every such seed from its point's
    median, pooled over the series (consistent for normal noise up to a small bias that
    the clip's width absorbs).
    """
    medians = [median(sorted(logs)) if len(logs) >= 3 else 0.0 for logs in points]
    scale = _robust_scale(points, medians)
    if scale <= 0.0:
        return list(points)
    width = _CLIP * scale
    return [_clipped(logs, m - width, m + width) for logs, m in zip(points, medians, strict=True)]


def _robust_scale(points: Sequence[Sequence[float]], medians: list[float]) -> float:
    """The pooled median absolute deviation of the seeds of points of 3 or more, as a
    standard deviation; 0 where no seed deviates."""
    deviations: list[float] = []
    for logs, m in zip(points, medians, strict=True):
        if len(logs) >= 3:  # the middle seed of an odd count is its own median: left out
            deviations.extend(abs(v - m) for v in logs if v != m)
    if not deviations:
        return 0.0
    deviations.sort()
    return median(deviations) / _MAD_NORMAL


def _clipped(logs: Sequence[float], low: float, high: float) -> Sequence[float]:
    """A point's seeds held within ``low..high`` (a point under 3 seeds as it is)."""
    if len(logs) < 3 or (min(logs) >= low and max(logs) <= high):
        return logs  # the usual point: nothing to clip
    return [low if v < low else high if v > high else v for v in logs]


def _clipped_points(means: list[float], variances: list[float]) -> list[float]:
    """Each point value held within ``_CLIP`` standard deviations of the median of the five
    points around it: one slow night is an outlier, not a change (a step keeps its edge:
    the median of five follows it)."""
    n = len(means)
    clipped = []
    for i, (m, v) in enumerate(zip(means, variances, strict=True)):
        low, high = max(0, i - 2), min(n, i + 3)
        if (high - low) % 2 == 0:  # at an end: odd, so that two points after a step win
            if i - low > high - 1 - i:
                low += 1
            else:
                high -= 1
        window = sorted(means[low:high])
        centre = median(window)
        width = _CLIP * math.sqrt(v)
        clipped.append(min(max(m, centre - width), centre + width))
    return clipped


def _median_variance(n: int) -> float:
    """The variance of a point's value over the variance of one seed: 1/n for the mean
    (fewer than 3 seeds), that of the median of n normal values for 3 or more (exact for
    3 to 5, the asymptotic pi / 2n beyond, a little above the truth)."""
    exact = {1: 1.0, 2: 0.5, 3: 0.4487, 4: 0.3433, 5: 0.2868}
    return exact.get(n, math.pi / (2 * n))


def _between(means: list[float], factors: list[float], within: float) -> tuple[float, int]:
    """The variance of point means beyond what ``within`` explains, and its rough df.

    From successive differences: a difference of two point means has twice their
    variance, and a step moves only the one difference that spans it, which the median
    ignores. Its efficiency is about 37 % of the sample variance's, whence the df.
    """
    diffs = sorted(abs(b - a) for a, b in itertools.pairwise(means))
    if not diffs:
        return 0.0, 0
    sd = median(diffs) / _MAD_NORMAL / math.sqrt(2.0)
    explained = within * sum(factors) / len(factors)
    return max(0.0, sd * sd - explained), max(1, int(0.37 * len(diffs)))


def detect(points: Sequence[Sequence[float]], *, level: float = DETECTION_LEVEL) -> Detection:
    """The change points of a series of points, each the seconds of its seeds.

    ``points``: in order, each the durations (seconds) of its seeds; invalid values are
    left out, and a point left without a value is skipped (indices still count it).
    Fewer than 4 points with values: nothing is tested.
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie between 0 and 1, not {level!r}")
    kept = [(i, logs) for i, logs in enumerate(map(log_seeds, points)) if logs]
    if len(kept) < 4:
        return Detection([], [])
    series = _Series([logs for _, logs in kept])
    splits = _segment(series, len(kept), level)
    changes, p_values = _refine(series, len(kept), splits, level)
    index = [i for i, _ in kept]
    return Detection([attrs.evolve(c, index=index[c.index]) for c in changes], p_values)


def find_changes(
    points: Sequence[Sequence[float]], *, level: float = DETECTION_LEVEL
) -> list[Change]:
    """The change points of a series (see ``detect``), oldest first.

    >>> seeds = [[1.0, 1.01, 1.0], [0.99, 1.0, 1.0], [1.0, 1.02, 1.0], [1.0, 1.01, 1.02],
    ...          [1.5, 1.51, 1.5], [1.49, 1.5, 1.48]]
    >>> [change.index for change in find_changes(seeds)]
    [4]
    """
    return detect(points, level=level).changes


def _segment(series: _Series, n: int, level: float) -> list[int]:
    """Binary segmentation: the split indices, sorted."""
    splits: list[int] = []
    stack = [(0, n)]
    while stack:
        start, end = stack.pop()
        if end - start < 2:
            continue
        k, t = series.best_split(start, end)
        if series.p_value(t, end - start - 1) <= level:
            splits.append(k)
            stack.append((start, k))
            stack.append((k, end))
    return sorted(splits)


def _refine(
    series: _Series, n: int, splits: list[int], level: float
) -> tuple[list[Change], list[float]]:
    """Each split placed again and tested between its neighbours until none moves."""
    for _ in range(20):
        moved = _placed_again(series, [0, *splits, n], level)
        if moved == splits:
            break
        splits = moved
    return _tested(series, [0, *splits, n])


def _placed_again(series: _Series, bounds: list[int], level: float) -> list[int]:
    """One pass of ``_refine``: each split placed again between the one before it (as
    just placed) and the one after it, kept while it is significant there."""
    moved: list[int] = []
    for i in range(1, len(bounds) - 1):
        lo = moved[-1] if moved else bounds[i - 1]
        k, t = series.best_split(lo, bounds[i + 1])
        if series.p_value(t, bounds[i + 1] - lo - 1) <= level:
            moved.append(k)
    return sorted(set(moved))


def _tested(series: _Series, bounds: list[int]) -> tuple[list[Change], list[float]]:
    """Each split tested between its neighbours; the p-values of every test made."""
    n = bounds[-1]
    changes: list[Change] = []
    p_values: list[float] = []
    for i in range(1, len(bounds) - 1):
        k, t = series.best_split(bounds[i - 1], bounds[i + 1])
        if k != bounds[i]:  # the last pass did not settle: test the split where it is
            t = _statistic(series, bounds[i - 1], bounds[i], bounds[i + 1])
        p = series.p_value(t, bounds[i + 1] - bounds[i - 1] - 1)
        changes.append(Change(bounds[i], p, t))
        p_values.append(p)
    if not changes:  # the one test made: the whole series, unsplit
        k, t = series.best_split(0, n)
        p_values.append(series.p_value(t, n - 1))
    return changes, p_values


def _statistic(series: _Series, start: int, k: int, end: int) -> float:
    cum_w, cum_wx = series.cum_w, series.cum_wx
    left_w, right_w = cum_w[k] - cum_w[start], cum_w[end] - cum_w[k]
    diff = (cum_wx[end] - cum_wx[k]) / right_w - (cum_wx[k] - cum_wx[start]) / left_w
    return diff / math.sqrt(1.0 / left_w + 1.0 / right_w)
