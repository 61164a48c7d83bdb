"""How far a stage has come and how long it has to go, from its attempts alone.

Counts are per run (one seed: ``run_idx`` and ``label``; ranks above 0 are counted with
their rank 0): *done* (a finished attempt), *running*, *unknown* (its latest attempt's
state could not be decided), and *pending* (expected, neither done nor running nor
unknown: not started yet, or failed or killed and waiting for another attempt). *failed*
and *killed* count attempts.

The time to go is simulated (``simulations`` times, a fixed seed: the same attempts at
the same instant give the same answer):

1. durations are drawn from the Kaplan-Meier estimate of the finished attempts, with the
   running ones right-censored at their elapsed time and the failed and killed ones at
   theirs (:mod:`survival`);
2. each running attempt's remaining time is drawn given how long it has run;
3. the pending runs are scheduled on ``slots`` slots (the array's throttle, or the
   concurrency observed in the attempts), each starting as a slot frees;
4. each attempt fails at the observed rate (failed and killed ÷ ended; each simulation
   draws the rate from its Beta posterior, so the bound holds its doubt), partway through
   (a fraction drawn uniformly), and its run queues again.

The median and the 90th percentile of the simulated finish are the estimate.
"""

from __future__ import annotations

import datetime
import heapq
import random
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol, TypeGuard

import attrs

from stagetimer._analysis.attempts.scan import Attempt
from stagetimer._analysis.attempts.survival import Survival, kaplan_meier

__all__ = [
    "Durations",
    "Eta",
    "StageProgress",
    "at_instant",
    "observed_concurrency",
    "odd_value",
    "stage_progress",
    "suite_eta",
    "time_to_go",
]

#: simulations per estimate (the 90 % bound's draws)
SIMULATIONS = 400
#: at most this many draws per estimate (simulations x runs), never under the minimum
_WORK = 400_000
_MIN_SIMULATIONS = 40
#: the failure rate used is never above this (a stage that only fails has no end)
_MAX_FAILURE_RATE = 0.9
_SEED = 20260412
#: each simulation's resample holds this fraction of the observations (see ``time_to_go``)
_RESAMPLE = 0.6
#: up to this many observations, each resample holds all of them
_FULL_RESAMPLE = 20
_NEVER = datetime.datetime.min.replace(tzinfo=datetime.timezone.utc)
#: no writer's clock reads before this (a start in year 1 is no time a writer saw)
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
#: longer than any stage could run, and than any clock could be set ahead of the reader's
_CENTURY = datetime.timedelta(days=36525)


class Durations(Protocol):
    """What the simulation draws durations from (:class:`survival.Survival`)."""

    def draw(self, rng: random.Random, elapsed: float = 0.0) -> float:
        """One duration, given that it is longer than ``elapsed``."""
        ...


@attrs.frozen
class Eta:
    """Seconds to go: the median and the 90 % bound."""

    p50: float
    p90: float


@attrs.frozen
class StageProgress:
    """One stage of one directory, at one instant."""

    name: str
    done: int
    running: int
    failed: int
    killed: int
    unknown: int
    pending: int
    #: from the stage's first start to now (to its last end once nothing is left)
    elapsed_seconds: float
    #: None while nothing allows an estimate (no attempt has finished)
    eta: Eta | None
    #: the slots the pending runs were scheduled on
    slots: int
    #: the stage's first start (None where no attempt says when it started)
    first: datetime.datetime | None = attrs.field(default=None, eq=False, repr=False)
    #: the attempts left out of the estimates, one line each: values no writer could
    #: have written (see ``odd_value``)
    left_out: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        """Nothing left: no run running, unknown or pending."""
        return self.running == 0 and self.unknown == 0 and self.pending == 0


def odd_value(attempt: Attempt, now: datetime.datetime) -> str | None:
    """What in ``attempt`` no writer could have written, or None: a start before 1970 or
    a century past ``now`` (year 1, year 9999), a duration that is negative, not finite
    or longer than a century (``1e308``, ``10**400``), an end out of those bounds. Such an
    attempt is left out of the estimates (its run still counts as done, running or
    failed). The bounds are wide: a clock stepped back or a node's clock ahead of the
    reader's is no reason to leave a run out."""
    start = attempt.started_at
    if _impossible(start, now):
        return f"started_at {start.isoformat().replace('+00:00', 'Z')}"
    seconds = attempt.seconds
    if seconds is not None and not 0.0 <= seconds <= _CENTURY.total_seconds():  # NaN too
        return f"seconds {seconds:g}"
    end = next((e for e in attempt.ended_between or () if _impossible(e, now)), None)
    return None if end is None else f"an end at {end.isoformat().replace('+00:00', 'Z')}"


