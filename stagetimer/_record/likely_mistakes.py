"""What the recorder says when a record is probably not what its user meant.

Each is a ``StageTimerWarning`` the recorder gives once per stage: the records are
stored by the rules as they stand (docs/format.md, "Replacement rules").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from stagetimer._store.rules import is_stage

__all__ = [
    "LikelyMistakes",
    "appended_again",
    "find_duplicate",
    "find_overtaken",
    "reset_dropped",
    "unindexed_again",
]


@attrs.define(eq=False)
class LikelyMistakes:
    """One recorder's likely mistakes, each said once per stage through ``warn``."""

    policy: str
    warn: Callable[[str], None]
    # Stages (with their label under upsert) recorded without run_idx, and the
    # (stage, kind) pairs already said.
    _unindexed: set[tuple[str, str | None]] = attrs.field(factory=set, init=False)
    _said: set[tuple[str, str]] = attrs.field(factory=set, init=False)

    def recorded_unindexed(self, name: str, label: str | None) -> None:
        """A record without run_idx; said when it replaces one this recorder recorded."""
        key = (name, label if self.policy == "upsert" else None)
        if key not in self._unindexed:
            self._unindexed.add(key)
            return
        self._say(name, "unindexed", unindexed_again(name))

    def appended_again(self, name: str, run_idx: int) -> None:
        """Under ``sequential``: a run k > 0 appended beside a run k already on disk."""
        self._say(name, "duplicate", appended_again(name, run_idx))

    def reset_dropped(self, name: str, run_idxs: tuple[int, ...]) -> None:
        """Under ``sequential``: a run 0 reset the stage and dropped runs started after it."""
        self._say(name, "reset", reset_dropped(name, run_idxs))

    def _say(self, name: str, kind: str, message: str) -> None:
        if (name, kind) not in self._said:
            self._said.add((name, kind))
            self.warn(message)


def unindexed_again(name: str) -> str:
    """A recorder replaces an un-indexed stage it recorded itself."""
    return (
        f"stage {name!r} was recorded again without run_idx: a record without run_idx "
        "replaces the stage, so only its last run is kept. If it runs once per seed, give "
        f"each call its run_idx (stage({name!r}, run_idx=i), or "
        "@timed_stage(..., run_idx='<parameter>'))"
    )


def appended_again(name: str, run_idx: int) -> str:
    """Under ``sequential``, a run ``k > 0`` appended beside a run ``k`` on disk."""
    return (
        f"stage {name!r}: run_idx {run_idx} was already on disk and was appended again "
        "(policy 'sequential' appends every run_idx > 0). Restarting an interrupted "
        f"experiment? Use Recorder(..., resume_partial_runs=True, completed_runs={run_idx}) "
        f"to keep only the runs before {run_idx}. Seeds running in parallel or re-run one "
        'by one? Use policy="upsert", which replaces the run with the same run_idx'
    )


def find_duplicate(data: dict[str, Any], name: str, run: dict[str, Any]) -> bool:
    """Whether stage ``name`` on disk already holds a run ``k > 0`` of ``run``'s index ``k``
    and rank.

    Sequential appends keep the runs in order, so only a stage whose last run_idx is
    not below ``k`` is searched: the common save costs one look at the last run.
    """
    k = run.get("run_idx")
    if not isinstance(k, int) or k <= 0 or not is_stage(data.get(name)):
        return False
    runs = data[name]["runs"]
    if _ends_below(runs, k):
        return False
    rank = run.get("rank")  # another rank's run k is its own (ranks write the same stages)
    return any(isinstance(r, dict) and r.get("run_idx") == k and r.get("rank") == rank
               for r in runs)


def _ends_below(runs: list[Any], k: int) -> bool:
    """Whether the stage's last run has an index below ``k`` (then, appended in order,
    none of its runs has ``k``)."""
    last = runs[-1].get("run_idx") if runs and isinstance(runs[-1], dict) else None
    return isinstance(last, int) and last < k


def reset_dropped(name: str, run_idxs: tuple[int, ...]) -> str:
    """Under ``sequential``, run 0 finished last and its reset dropped newer runs."""
    listed = ", ".join(map(str, run_idxs[:20])) + (", ..." if len(run_idxs) > 20 else "")
    return (
        f"stage {name!r}: run_idx 0 reset the stage (policy 'sequential') and dropped "
        f"run_idx {listed}, which started after it did: seeds running in parallel (a "
        "multiprocessing Pool, a job array) finish in any order. Use policy=\"upsert\", "
        "which keeps each run_idx, and run the dropped seeds again"
    )


def find_overtaken(data: dict[str, Any], name: str, run: dict[str, Any]) -> tuple[int, ...]:
    """The ``run_idx`` of runs ``k > 0`` on disk that a sequential ``run_idx=0`` would drop
    although they started after it (``started_at``, ISO text in UTC: its order is the
    order of time). A rerun's run 0 starts after the old runs and drops none of them.
    Only runs of the record's own rank: a reset never drops another rank's runs."""
    started = run.get("started_at")
    if run.get("run_idx") != 0 or type(started) is not str or not is_stage(data.get(name)):
        return ()
    rank = run.get("rank")
    return tuple(sorted(
        r["run_idx"] for r in data[name]["runs"] if _later_run(r, rank, started)
    ))


def _later_run(r: Any, rank: Any, started: str) -> bool:
    """Whether ``r`` is a run ``k > 0`` of ``rank`` that started after ``started``."""
    return (
        type(r) is dict
        and type(r.get("run_idx")) is int
        and r["run_idx"] > 0
        and r.get("rank") == rank
        and type(r.get("started_at")) is str
        and r["started_at"] > started
    )
