"""One stage compared, from its durations on each side to its verdict.

The statistics of ``compare`` for a single stage (see ``stagetimer._analysis.compare.suites``
for the whole call): each side's runs, median, mean and standard deviation; the
geometric-mean ratio new / base on log-seconds (a duration below 1 µs counted as
1 µs); Welch's t, or the paired t on the matched runs; and, once the q-value over
every test of the call is known, the verdict.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from stagetimer._analysis.compare.model import (
    FASTER,
    NO_DIFFERENCE,
    SIGNIFICANCE,
    SLOWER,
    TOO_FEW_RUNS,
    SideStats,
    StageComparison,
)
from stagetimer._analysis.compare.significance import TTestResult, paired_test, welch_test
from stagetimer._analysis.stats import mean_and_variance, moments

__all__ = [
    "CONFIDENCE",
    "FLOOR_SECONDS",
    "Measured",
    "judged",
    "measure",
    "measure_paired",
]

#: durations below this count as this before their logarithm is taken
FLOOR_SECONDS = 1e-6
CONFIDENCE = 0.95
#: math.exp overflows above ln(max float) = 709.78...; a ratio past it is infinite
_LARGEST_LOG = math.log(1.7976931348623157e308)


def _exp(value: float) -> float:
    """``math.exp`` without OverflowError: the runs [1e-6, 1e308] differ by e**723."""
    return math.exp(value) if value <= _LARGEST_LOG else math.inf


class Measured(NamedTuple):
    """A stage measured, before the adjustment over every test of the call gives its
    verdict (a named tuple: ten thousand a suite)."""

    name: str
    base: SideStats
    new: SideStats
    ratio: float | None
    test: TTestResult | None
    pairs_of_runs: int | None = None
    unmatched_runs: tuple[int, int] = (0, 0)
    #: what the stage used on each side (``compute.side_by_side``), None if never recorded
    resources: dict[str, Any] | None = None


def judged(m: Measured, q_value: float | None, threshold: float) -> StageComparison:
    """The stage's comparison once its q-value is known."""
    test = m.test
    if test is None:
        return StageComparison(
            m.name, m.base, m.new, m.ratio, None, TOO_FEW_RUNS, None, None,
            m.pairs_of_runs, m.unmatched_runs, m.resources,
        )
    assert q_value is not None
    verdict = NO_DIFFERENCE
    if q_value <= SIGNIFICANCE and abs(test.difference) >= math.log1p(threshold):
        verdict = SLOWER if test.difference > 0 else FASTER
    return StageComparison(
        m.name, m.base, m.new, m.ratio, (_exp(test.low), _exp(test.high)),
        verdict, test.p_value, q_value, m.pairs_of_runs, m.unmatched_runs, m.resources,
    )


def _side(values: Sequence[float]) -> tuple[SideStats, float]:
    """The side's statistics, and its smallest value (inf: none)."""
    n = len(values)
    if n == 0:
        return SideStats(0, None, None, None), math.inf
    mean, median, stdev, ordered = moments(values, sum(values, 0.0))
    return SideStats(n, median, mean, stdev), ordered[0]


def _logs(values: Sequence[float], smallest: float) -> list[float]:
    if smallest > FLOOR_SECONDS:  # the usual stage: no duration to raise to the floor
        return list(map(math.log, values))
    return [math.log(v if v > FLOOR_SECONDS else FLOOR_SECONDS) for v in values]


def _log(value: float) -> float:
    return math.log(value if value > FLOOR_SECONDS else FLOOR_SECONDS)


def measure(name: str, base: Sequence[float], new: Sequence[float]) -> Measured:
    """One stage by Welch's t on log-seconds (durations already valid)."""
    (base_stats, base_min), (new_stats, new_min) = _side(base), _side(new)
    if not base or not new:
        return Measured(name, base_stats, new_stats, None, None)
    mean_base, var_base = mean_and_variance(_logs(base, base_min))
    mean_new, var_new = mean_and_variance(_logs(new, new_min))
    ratio = _exp(mean_new - mean_base)
    if len(base) < 2 or len(new) < 2:
        return Measured(name, base_stats, new_stats, ratio, None)
    test = welch_test((mean_new, var_new, len(new)), (mean_base, var_base, len(base)), CONFIDENCE)
    return Measured(name, base_stats, new_stats, ratio, test)