def _impossible(moment: datetime.datetime | None, now: datetime.datetime,
                ) -> TypeGuard[datetime.datetime]:
    """Whether ``moment`` is before 1970 or a century past ``now``."""
    return moment is not None and not _EPOCH <= moment <= now + _CENTURY


def _left_out(attempt: Attempt, why: str) -> str:
    run = "" if attempt.run_idx is None else f" run {attempt.run_idx}"
    who = attempt.attempt_id or "(no attempt id)"
    return (f"{attempt.stage}{run}: attempt {who} left out of the time to go: {why} is "
            "no value a writer could have written")


def _end(attempt: Attempt) -> datetime.datetime | None:
    """When the attempt ended (a killed one: the lower end of its interval); None while
    running or unknown, or where nothing bounds it."""
    if attempt.started_at is None:
        return None
    if attempt.seconds is not None:
        try:
            return attempt.started_at + datetime.timedelta(seconds=attempt.seconds)
        except OverflowError:  # past the year 9999: no end that a clock can show
            return None
    if attempt.ended_between is not None:
        return attempt.ended_between[0]
    return None


def _age(attempt: Attempt, now: datetime.datetime) -> float:
    if attempt.started_at is None:
        return 0.0
    return max(0.0, (now - attempt.started_at).total_seconds())


def _observation(attempt: Attempt, now: datetime.datetime) -> tuple[float, bool] | None:
    """``(seconds, ended)`` for Kaplan-Meier: finished attempts end; the others are
    censored at the time they ran (a killed one at its interval's lower end)."""
    state = attempt.state
    if state in ("finished", "failed") and attempt.seconds is not None:
        return attempt.seconds, state == "finished"
    if state == "running":
        return _age(attempt, now), False
    end = _end(attempt)  # None where the attempt has no start
    if state != "killed" or end is None or attempt.started_at is None:
        return None
    return max(0.0, (end - attempt.started_at).total_seconds()), False


def observed_concurrency(attempts: Iterable[Attempt], now: datetime.datetime) -> int:
    """The most attempts that ran at one instant (running ones up to now)."""
    edges: list[tuple[datetime.datetime, int]] = []
    for attempt in attempts:
        ran = _ran(attempt, now)
        if ran is not None:
            edges += [(ran[0], 1), (ran[1], -1)]
    edges.sort(key=lambda edge: (edge[0], edge[1]))  # an end before a start at one instant
    most = current = 0
    for _, step in edges:
        current += step
        most = max(most, current)
    return most


def _ran(attempt: Attempt, now: datetime.datetime,
         ) -> tuple[datetime.datetime, datetime.datetime] | None:
    """When the attempt started and ended (a running one: now); None where one is unknown
    or the end comes before the start."""
    start = attempt.started_at
    end = now if attempt.state == "running" else _end(attempt)
    if start is None or end is None or end < start:
        return None
    return start, end


def _runs(attempts: Sequence[Attempt]) -> dict[tuple[object, object], list[Attempt]]:
    runs: dict[tuple[object, object], list[Attempt]] = {}
    for attempt in attempts:
        if attempt.rank not in (None, 0):
            continue
        key = (attempt.run_idx, attempt.label) if attempt.run_idx is not None or \
            attempt.label is not None else (attempt.attempt_id, None)
        runs.setdefault(key, []).append(attempt)
    return runs


def stage_progress(
    name: str,
    attempts: Sequence[Attempt],
    now: datetime.datetime,
    *,
    expected: int | None = None,
    slots: int | None = None,
    simulations: int = SIMULATIONS,
) -> StageProgress:
    """The progress and time to go of one stage from its attempts (one directory's).

    ``expected``: the runs the stage should end with (default: the runs seen);
    ``slots``: how many may run at once (default: the concurrency observed, at least 1).
    """
    sound, odd, left_out = _sort_out(attempts, now)
    runs = _runs(attempts)
    done, running, unknown, running_ages = _count_runs(runs, now)
    total = len(runs) if expected is None else max(expected, 0)
    pending = max(total - done - running - unknown, 0)
    failed, killed = (sum(a.state == state for a in attempts) for state in ("failed", "killed"))
    slots = _slots(slots, sound, now, running)
    complete = running == 0 and unknown == 0 and pending == 0
    eta = Eta(0.0, 0.0) if complete else _simulated(
        attempts, sound, odd, now, running_ages, pending, slots, simulations)
    first = _first_start(sound)
    return StageProgress(
        name, done, running, failed, killed, unknown, pending,
        _elapsed(sound, first, now, complete), eta, slots, first, tuple(left_out),
    )


