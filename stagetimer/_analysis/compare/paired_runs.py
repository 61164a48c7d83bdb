"""``compare --paired``: which run of one side is the same seed as which run of the other.

Runs are matched by (run_idx, label, rank), the k-th run of a key with the k-th of the
same key. The ranks of a distributed launch are matched rank by rank; the matched ranks
of one seed then make one pair, the slowest of them on each side, as every reader counts
a seed once (its ranks are not independent samples), and both sides are timed on the
same ranks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["matched_differences"]

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
        partner = by_key.get(key) if key is not None else None
        if partner is None:
            continue
        matched += 1
        if key is None or key[2] is None:  # no rank: the run is its seed
            differences.append(log(partner) - log(value))
            continue
        seed = (key[0], key[1], key[3])  # run_idx, label, which occurrence
        slowest = seeds.get(seed)
        if slowest is None:
            seeds[seed] = [value, partner]
        else:
            slowest[0], slowest[1] = max(slowest[0], value), max(slowest[1], partner)
    differences.extend(log(n) - log(b) for b, n in seeds.values())
    return differences, matched