def measure_paired(
    name: str,
    base_values: list[float],
    new_values: list[float],
    base_runs: tuple[list[float], list[dict[str, Any]]],
    new_runs: tuple[list[float], list[dict[str, Any]]],
) -> Measured:
    """One stage by the paired t on the differences of log-seconds of matched runs.

    ``base_values``/``new_values``: each side's durations, a seed once (its statistics);
    ``base_runs``/``new_runs``: the stored valid durations and runs, every rank (matched).
    """
    base_stats, new_stats = _side(base_values)[0], _side(new_values)[0]
    differences, matched = matched_differences(base_runs, new_runs, _log)
    unmatched = (len(base_runs[0]) - matched, len(new_runs[0]) - matched)
    n = len(differences)
    if n == 0:
        return Measured(name, base_stats, new_stats, None, None, 0, unmatched)
    ratio = _exp(mean_and_variance(differences)[0])
    test = paired_test(differences, CONFIDENCE) if n >= 2 else None
    return Measured(name, base_stats, new_stats, ratio, test, n, unmatched)

# --- compare --paired: which run of one side is the same seed as which of the other ---
# Runs are matched by (run_idx, label, rank), the k-th run of a key with the k-th of the
# same key. The ranks of a distributed launch are matched rank by rank; the matched ranks
# of one seed then make one pair, the slowest of them on each side, as every reader counts
# a seed once (its ranks are not independent samples), and both sides are timed on the
# same ranks.

#: what a run is matched by: the seed, the label and the rank
_MATCH_FIELDS = ("run_idx", "label", "rank")


def _keys(runs: Sequence[dict[str, Any]]) -> list[tuple[Any, ...] | None]:
    """Each valid run's (run_idx, label, rank), None when it names none of them (nothing
    to match it by); the k-th run of a key pairs with the k-th of the same key."""
    keys: list[tuple[Any, ...] | None] = []
    seen: dict[tuple[Any, ...], int] = {}
    for run in runs:
        key = tuple(run.get(field) for field in _MATCH_FIELDS)
        if key == (None, None, None):
            keys.append(None)
            continue
        count = seen[key] = seen.get(key, 0) + 1
        keys.append((*key, count))
    return keys


def matched_differences(
    base: tuple[list[float], list[dict[str, Any]]],
    new: tuple[list[float], list[dict[str, Any]]],
    log: Callable[[float], float],
) -> tuple[list[float], int]:
    """The differences of log-seconds of the matched runs, and how many runs matched.

    Runs match by (run_idx, label, rank). The matched ranks of one seed (a distributed
    launch) are one pair, as the readers count a seed: the slowest of those ranks on each
    side, so that a seed is not counted once per rank (its ranks are not independent
    samples) and both sides are judged on the same ranks.
    """
    (base_values, base_runs), (new_values, new_runs) = base, new
    by_key = {k: v for k, v in zip(_keys(new_runs), new_values, strict=True) if k is not None}
    differences: list[float] = []
    seeds: dict[tuple[Any, ...], list[float]] = {}
    matched = 0
    for key, value in zip(_keys(base_runs), base_values, strict=True):
        if key is None or (partner := by_key.get(key)) is None:
            continue
        matched += 1
        if key[2] is None:  # no rank: the run is its seed
            differences.append(log(partner) - log(value))
            continue
        # run_idx, label, which occurrence: the slowest rank on each side
        slowest = seeds.setdefault((key[0], key[1], key[3]), [value, partner])
        slowest[0], slowest[1] = max(slowest[0], value), max(slowest[1], partner)
    differences.extend(log(n) - log(b) for b, n in seeds.values())
    return differences, matched
