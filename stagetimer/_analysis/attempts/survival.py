"""Durations with right-censoring: the Kaplan-Meier estimate and draws from it.

A finished attempt is an observed duration; a running one is right-censored at its
elapsed time (it will take at least that long), as is a failed or killed one (the attempt
would have taken longer had it not ended). Using the finished ones alone biases every
estimate low: the fast runs finish first.

Past the longest observed duration the estimate has no data; the mass left there is
drawn as that duration plus an exponential whose mean is the data's total time at risk
per observed end (the exponential fit to all of it), so a draw is never capped at the
longest run seen so far.
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Sequence
from operator import itemgetter

import attrs

__all__ = ["Survival", "kaplan_meier"]


@attrs.frozen
class Survival:
    """The Kaplan-Meier step function: after ``times[i]`` the survival is ``levels[i]``."""

    #: the distinct observed durations, ascending
    times: tuple[float, ...]
    #: the survival just after each of ``times``, non-increasing, in [0, 1]
    levels: tuple[float, ...]
    #: mean of the exponential tail beyond the last observed duration
    tail_mean: float
    #: the largest observation, censored or not (where the tail starts)
    horizon: float
    #: ``levels`` negated (ascending), for bisection
    _negated: tuple[float, ...] = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_negated", tuple(-level for level in self.levels))

    def survival(self, t: float) -> float:
        """P(duration > t)."""
        i = bisect.bisect_right(self.times, t)
        return 1.0 if i == 0 else self.levels[i - 1]

    def draw(self, rng: random.Random, elapsed: float = 0.0) -> float:
        """One duration drawn given that it is longer than ``elapsed``."""
        top = self.survival(elapsed)
        u = rng.random() * top
        # the first time whose survival falls below u (levels are non-increasing)
        i = bisect.bisect_right(self._negated, -u)
        if i < len(self.times) and self.levels[i] < u:
            return max(self.times[i], elapsed)
        start = max(self.horizon, elapsed, self.times[-1] if self.times else 0.0)
        return start + rng.expovariate(1.0 / self.tail_mean)

    def median(self) -> float | None:
        """The smallest time where survival is 0.5 or below; None past the data."""
        for time, level in zip(self.times, self.levels, strict=True):
            if level <= 0.5:
                return time
        return None


def _last_level(levels: list[float], n: int) -> float:
    """The last level of a predictive estimate of ``n`` observations: ``1 / (n + 1)``,
    never above the level before it."""
    return min(levels[-2] if len(levels) > 1 else 1.0, 1.0 / (n + 1))


def _mean_excess(ended_times: list[float]) -> float:
    """The mean excess of the ``k`` longest ended durations (at most 10) over the one
    below them."""
    k = min(10, len(ended_times) - 1)
    top = ended_times[-k:]
    return max(sum(top) / k - ended_times[-k - 1], 1e-9)


def _steps(data: list[tuple[float, bool]]) -> tuple[list[float], list[float]]:
    """The times where sorted observations ``data`` end, and the survival after each."""
    times: list[float] = []
    levels: list[float] = []
    at_risk = len(data)
    level = 1.0
    i = 0
    while i < len(data):
        t = data[i][0]
        ended = censored = 0
        while i < len(data) and data[i][0] == t:
            ended += data[i][1]
            censored += not data[i][1]
            i += 1
        if ended:
            level *= 1.0 - ended / at_risk
            times.append(t)
            levels.append(level)
        at_risk -= ended + censored
    return times, levels


def kaplan_meier(
    observations: Sequence[tuple[float, bool]], *, predictive: bool = False
) -> Survival | None:
    """The estimate from ``(seconds, ended)`` pairs (``ended`` False: right-censored);
    None when no observation has ended (nothing to estimate from).

    ``predictive``: the estimate to draw *new* durations from. Of ``n`` durations and one
    more from the same law, the new one is the longest with probability ``1 / (n + 1)``;
    the plain estimate, where the longest observation ended, says 0 (no draw could ever
    be longer than what was seen, and the last of many runs to come always is). The last
    level is then ``1 / (n + 1)``, drawn in the tail, whose mean is then the mean excess
    of the longest runs over the one below them (the ``k`` longest, at most 10: for an
    exponential tail, its scale; for runs that all took as long, nothing). One ended
    observation says nothing of how far the next may straggle: it is kept as it is."""
    data = sorted((max(0.0, s), ended) for s, ended in observations)
    ended_times = [s for s, ended in data if ended]  # ascending
    if not ended_times:
        return None
    times, levels = _steps(data)  # a level per time some observation ended: not empty
    tail_mean = max(sum(map(itemgetter(0), data)) / len(ended_times), 1e-9)
    if predictive and levels[-1] == 0.0 and len(ended_times) > 1:
        levels[-1] = _last_level(levels, len(data))
        tail_mean = _mean_excess(ended_times)
    return Survival(tuple(times), tuple(levels), tail_mean, data[-1][0])
