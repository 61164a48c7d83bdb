"""How right is the time to go? Synthetic job arrays replayed, the estimate taken part way.

Run:  python benchmarks/replay.py              (400 replays; prints the table)
      python benchmarks/replay.py --replays 50

Each replay is one job array: ``tasks`` tasks on ``throttle`` slots (Slurm's ``%N``),
durations log-normal (median 1 h, sigma 0.6: the slowest task of 200 takes about 5x the
median), each attempt failing with probability ``failure_rate`` part way through (a
uniform fraction of what it would have taken) and requeued at the end of the queue.
When 10 %, 25 % and 50 % of the tasks are done, the attempts as they stand then
(finished with their seconds, failed with theirs, running with their start) go to the
estimator; the true time to go is the replay's last finish minus that instant. The
rate-based estimate (tqdm's: runs left ÷ runs done per second so far) is taken at the
same instants from the finished runs alone.

Figures per checkpoint: the median over replays of |estimate - truth| / truth for our
median and for the rate-based estimate, their ratio, and how often the truth is at or
below our 90 % bound.
"""

from __future__ import annotations

import argparse
import datetime
import heapq
import random
import statistics
import sys
from collections.abc import Sequence

import attrs

from stagetimer._analysis.attempts import Attempt
from stagetimer._analysis.eta import stage_progress, time_to_go

__all__ = ["Checkpoint", "replay", "summary"]

T0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
CHECKPOINTS = (0.10, 0.25, 0.50)


@attrs.frozen
class Checkpoint:
    fraction: float
    truth: float
    p50: float
    p90: float
    rate_based: float
    #: the same simulation told the true durations (thousands of draws) and failure rate:
    #: the error no estimator from these files can beat on average
    oracle: float


@attrs.frozen
class _Try:
    task: int
    start: float
    end: float
    failed: bool


def _array(rng: random.Random, tasks: int, throttle: int, failure_rate: float,
           sigma: float) -> list[_Try]:
    """Every attempt of one replayed array, scheduled on ``throttle`` slots."""
    queue = list(range(tasks))
    slots = [0.0] * throttle
    tries: list[_Try] = []
    while queue:
        start = heapq.heappop(slots)
        task = queue.pop(0)
        seconds = 3600.0 * rng.lognormvariate(0.0, sigma)
        failed = rng.random() < failure_rate
        if failed:
            seconds *= rng.random()
            queue.append(task)
        tries.append(_Try(task, start, start + seconds, failed))
        heapq.heappush(slots, start + seconds)
    return tries


def _attempt(t: _Try, now: float) -> Attempt:
    started = T0 + datetime.timedelta(seconds=t.start)
    if t.end > now:
        state, seconds = "running", None
    else:
        state, seconds = ("failed" if t.failed else "finished"), t.end - t.start
    return Attempt(
        attempt_id=f"{id(t):032x}", directory="replay", stage="train", run_idx=t.task,
        label=None, rank=None, started_at=started, state=state,  # type: ignore[arg-type]
        cause="raised" if state == "failed" else None, exception=None, seconds=seconds,
        ended_between=None, evidence="replay",
    )


def replay(seed: int, *, tasks: int = 200, throttle: int = 8, failure_rate: float = 0.05,
           sigma: float = 0.6, simulations: int = 400) -> list[Checkpoint]:
    """One array replayed; the estimates at each of ``CHECKPOINTS``."""
    rng = random.Random(seed)
    tries = _array(rng, tasks, throttle, failure_rate, sigma)
    truth_rng = random.Random(-seed - 1)
    known = [(3600.0 * truth_rng.lognormvariate(0.0, sigma), True) for _ in range(2000)]
    finish = max(t.end for t in tries)
    ends = sorted(t.end for t in tries if not t.failed)
    points = []
    for fraction in CHECKPOINTS:
        done = max(1, round(fraction * tasks))
        now = ends[done - 1]
        attempts = [_attempt(t, now) for t in tries if t.start <= now]
        progress = stage_progress("train", attempts, T0 + datetime.timedelta(seconds=now),
                                  expected=tasks, slots=throttle, simulations=simulations)
        assert progress.eta is not None and progress.done == done
        rate_based = (tasks - done) * now / done
        ages = [now - t.start for t in tries if t.start <= now < t.end]
        oracle = time_to_go(known, ages, progress.pending, throttle, failure_rate,
                            simulations=40)
        assert oracle is not None
        points.append(Checkpoint(fraction, finish - now, progress.eta.p50, progress.eta.p90,
                                 rate_based, oracle.p50))
    return points


@attrs.frozen
class Row:
    fraction: float
    error: float
    rate_error: float
    coverage: float
    oracle_error: float

    @property
    def gain(self) -> float:
        return self.rate_error / self.error if self.error else float("inf")


def summary(replays: Sequence[Sequence[Checkpoint]]) -> list[Row]:
    rows = []
    for i, fraction in enumerate(CHECKPOINTS):
        points = [r[i] for r in replays]
        rows.append(Row(
            fraction,
            statistics.median(abs(p.p50 - p.truth) / p.truth for p in points),
            statistics.median(abs(p.rate_based - p.truth) / p.truth for p in points),
            sum(p.truth <= p.p90 for p in points) / len(points),
            statistics.median(abs(p.oracle - p.truth) / p.truth for p in points),
        ))
    return rows


def figures(replays: int) -> list[tuple[str, str, str, bool]]:
    """Rows for ``benchmarks/run.py``: one per checkpoint."""
    rows = summary([replay(seed) for seed in range(replays)])
    return [
        (f"time to go at {row.fraction:.0%} done ({replays} replays)",
         f"median error {row.error:.1%} (rate-based {row.rate_error:.1%}, "
         f"{row.gain:.1f}x, oracle {row.oracle_error:.1%}); p90 covers {row.coverage:.0%}",
         "<= 10 %, >= 2x, >= 85 %",
         row.error <= 0.10 and row.gain >= 2.0 and row.coverage >= 0.85)
        for row in rows
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replays", type=int, default=400)
    args = parser.parse_args()
    ok = True
    print("| done | median error, ours | rate-based | ratio | p90 covers | oracle |")
    print("|------|-------------------|------------|-------|------------|--------|")
    for row in summary([replay(seed) for seed in range(args.replays)]):
        ok &= row.error <= 0.10 and row.gain >= 2.0 and row.coverage >= 0.85
        print(f"| {row.fraction:.0%} | {row.error:.1%} | {row.rate_error:.1%} | "
              f"{row.gain:.1f}x | {row.coverage:.0%} | {row.oracle_error:.1%} |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
