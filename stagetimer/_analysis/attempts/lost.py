"""What a suite's attempts cost and what of it was lost: per hardware description and
stage, the productive time (finished attempts) and the time lost (failed and killed
ones) by cause, and the effective-time ratio, productive ÷ (productive + lost), as
cluster operators measure it ("Revisiting Reliability in Large-Scale ML Research
Clusters", HPCA 2025).

A failed attempt lost its ``seconds``. A killed one lost at least the time from its start
to the lower end of its ``ended_between`` (counted) and at most the time to its upper end
(shown beside, ``lost_seconds_upper``; None where some killed attempt's end is unbounded
above). Running and unknown attempts are counted, never summed: nothing says yet what
they cost. Every rank's attempt counts, each rank having held its own devices. An
attempt whose marker holds values no writer could have written (``Attempt.odd``) is
counted, never summed. An attempt of no known hardware is attributed as ``compute`` and
the page attribute it (``attribution``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from stagetimer._analysis.attempts.attribution import attribute
from stagetimer._analysis.attempts.scan import Attempt
from stagetimer._analysis.nesting import NESTED_NOTE, nested_attempts
from stagetimer._store.rules import is_valid_seconds

__all__ = [
    "STATES",
    "LostGroup",
    "LostSummary",
    "gpu_hours_lost",
    "lost_bounds",
    "lost_summary",
]

#: The states of an attempt, in the order a summary counts them.
STATES = ("finished", "failed", "killed", "running", "unknown")


@attrs.define
class LostGroup:
    """The attempts of one stage on one hardware description (or of everything)."""

    hardware_id: str | None
    stage: str | None
    #: GPUs the hardware description lists (0: none; None: not described)
    gpus: int | None = None
    productive_seconds: float = 0.0
    lost_seconds: dict[str, float] = attrs.Factory(dict)
    #: the lost time if every killed attempt ended at its interval's upper end
    lost_seconds_upper: float | None = 0.0
    attempts: dict[str, int] = attrs.Factory(dict)

    @property
    def lost_total(self) -> float:
        return sum(self.lost_seconds.values())

    @property
    def effective_ratio(self) -> float | None:
        """productive ÷ (productive + lost); None when neither was recorded."""
        whole = self.productive_seconds + self.lost_total
        return self.productive_seconds / whole if whole > 0 else None

    def gpu_hours(self, seconds: float | None) -> float | None:
        """``seconds`` on this description's GPUs in GPU-hours; None without GPUs."""
        if not self.gpus or seconds is None:
            return None
        return seconds * self.gpus / 3600.0

    def add(self, attempt: Attempt, *, nested: bool = False) -> None:
        """Count ``attempt``; ``nested``: a finished one inside its parent's run, whose time
        its parent's already holds (``nesting``)."""
        self.attempts[attempt.state] = self.attempts.get(attempt.state, 0) + 1
        if attempt.odd:
            return  # counted, never summed
        lost = _LOST.get(attempt.state)
        if lost is not None:
            cause, bounds = lost
            self._lose(attempt.cause or cause, *bounds(attempt))
        elif attempt.state == "finished" and is_valid_seconds(attempt.seconds) and not nested:
            self.productive_seconds += attempt.seconds

    def _lose(self, cause: str, low: float, high: float | None) -> None:
        self.lost_seconds[cause] = self.lost_seconds.get(cause, 0.0) + low
        if self.lost_seconds_upper is not None:
            self.lost_seconds_upper = None if high is None else self.lost_seconds_upper + high

    def to_dict(self, *, keys: bool = True) -> dict[str, Any]:
        """The shape of ``lost --json`` (``keys``: with ``hardware_id`` and ``stage``)."""
        head: dict[str, Any] = (
            {"hardware_id": self.hardware_id, "stage": self.stage} if keys else {}
        )
        return {
            **head,
            "productive_seconds": self.productive_seconds,
            "lost_seconds": dict(sorted(self.lost_seconds.items())),
            "lost_seconds_upper": self.lost_seconds_upper,
            "effective_ratio": self.effective_ratio,
            "attempts": {state: self.attempts[state] for state in STATES
                         if state in self.attempts},
        }


def _failed_bounds(attempt: Attempt) -> tuple[float, float | None]:
    """A failed attempt lost its recorded seconds, exactly (none where none valid)."""
    seconds = attempt.seconds if is_valid_seconds(attempt.seconds) else 0.0
    return seconds, seconds


