"""A seed counted once: the ranks of one distributed launch as one run, the longest of them.

Ranks of one launch (``torchrun``, a Slurm step of several tasks, MPI) each record the
same stage for the same seed. A distributed stage ends when its last rank does, so the
readers (report, table, compare, the picture) count each seed once with the duration
of its slowest rank, and the report shows the spread between the fastest and slowest
rank. ``to_records`` keeps every rank's run.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter
from typing import Any, TypeVar

import attrs

from stagetimer._analysis.stats import median
from stagetimer._store.rules import add_seconds, is_valid_seconds

__all__ = ["RankSpread", "by_seed", "longest_ranks"]

_Run = TypeVar("_Run")


@attrs.frozen
class RankSpread:
    """How a stage's ranks differed: per seed, slowest minus fastest rank's seconds."""

    #: the most ranks one seed had
    ranks: int
    #: seeds run by several ranks
    seeds: int
    #: the largest and the median spread over those seeds, in seconds
    max_seconds: float
    median_seconds: float


def _seconds(run: Any) -> float | None:
    value = run.get("seconds") if isinstance(run, dict) else getattr(run, "seconds", None)
    return float(value) if is_valid_seconds(value) else None


def _key(run: Any) -> tuple[Any, Any, Any] | None:
    """The seed a ranked run belongs to (run_idx, label, world size); None: no rank."""
    if isinstance(run, dict):
        if run.get("rank") is None:
            return None
        return (run.get("run_idx"), run.get("label"), run.get("world_size"))
    if getattr(run, "rank", None) is None:
        return None
    return (run.run_idx, run.label, run.world_size)


def longest_ranks(runs: Sequence[_Run]) -> tuple[list[_Run], list[tuple[float, int]]]:
    """``runs`` with the runs of one seed's ranks replaced by the longest of them, at the
    place of the first; and each such seed's (spread in seconds, number of ranks).

    A run whose ``seconds`` no writer could have written does not win over a valid one
    (it stays if its seed has no other). Runs without a rank are kept as they are.
    Works on stored runs (dicts) and on ``RunTiming`` objects alike.
    """
    kept: list[_Run] = []
    places: dict[tuple[Any, Any, Any], int] = {}
    seeds: dict[tuple[Any, Any, Any], list[_Run]] = {}
    for run in runs:
        key = _key(run)
        if key is None:
            kept.append(run)
        elif key in seeds:
            seeds[key].append(run)
        else:
            places[key], seeds[key] = len(kept), [run]
            kept.append(run)
    spreads: list[tuple[float, int]] = []
    for key, ranks in seeds.items():
        kept[places[key]], seconds = _longest(ranks)
        if len(seconds) > 1:
            spreads.append((max(seconds) - min(seconds), len(seconds)))
    return kept, spreads


def _longest(ranks: list[_Run]) -> tuple[_Run, list[float]]:
    """The first of the longest of one seed's ranks whose seconds a writer could have
    written (the first rank where none could), and those seconds."""
    valid = [(seconds, run) for run in ranks if (seconds := _seconds(run)) is not None]
    longest = max(valid, key=itemgetter(0), default=(0.0, ranks[0]))[1]
    return longest, [seconds for seconds, _ in valid]


def by_seed(stage: dict[str, Any]) -> tuple[dict[str, Any], RankSpread | None]:
    """A stored stage as the readers count it (see ``longest_ranks``), and its rank spread.

    A stage without ranked runs is returned as it is (the usual case: one look at the
    keys of its runs, in C). Otherwise a new stage object whose ``runs`` hold one run
    per seed and whose ``total_seconds`` is their sum.
    """
    runs = stage["runs"]
    if not runs or "rank" not in set().union(*runs):
        return stage, None
    kept, spreads = longest_ranks(runs)
    view = {**stage, "runs": kept, "total_seconds": add_seconds(0.0, kept)}
    if not spreads:
        return view, None
    ordered = sorted(s for s, _ in spreads)
    return view, RankSpread(
        ranks=max(n for _, n in spreads),
        seeds=len(spreads),
        max_seconds=ordered[-1],
        median_seconds=median(ordered),
    )
