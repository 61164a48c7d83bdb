"""A seed's time with its continuation folded in: the one fold the table and the picture read.

A training stage (``x_train``) interrupted and resumed records the rest of its run as
``x_train_auto_resume`` for the same seed (``run_idx``). The time that seed took is
both together. Each seed counts once, as its slowest rank; only durations a writer
could have stored enter; a run without a ``run_idx`` is a seed of its own. A seed
with only a continuation still ran: it is kept (its time in the stage itself is 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stagetimer._analysis.raw import raw_seconds
from stagetimer._analysis.seeds import by_seed
from stagetimer._store.rules import is_valid_seconds

__all__ = ["seed_times"]


def seed_times(
    runs: Sequence[dict[str, Any]], continuation: Sequence[dict[str, Any]] = ()
) -> list[tuple[float, float]]:
    """Per seed, in the order first seen: (its seconds in the stage, its seconds in the
    continuation), from the stored runs of both (``ArtifactReport.stored_runs``)."""
    found: dict[Any, list[float]] = {}
    for slot, stored in enumerate((runs, continuation)):
        for key, seconds in _valid_seconds(slot, stored):
            found.setdefault(key, [0.0, 0.0])[slot] += seconds
    return [(base, resumed) for base, resumed in found.values()]


def _valid_seconds(
    slot: int, stored: Sequence[dict[str, Any]]
) -> list[tuple[Any, float]]:
    """The seeds of one stage (a seed's ranks once), each with its key and seconds; a
    run without a ``run_idx`` is keyed by its ``slot`` and place."""
    stage = by_seed({"runs": list(stored)})[0]
    return [
        (("seed", run["run_idx"]) if run.get("run_idx") is not None else (slot, position),
         seconds)
        for position, (run, seconds) in enumerate(
            zip(stage["runs"], raw_seconds(stage), strict=True)
        )
        if is_valid_seconds(seconds)
    ]