def lost_bounds(attempt: Attempt) -> tuple[float, float | None]:
    """The least and the most a killed attempt lost (seconds from its start to each end
    of its interval; the most is None where the end is unbounded above)."""
    start = attempt.started_at
    ended = attempt.ended_between or (None, None)
    if start is None:
        return 0.0, None
    low = 0.0 if ended[0] is None else max((ended[0] - start).total_seconds(), 0.0)
    high = None if ended[1] is None else max((ended[1] - start).total_seconds(), low)
    return low, high


#: the states that lose time: the cause where the attempt names none, and what it lost
_LOST: dict[str, tuple[str, Callable[[Attempt], tuple[float, float | None]]]] = {
    "failed": ("raised", _failed_bounds),
    "killed": ("killed", lost_bounds),
}


@attrs.define
class LostSummary:
    """Per (hardware description, stage), and in all."""

    groups: list[LostGroup]
    total: LostGroup
    #: failed and killed attempts no hardware description could be given to
    unattributed: int = 0
    #: attempts left out of the sums: their markers hold values no writer could write
    odd: int = 0
    #: finished attempts counted inside their parent's in ``total`` (``nesting``); each
    #: group, one stage's, counts its own
    nested_attempts: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The shape of ``lost --json``; ``nested_attempts`` and ``nested_note`` only where
        ``total`` counted some attempt inside its parent's."""
        said: dict[str, Any] = {"groups": [group.to_dict() for group in self.groups],
                                "total": self.total.to_dict(keys=False)}
        if self.nested_attempts:
            said["nested_attempts"] = self.nested_attempts
            said["nested_note"] = NESTED_NOTE
        return said


def lost_summary(
    attempts: Iterable[Attempt],
    gpus: Mapping[str, int] | None = None,
    hosts: Mapping[str, str | None] | None = None,
) -> LostSummary:
    """The summary of ``attempts``; ``gpus``: the GPU count of each hardware description
    known (descriptions without GPUs, or unknown, give no GPU-hours); ``hosts``: the
    host each description names (``attribution``)."""
    listed = list(attempts)
    hardware = attribute(listed, hosts)  # the one attribution compute and the page share
    total = LostGroup(None, None, None)
    nested = nested_attempts(listed)
    for attempt in listed:
        total.add(attempt, nested=id(attempt) in nested)
    ordered = _groups(listed, hardware, gpus or {})
    return LostSummary(ordered, total, _unattributed(listed, hardware),
                       sum(1 for a in listed if a.odd), len(nested))


def _unattributed(listed: list[Attempt], hardware: dict[int, str | None]) -> int:
    """The failed and killed attempts no hardware description could be given to."""
    return sum(1 for a in listed if a.state in _LOST and hardware[id(a)] is None)


def _groups(listed: list[Attempt], hardware: dict[int, str | None], counts: Mapping[str, int],
            ) -> list[LostGroup]:
    """The attempts by description and stage, in the order of their description's id."""
    groups: dict[tuple[str | None, str], LostGroup] = {}
    for attempt in listed:
        hardware_id = hardware[id(attempt)]
        key = (hardware_id, attempt.stage)
        group = groups.get(key)
        if group is None:
            gpu = counts.get(hardware_id) if hardware_id is not None else None
            group = groups[key] = LostGroup(hardware_id, attempt.stage, gpu)
        group.add(attempt)
    return sorted(groups.values(), key=lambda g: (g.hardware_id or "\uffff", g.stage or ""))


def gpu_hours_lost(summary: LostSummary) -> tuple[float, float | None] | None:
    """GPU-hours lost over the groups whose description has GPUs (counted, and at the
    upper ends); None when no group has GPUs."""
    with_gpus = [g for g in summary.groups if g.gpus]
    if not with_gpus:
        return None
    low = sum(g.gpu_hours(g.lost_total) or 0.0 for g in with_gpus)
    highs = [g.gpu_hours(g.lost_seconds_upper) for g in with_gpus]
    return low, _sum_known(highs)


def _sum_known(hours: list[float | None]) -> float | None:
    """The sum of ``hours``; None where any is unknown."""
    return None if any(h is None for h in hours) else sum(h or 0.0 for h in hours)
