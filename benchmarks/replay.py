"""How right is the time to go? Synthetic job arrays replayed, the estimate taken part way.

Run:  python benchmarks/replay.py              (400 replays of each workload; the tables)
      python benchmarks/replay.py --replays 50

Two workloads: attempts failing with probability 5 % and none failing.

Each replay is one job array: ``tasks`` tasks on ``throttle`` slots (Slurm's ``%N``),
durations log-normal (median 1 h, sigma 0.6: the slowest task of 200 takes about 5x the
median), each attempt failing with probability ``failure_rate`` part way through (a
uniform fraction of what it would have taken) and requeued at the end of the queue.
When 10 %, 25 % and 50 % of the tasks are done, the attempts as they stand then
(finished with their seconds, failed with theirs, running with their start) go to the
estimator; the true time to go is the replay's last finish minus that instant. The
rate-based estimate (tqdm's: runs left ÷ runs done per second so far) is taken at the
same instants from the finished runs alone.

Two references frame the figures:

- *informed*: the same simulation over the same attempts, told only that durations are
  log-normal (its two parameters fitted to the attempts by maximum likelihood, running
  and failed ones censored, each simulation from a plain bootstrap resample of them: the
  reference as it was before ours drew smaller resamples to widen its bound). Told the
  true family, this is about the best any estimate from these files can do: where ours
  is level with it, what is left is what the files cannot tell.
- *oracle*: the same simulation told the true distribution and failure rate, which the
  files never reveal: the error left by the luck of the runs still to come alone.

Figures per checkpoint: the median over replays of |estimate - truth| / truth for our
median, the rate-based estimate, their ratio, the informed and oracle estimates, and how
often the truth is at or below our 90 % bound.
"""

from __future__ import annotations

import argparse
import datetime
import heapq
import math
import random
import statistics
import sys
from collections.abc import Sequence

import attrs

from stagetimer._analysis.attempts.scan import Attempt
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
    #: the same simulation over the same attempts, told that durations are log-normal
    informed: float
    #: the same simulation told the true durations (thousands of draws) and failure rate
    oracle: float


@attrs.frozen
class LogNormal:
    """A log-normal distribution: ``mu`` and ``sigma`` of the log of the seconds."""

    mu: float
    sigma: float

    def draw(self, rng: random.Random, elapsed: float = 0.0) -> float:
        """One duration given that it is longer than ``elapsed`` (by inversion)."""
        law = statistics.NormalDist(self.mu, self.sigma)
        below = law.cdf(math.log(elapsed)) if elapsed > 0 else 0.0
        u = min(max(below + (1.0 - below) * rng.random(), 1e-12), 1.0 - 1e-12)
        return max(math.exp(law.inv_cdf(u)), elapsed)


def lognormal_fit(observations: Sequence[tuple[float, bool]]) -> LogNormal | None:
    """Maximum likelihood with right-censoring (``ended`` False), by expectation-
    maximisation on the logs; None when nothing ended."""
    logs = [(math.log(max(s, 1e-6)), ended) for s, ended in observations]
    ended = [y for y, e in logs if e]
    if not ended:
        return None
    mu = statistics.fmean(ended)
    sigma = max(statistics.pstdev(ended), 0.05)
    for _ in range(200):
        first = second = 0.0
        for y, e in logs:
            if e:
                first, second = first + y, second + y * y
                continue
            # a censored log: its expectations given that it is above y
            a = (y - mu) / sigma
            tail = 0.5 * math.erfc(a / math.sqrt(2.0))
            hazard = math.exp(-a * a / 2.0) / math.sqrt(2.0 * math.pi) / tail if tail > 1e-300 \
                else a
            first += mu + sigma * hazard
            second += mu * mu + sigma * sigma + sigma * hazard * (y + mu)
        new_mu = first / len(logs)
        new_sigma = math.sqrt(max(second / len(logs) - new_mu * new_mu, 1e-6))
        done = abs(new_mu - mu) < 1e-9 and abs(new_sigma - sigma) < 1e-9
        mu, sigma = new_mu, new_sigma
        if done:
            break
    return LogNormal(mu, sigma)


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
        seen = [(min(t.end, now) - t.start, t.end <= now and not t.failed)
                for t in tries if t.start <= now]
        failures = (sum(t.failed and t.end <= now for t in tries),
                    sum(t.end <= now for t in tries))
        informed = time_to_go(seen, ages, progress.pending, throttle, failures,
                              simulations=simulations, fit=lognormal_fit, resample=1.0)
        oracle = time_to_go(known, ages, progress.pending, throttle, failure_rate,
                            simulations=40)
        assert informed is not None and oracle is not None
        points.append(Checkpoint(fraction, finish - now, progress.eta.p50, progress.eta.p90,
                                 rate_based, informed.p50, oracle.p50))
    return points


@attrs.frozen
class Row:
    fraction: float
    error: float
    rate_error: float
    coverage: float
    informed_error: float
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
            statistics.median(abs(p.informed - p.truth) / p.truth for p in points),
            statistics.median(abs(p.oracle - p.truth) / p.truth for p in points),
        ))
    return rows


#: the workloads: the probability that an attempt fails
WORKLOADS = (0.05, 0.0)
#: the goals: the 90 % bound covers at least this fraction of finishes, and the median's
#: error is at most this multiple of the informed reference's
COVERAGE = 0.85
AS_INFORMED = 1.1


def _met(row: Row) -> bool:
    return row.coverage >= COVERAGE and row.error <= AS_INFORMED * row.informed_error


def figures(replays: int) -> list[tuple[str, str, str, bool]]:
    """Rows for ``benchmarks/run.py``: one per workload and checkpoint."""
    out = []
    for failure_rate in WORKLOADS:
        rows = summary([replay(seed, failure_rate=failure_rate) for seed in range(replays)])
        out += [
            (f"time to go at {row.fraction:.0%} done, {failure_rate:.0%} failing "
             f"({replays} replays)",
             f"median error {row.error:.1%} (informed {row.informed_error:.1%}, "
             f"{row.error / row.informed_error:.2f}x; rate-based {row.rate_error:.1%}, "
             f"oracle {row.oracle_error:.1%}); p90 covers {row.coverage:.0%}",
             f"<= {AS_INFORMED:g}x informed, >= {COVERAGE:.0%}", _met(row))
            for row in rows
        ]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replays", type=int, default=400)
    args = parser.parse_args()
    ok = True
    for failure_rate in WORKLOADS:
        print(f"\nattempts failing: {failure_rate:.0%}")
        print("| done | median error, ours | informed | ours / informed | p90 covers | "
              "rate-based | oracle |")
        print("|------|-------------------|----------|-----------------|------------|"
              "------------|--------|")
        rows = summary([replay(seed, failure_rate=failure_rate)
                        for seed in range(args.replays)])
        for row in rows:
            ok &= _met(row)
            print(f"| {row.fraction:.0%} | {row.error:.1%} | {row.informed_error:.1%} | "
                  f"{row.error / row.informed_error:.2f}x | {row.coverage:.0%} | "
                  f"{row.rate_error:.1%} | {row.oracle_error:.1%} |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
