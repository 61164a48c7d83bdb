"""What to ask the scheduler for: a stage's ``--time`` and ``--mem`` so that a fraction Q
of its runs fit, from the runs recorded on one hardware description.

The time is a Kaplan-Meier quantile: an attempt killed (by the time limit, or where
the cause is not known) counts as *at least* the time it ran, never as its partial
time, so a history of time-outs asks for more than the old limit instead of less. A
quantile taken from n runs is itself uncertain, so the suggestion is the quantile at
the level Q raised by 1.28 standard errors of a proportion
(``Q + 1.28 sqrt(Q (1 - Q) / n)``, one-sided 90 %): with Q = 0.95 a new run exceeds it
less often than 1 in 20. That raise is the margin said beside the suggestion. Where the
runs do not reach that level (too few, or too many censored), the suggestion is the
longest seen plus half of it, and says so.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from stagetimer._analysis.attempts.scan import Attempt
from stagetimer._analysis.attempts.survival import kaplan_meier
from stagetimer._analysis.raw import raw_stages

if TYPE_CHECKING:
    from stagetimer._analysis.tree import Artifact

__all__ = ["Suggestion", "plan_from", "slurm_memory", "slurm_time", "suggest"]

#: one-sided 90 % normal quantile: the raise of the level
_Z90 = 1.2816
#: where the data do not reach the level: the longest seen times this
_UNREACHED = 1.5


@attrs.frozen
class Suggestion:
    """One stage on one hardware description."""

    stage: str
    hardware_id: str | None
    quantile: float
    #: runs that ended (finished) and runs that count as at least their time (censored)
    ended: int
    censored: int
    #: the plain quantile Q of the durations (None where the data do not reach it)
    quantile_seconds: float | None
    #: what to ask for
    time_seconds: float
    #: the level the suggestion was read at (Q plus the margin), None where unreached
    level: float | None
    memory_bytes: int | None
    memory_quantile_bytes: int | None
    #: runs with a memory peak recorded
    memory_runs: int

    def margin(self) -> str:
        """One line: how the suggestion was reached."""
        if self.level is None:
            return (f"{self.ended} finished and {self.censored} at least their time do not "
                    f"reach the {self.quantile:.0%} level: the longest seen plus half")
        plain = "" if self.quantile_seconds is None else \
            f", {self.time_seconds / self.quantile_seconds - 1:+.0%} over the plain quantile"
        return (f"read at the {self.level:.1%} level from {self.ended} finished and "
                f"{self.censored} censored runs (90 % confident that {self.quantile:.0%} "
                f"fit){plain}")


def _level(quantile: float, count: int) -> float:
    return quantile + _Z90 * math.sqrt(quantile * (1.0 - quantile) / max(count, 1))


def _km_quantile(observations: Sequence[tuple[float, bool]], level: float) -> float | None:
    survival = kaplan_meier(observations)
    if survival is None or level >= 1.0:
        return None
    for time, left in zip(survival.times, survival.levels, strict=True):
        if left <= 1.0 - level + 1e-12:
            return time
    return None


def _order_quantile(values: Sequence[int], level: float) -> int | None:
    if not values or level >= 1.0:
        return None
    ordered = sorted(values)
    return ordered[min(math.ceil(level * len(ordered)) - 1, len(ordered) - 1)]


def suggest(
    stage: str,
    hardware_id: str | None,
    durations: Sequence[tuple[float, bool]],
    memory_peaks: Sequence[int],
    quantile: float = 0.95,
) -> Suggestion | None:
    """The suggestion from ``durations`` (``(seconds, ended)``: ended False for at least
    that long) and memory peaks in bytes; None without any ended duration."""
    if not 0.0 < quantile < 1.0:
        raise ValueError(f"quantile {quantile!r} is not valid: expected a number in (0, 1)")
    ended = sum(1 for _, e in durations if e)
    if not ended:
        return None
    level = _level(quantile, len(durations))
    seconds = _km_quantile(durations, level)
    plain = _km_quantile(durations, quantile)
    reached: float | None = level
    if seconds is None:
        seconds = _UNREACHED * max(s for s, _ in durations)
        reached = None
    memory, memory_quantile = _memory(memory_peaks, quantile)
    return Suggestion(
        stage, hardware_id, quantile, ended, len(durations) - ended, plain, seconds, reached,
        memory, memory_quantile, len(memory_peaks),
    )


def _memory(memory_peaks: Sequence[int], quantile: float) -> tuple[int | None, int | None]:
    """The memory to ask for (the quantile's upper bound, as for time) and the plain
    quantile of ``memory_peaks``; None, None without any."""
    if not memory_peaks:
        return None, None
    memory = _order_quantile(memory_peaks, _level(quantile, len(memory_peaks)))
    if memory is None:
        memory = math.ceil(_UNREACHED * max(memory_peaks))
    return memory, _order_quantile(memory_peaks, quantile)


def slurm_time(seconds: float) -> str:
    """``--time`` in Slurm's ``D-HH:MM:SS`` (rounded up to the minute)."""
    minutes = max(1, math.ceil(seconds / 60.0))
    days, rest = divmod(minutes, 24 * 60)
    hours, minutes = divmod(rest, 60)
    return f"{days}-{hours:02d}:{minutes:02d}:00" if days else f"{hours:02d}:{minutes:02d}:00"


def slurm_memory(size: int) -> str:
    """``--mem`` in whole MiB (``M``) or GiB (``G``) from 10 GiB up, rounded up."""
    mib = max(1, math.ceil(size / 2**20))
    if mib >= 10 * 1024:
        return f"{math.ceil(mib / 1024)}G"
    return f"{mib}M"


_Key = tuple[str | None, str]


def _censored(attempt: Attempt) -> float | None:
    """The seconds a killed attempt counts as at least: from its start to the lower end
    of when it ended (a time limit's kill: at least the limit; where the reader could not
    tell the cause, the same: it ran at least that long). None for the others."""
    if attempt.state != "killed" or not attempt.ended_between:
        return None
    low = attempt.ended_between[0]
    if low is None or attempt.started_at is None:
        return None
    return max(0.0, (low - attempt.started_at).total_seconds())


def _runs_by_key(artifacts: list[Artifact],
                 ) -> tuple[dict[_Key, list[tuple[float, bool]]], dict[_Key, list[int]]]:
    """The durations (each ended) and the memory peaks of the runs, by (hardware, stage)."""
    durations: dict[_Key, list[tuple[float, bool]]] = {}
    memory: dict[_Key, list[int]] = {}
    for artifact in artifacts:
        for name, stage in raw_stages(artifact.data):
            for run in stage["runs"]:
                key = (run.get("hardware_id"), name)
                durations.setdefault(key, []).append((float(run["seconds"]), True))
                peak = _memory_peak(run)
                if peak is not None:
                    memory.setdefault(key, []).append(peak)
    return durations, memory


def _memory_peak(run: dict[str, Any]) -> int | None:
    """A stored run's memory peak in bytes, where it recorded one (a count above 0)."""
    peak = (run.get("resources") or {}).get("memory_peak_bytes")
    return peak if type(peak) is int and peak > 0 else None


def _machines(artifacts: list[Artifact]) -> dict[tuple[str, str], set[str | None]]:
    """The hardware each stage's runs ran on, by (real directory, stage): a marker written
    before the hardware was known ran on it, where its runs all ran on one."""
    machines: dict[tuple[str, str], set[str | None]] = {}
    for artifact in artifacts:
        real = os.path.realpath(artifact.path)
        for name, stage in raw_stages(artifact.data):
            machines.setdefault((real, name), set()).update(
                run.get("hardware_id") for run in stage["runs"]
            )
    return machines


def _hardware_of(attempt: Attempt, machines: dict[tuple[str, str], set[str | None]],
                 ) -> str | None:
    """The hardware ``attempt`` ran on: its own, else the one its stage's runs all ran on."""
    if attempt.hardware_id is not None:
        return attempt.hardware_id
    ids = machines.get((os.path.realpath(attempt.directory), attempt.stage), set())
    return next(iter(ids)) if len(ids) == 1 else None


def plan_from(
    artifacts: Iterable[Artifact], attempts: Iterable[Attempt] = (), quantile: float = 0.95
) -> list[Suggestion]:
    """One suggestion per (hardware_id, stage) of the runs in ``artifacts``, with the
    ``attempts`` killed by the time limit counted as at least the time they ran."""
    artifacts_read = list(artifacts)
    durations, memory = _runs_by_key(artifacts_read)
    machines = _machines(artifacts_read)
    for attempt in attempts:
        seconds = _censored(attempt)
        if seconds is None:
            continue
        key = (_hardware_of(attempt, machines), attempt.stage)
        durations.setdefault(key, []).append((seconds, False))
    found = []
    for key in sorted(durations, key=lambda k: (k[0] or "", k[1])):
        suggestion = suggest(key[1], key[0], durations[key], memory.get(key, []), quantile)
        if suggestion is not None:
            found.append(suggestion)
    return found