def _slots(slots: int | None, sound: Sequence[Attempt], now: datetime.datetime,
           running: int) -> int:
    """The slots given, else the concurrency observed (at least the runs running, and 1)."""
    if slots is None or slots < 1:
        return max(observed_concurrency(sound, now), running, 1)
    return slots


def _simulated(attempts: Sequence[Attempt], sound: Sequence[Attempt],
               odd: Sequence[Attempt], now: datetime.datetime, running_ages: list[float],
               pending: int, slots: int, simulations: int) -> Eta | None:
    """The time to go of a stage not complete (``time_to_go`` on its attempts)."""
    # a running attempt whose start is impossible counts as just started
    ended = [o for a in sound if (o := _observation(a, now)) is not None]
    ended += [(0.0, False) for a in odd if a.state == "running"]
    failures, ends = _failures(attempts)
    # fewer simulations where each is long (thousands of runs): a refresh stays short
    work = len(ended) + len(running_ages) + pending
    draws = max(_MIN_SIMULATIONS, min(simulations, _WORK // max(work, 1)))
    return time_to_go(ended, running_ages, pending, slots, (failures, ends),
                      simulations=draws)


def _failures(attempts: Sequence[Attempt]) -> tuple[int, int]:
    """The attempts that failed (or were killed), and those that ended, where attempts are
    tracked: a run saved with its ``attempt_id`` (runs from record_timing or older files
    say nothing of failures)."""
    failures = sum(a.state in ("failed", "killed") for a in attempts)
    return failures, failures + sum(a.state == "finished" and a.attempt_id is not None
                                    for a in attempts)


def _sort_out(attempts: Sequence[Attempt], now: datetime.datetime,
              ) -> tuple[list[Attempt], list[Attempt], list[str]]:
    """The attempts whose values are possible, the others, and why each other is left out."""
    sound: list[Attempt] = []
    odd: list[Attempt] = []
    left_out: list[str] = []
    for attempt in attempts:
        why = odd_value(attempt, now)
        if why is None:
            sound.append(attempt)
        else:
            odd.append(attempt)
            left_out.append(_left_out(attempt, why))
    return sound, odd, left_out


def _count_runs(runs: dict[tuple[object, object], list[Attempt]], now: datetime.datetime,
                ) -> tuple[int, int, int, list[float]]:
    """The runs done, running and unknown, and the age of each running one (its first
    running attempt's; 0 where that attempt's start is impossible)."""
    done = running = unknown = 0
    running_ages: list[float] = []
    for tries in runs.values():
        states = {a.state for a in tries}
        if "finished" in states:
            done += 1
        elif "running" in states:
            running += 1
            running_ages.append(_running_age(tries, now))
        elif max(tries, key=_start).state == "unknown":
            unknown += 1
    return done, running, unknown, running_ages


def _running_age(tries: list[Attempt], now: datetime.datetime) -> float:
    """A running run's age: its first running attempt's (0 where that attempt's start is
    impossible)."""
    first = next(a for a in tries if a.state == "running")
    return _age(first, now) if odd_value(first, now) is None else 0.0


def _start(attempt: Attempt) -> datetime.datetime:
    return attempt.started_at or _NEVER


def _first_start(attempts: Sequence[Attempt]) -> datetime.datetime | None:
    return min((a.started_at for a in attempts if a.started_at is not None), default=None)


def _elapsed(attempts: Sequence[Attempt], first: datetime.datetime | None,
             now: datetime.datetime, complete: bool) -> float:
    if first is None:
        return 0.0
    last = now
    if complete:
        ends = [end for a in attempts if (end := _end(a)) is not None]
        last = max(ends, default=now)
    return max(0.0, (last - first).total_seconds())


def _attempt(survival: Durations, rng: random.Random, rate: float, elapsed: float = 0.0,
             ) -> tuple[float, bool]:
    """One attempt's remaining seconds (given ``elapsed`` already run) and whether it fails."""
    remaining = survival.draw(rng, elapsed) - elapsed
    if rate and rng.random() < rate:
        return remaining * rng.random(), True
    return remaining, False


def _failure_rate(failures: tuple[int, int] | float, rng: random.Random) -> float:
    """One simulation's failure rate: a known rate as it is; from ``(failed, ended)``
    attempts, a draw from its Beta(failed + 1/2, ended - failed + 1/2) posterior, so that
    the bound holds the doubt about the rate too (no failure seen in 20 ends does not
    make failures impossible)."""
    if not isinstance(failures, tuple):
        return failures
    failed, ended = failures
    if not ended:
        return 0.0
    return min(rng.betavariate(failed + 0.5, max(ended - failed, 0) + 0.5), _MAX_FAILURE_RATE)


def time_to_go(
    observations: Sequence[tuple[float, bool]],
    running: Sequence[float],
    pending: int,
    slots: int,
    failures: tuple[int, int] | float = 0.0,
    *,
    simulations: int = SIMULATIONS,
    seed: int = _SEED,
    fit: Callable[[Sequence[tuple[float, bool]]], Durations | None] | None = None,
    resample: float = _RESAMPLE,
) -> Eta | None:
    """The median and 90th percentile of the simulated finish: the ``running`` attempts
    (their elapsed seconds) finish, then ``pending`` runs on ``slots`` slots, each
    attempt failing (and its run queued again) at a rate from ``failures`` (a known rate,
    or the ``(failed, ended)`` attempts seen); None when no observation has ended.

    Each simulation draws from the Kaplan-Meier estimate of a bootstrap resample of
    ``observations`` (``(seconds, ended)``), so that the bound holds the doubt about the
    durations as well as the luck of the draws to come:

    - the estimate is the predictive one (``kaplan_meier(..., predictive=True)``): a run
      to come is longer than every one seen with probability ``1 / (n + 1)``, so the last
      of many runs to come may straggle past the longest seen, as it does;
    - each resample holds 60 % as many observations as were made (at least 20, or all of
      them): the bootstrap of a few skewed durations (30 runs at 10 % done) shows the
      doubt about their mean too narrow, and a smaller resample widens it (about 1.3x);
      ``benchmarks/replay.py`` measures how often the bound then covers the finish.

    ``fit``: how observations become a distribution to draw from (default: the
    predictive Kaplan-Meier; the replay harness compares others); ``resample``: the
    fraction of the observations each resample holds. The resample is drawn
    from a generator seeded with a fixed seed: the same observations give the same answer."""
    fit = fit or _predictive
    # in one order whatever order the files were read in: the same answer for the same files
    observations = sorted(observations)
    running = sorted(running)
    whole = fit(observations)
    if whole is None:
        return None
    rng = random.Random(seed)
    finishes = []
    count = len(observations)
    # below 20 observations a resample is already as wide as the doubt: all of them
    size = max(round(count * resample), min(count, _FULL_RESAMPLE))
    for _ in range(simulations):
        failure_rate = _failure_rate(failures, rng)
        drawn = [observations[rng.randrange(count)] for _ in range(size)]
        survival = fit(drawn) or whole
        finishes.append(_finish(survival, rng, failure_rate, running, pending, slots))
    finishes.sort()
    return Eta(_quantile(finishes, 0.5), _quantile(finishes, 0.9))


def _finish(survival: Durations, rng: random.Random, failure_rate: float,
            running: Sequence[float], pending: int, slots: int) -> float:
    """One simulation's finish: the ``running`` attempts end, then the ``pending`` runs
    (and those queued again after a failure) each take the first free slot."""
    queue = pending
    free: list[float] = []
    for age in running:
        remaining, failed = _attempt(survival, rng, failure_rate, age)
        queue += failed
        free.append(remaining)
    free += [0.0] * max(slots - len(running), 0)
    if not free:
        free.append(0.0)
    heapq.heapify(free)
    while queue:
        start = heapq.heappop(free)
        remaining, failed = _attempt(survival, rng, failure_rate)
        queue += failed - 1
        heapq.heappush(free, start + remaining)
    return max(free)


def _predictive(observations: Sequence[tuple[float, bool]]) -> Survival | None:
    return kaplan_meier(observations, predictive=True)


def _quantile(ordered: Sequence[float], q: float) -> float:
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def suite_eta(stages: Iterable[StageProgress]) -> Eta | None:
    """The time to go of several stages: the sum of theirs (a seed runs its stages one
    after another; where they run side by side this is an upper bound). Zero when none
    has work left; None when one with work left has no estimate yet, or there is none."""
    p50 = p90 = 0.0
    count = 0
    for stage in stages:
        count += 1
        if stage.complete:
            continue
        if stage.eta is None:
            return None
        p50 += stage.eta.p50
        p90 += stage.eta.p90
    return Eta(p50, p90) if count else None


def at_instant(stage: StageProgress, now: datetime.datetime) -> StageProgress:
    """``stage`` as at ``now``, drawn from attempts none of which runs: the same counts and
    time to go, the elapsed time moved on while work is left (see ``StageProgress.first``)."""
    if stage.first is None or stage.complete:
        return stage
    elapsed = max(0.0, (now - stage.first).total_seconds())
    return StageProgress(stage.name, stage.done, stage.running, stage.failed, stage.killed,
                         stage.unknown, stage.pending, elapsed, stage.eta, stage.slots,
                         stage.first, stage.left_out)
