"""The time to go: Kaplan-Meier with censoring, the conditional remaining time, slots,
failures, the counts, and the replay harness at a small size."""

from __future__ import annotations

import datetime
import math
import random
import statistics
import sys
from pathlib import Path

import pytest
import scipy.stats

from stagetimer._analysis.attempts.scan import Attempt
from stagetimer._analysis.attempts.survival import kaplan_meier
from stagetimer._analysis.eta import (
    observed_concurrency,
    stage_progress,
    suite_eta,
    time_to_go,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import replay  # benchmarks/ is no package; the harness lives there

NOW = datetime.datetime(2026, 6, 1, 12, 0, tzinfo=datetime.timezone.utc)


def attempt(run_idx: int | None, state: str, *, started: float, seconds: float | None = None,
            stage: str = "train", rank: int | None = None, ended: float | None = None,
            label: str | None = None) -> Attempt:
    """An attempt that started ``started`` seconds before NOW."""
    start = NOW - datetime.timedelta(seconds=started)
    between = None
    if ended is not None:
        end = start + datetime.timedelta(seconds=ended)
        between = (end, end + datetime.timedelta(seconds=30))
    return Attempt(
        attempt_id=f"{random.getrandbits(128):032x}", directory="d", stage=stage,
        run_idx=run_idx, label=label, rank=rank, started_at=start, state=state,  # type: ignore[arg-type]
        cause={"failed": "raised", "killed": "killed"}.get(state),  # type: ignore[arg-type]
        exception=None, seconds=seconds, ended_between=between, evidence="test",
    )


def test_kaplan_meier_matches_scipy_on_censored_data() -> None:
    rng = random.Random(3)
    data = [(round(rng.lognormvariate(0, 0.7), 2), rng.random() < 0.6) for _ in range(80)]
    ours = kaplan_meier(data)
    assert ours is not None
    censored = scipy.stats.CensoredData(
        uncensored=[s for s, e in data if e], right=[s for s, e in data if not e]
    )
    theirs = scipy.stats.ecdf(censored).sf
    for t in [*ours.times, 0.1, 0.5, 1.0, 2.0, 5.0]:
        assert ours.survival(t) == pytest.approx(float(theirs.evaluate(t)), abs=1e-12)


def test_no_ended_observation_gives_no_estimate() -> None:
    assert kaplan_meier([(10.0, False), (20.0, False)]) is None
    progress = stage_progress("train", [attempt(0, "running", started=50)], NOW, expected=4)
    assert progress.eta is None
    assert suite_eta([progress]) is None


def test_a_draw_given_elapsed_is_longer_than_elapsed() -> None:
    survival = kaplan_meier([(float(s), True) for s in range(1, 101)])
    assert survival is not None
    rng = random.Random(0)
    draws = [survival.draw(rng, 80.0) for _ in range(2000)]
    assert min(draws) > 80.0
    # given 80 s run, the remaining durations are those of 81..100: median about 90
    assert 87 <= statistics.median(draws) <= 93
    # past the longest seen, the tail goes on (never capped at the longest run)
    beyond = [survival.draw(rng, 150.0) for _ in range(200)]
    assert min(beyond) > 150.0 and max(beyond) > 160.0


def test_running_attempts_raise_the_estimate_over_finished_ones_alone() -> None:
    """The fast seeds finish first: 4 finished in about 100 s while 4 have run 400 s.
    Censoring them at 400 s must give a longer time to go than the finished alone."""
    finished = [attempt(i, "finished", started=500, seconds=100 + i) for i in range(4)]
    running = [attempt(4 + i, "running", started=400) for i in range(4)]
    with_running = stage_progress("train", finished + running, NOW, expected=16, slots=4)
    only_finished = time_to_go([(100.0 + i, True) for i in range(4)], [], 12, 4)
    assert with_running.eta is not None and only_finished is not None
    assert with_running.eta.p50 > 2 * only_finished.p50


def test_the_same_attempts_give_the_same_answer() -> None:
    attempts = [attempt(i, "finished", started=900, seconds=60 + 7 * i) for i in range(10)]
    attempts += [attempt(10 + i, "running", started=30 * i) for i in range(3)]
    first = stage_progress("train", attempts, NOW, expected=30)
    again = stage_progress("train", list(reversed(attempts)), NOW, expected=30)
    assert first == again and first.eta is not None
    assert first.eta.p50 <= first.eta.p90


def test_fewer_slots_take_longer_in_proportion() -> None:
    observations = [(100.0, True)] * 20
    eight = time_to_go(observations, [], 64, 8)
    two = time_to_go(observations, [], 64, 2)
    assert eight is not None and two is not None
    assert two.p50 == pytest.approx(4 * eight.p50, rel=0.05)
    assert eight.p50 == pytest.approx(800.0, rel=0.05)


def test_failures_at_their_observed_rate_lengthen_the_estimate() -> None:
    finished = [attempt(i, "finished", started=1000, seconds=100) for i in range(10)]
    clean = stage_progress("train", finished, NOW, expected=40, slots=4)
    failing = finished + [attempt(20 + i, "failed", started=900, seconds=50) for i in range(10)]
    failed = stage_progress("train", failing, NOW, expected=40, slots=4)
    assert clean.eta is not None and failed.eta is not None
    assert failed.failed == 10
    assert failed.eta.p50 > 1.3 * clean.eta.p50


def test_counts_per_run_with_requeues_ranks_and_unknowns() -> None:
    attempts = [
        attempt(0, "finished", started=500, seconds=100),
        attempt(1, "killed", started=500, ended=50),      # killed, then requeued and done
        attempt(1, "finished", started=300, seconds=100),
        attempt(2, "failed", started=400, seconds=20),    # failed, waiting for a retry
        attempt(3, "running", started=100),
        attempt(3, "running", started=100, rank=1),       # a rank of the same seed
        attempt(4, "unknown", started=100),
    ]
    progress = stage_progress("train", attempts, NOW, expected=8)
    assert (progress.done, progress.running, progress.failed, progress.killed,
            progress.unknown, progress.pending) == (2, 1, 1, 1, 1, 4)
    assert progress.elapsed_seconds == 500
    assert not progress.complete


def test_complete_stage_is_done_and_elapsed_ends_at_its_last_end() -> None:
    attempts = [attempt(i, "finished", started=1000 - 100 * i, seconds=100) for i in range(3)]
    progress = stage_progress("train", attempts, NOW, expected=3)
    assert progress.complete and progress.eta is not None and progress.eta.p90 == 0.0
    assert progress.elapsed_seconds == 300


def test_a_clock_stepped_back_gives_no_negative_time() -> None:
    future = [attempt(0, "running", started=-600), attempt(1, "finished", started=-900,
                                                            seconds=100)]
    progress = stage_progress("train", future, NOW, expected=3)
    assert progress.elapsed_seconds == 0.0
    assert progress.eta is not None and progress.eta.p50 >= 0.0


def test_observed_concurrency() -> None:
    attempts = [attempt(i, "finished", started=1000 - 50 * i, seconds=120) for i in range(6)]
    assert observed_concurrency(attempts, NOW) == 3
    progress = stage_progress("train", attempts, NOW, expected=12)
    assert progress.slots == 3


@pytest.mark.slow
def test_replays_at_a_small_size_keep_the_estimate_honest() -> None:
    """The benchmark's harness, 12 replays: the median estimate within 15 % of the
    truth at half done and the 90 % bound covering most finishes (the full size is in
    benchmarks/replay.py: its goals are 10 % and 85 %)."""
    runs = [replay.replay(seed, simulations=100) for seed in range(12)]
    rows = replay.summary(runs)
    assert rows[-1].error <= 0.15
    covered = sum(p.truth <= p.p90 for r in runs for p in r) / (3 * len(runs))
    assert covered >= 0.7
    # the estimate is not biased: about as many replays over as under at half done
    over = sum(r[-1].p50 > r[-1].truth for r in runs)
    assert 2 <= over <= 10


def test_the_replays_informed_reference_is_scipys_censored_maximum_likelihood() -> None:
    """The harness's *informed* reference fits a log-normal to censored durations; its
    parameters are scipy's maximum-likelihood fit of the same censored logs."""
    rng = random.Random(11)
    data = []
    for _ in range(60):
        seconds = rng.lognormvariate(1.0, 0.6)
        cut = rng.uniform(0.5, 6.0)
        data.append((min(seconds, cut), seconds <= cut))
    fitted = replay.lognormal_fit(data)
    assert fitted is not None
    logs = [math.log(s) for s, _ in data]
    censored = scipy.stats.CensoredData.right_censored(logs, [not e for _, e in data])
    mu, sigma = scipy.stats.norm.fit(censored)
    assert fitted.mu == pytest.approx(mu, abs=1e-4)
    assert fitted.sigma == pytest.approx(sigma, abs=1e-4)
    assert replay.lognormal_fit([(3.0, False)]) is None
    # a draw given an elapsed time is never below it
    assert all(fitted.draw(rng, 20.0) >= 20.0 for _ in range(200))


def test_the_bound_holds_the_doubt_about_a_failure_rate_seen_on_few_attempts() -> None:
    """No failure in 10 ends does not make failures impossible: the 90 % bound from the
    counts is above the one from a known rate of 0, and the median hardly moves; many
    ends with the same rate narrow the doubt to the known rate's answer."""
    observations = [(100.0 + 5 * i, True) for i in range(10)]
    known = time_to_go(observations, [], 40, 4, 0.0)
    counted = time_to_go(observations, [], 40, 4, (0, 10))
    assert known is not None and counted is not None
    assert counted.p90 > known.p90 * 1.02
    assert counted.p50 == pytest.approx(known.p50, rel=0.1)
    sure = time_to_go(observations, [], 40, 4, (2_000, 40_000))
    at_rate = time_to_go(observations, [], 40, 4, 0.05)
    assert sure is not None and at_rate is not None
    assert sure.p90 == pytest.approx(at_rate.p90, rel=0.03)


def test_the_last_of_many_runs_to_come_may_be_longer_than_any_seen() -> None:
    # 20 runs of 1-2 s, 20 more to come side by side: the longest of 40 is a new one in
    # half the cases, so the bound must reach past 2 s (a draw from the plain estimate
    # never does: it ends at 0 after the longest run seen).
    rng = random.Random(5)
    seen = [(1.0 + rng.random(), True) for _ in range(20)]
    eta = time_to_go(seen, [], 20, 20)
    assert eta is not None
    assert eta.p90 > max(s for s, _ in seen)


def test_the_predictive_estimate_keeps_one_in_n_plus_one_past_the_longest() -> None:
    seen = [(float(s), True) for s in range(1, 10)]
    plain = kaplan_meier(seen)
    new = kaplan_meier(seen, predictive=True)
    assert plain is not None and new is not None
    assert plain.levels[-1] == 0.0
    assert new.levels[-1] == pytest.approx(1 / 10)
    assert new.levels[:-1] == plain.levels[:-1]


ODD = [
    ("seconds", float("inf")),
    ("seconds", 1e308),
    ("seconds", -5.0),
    ("seconds", float("nan")),
    ("started_at", datetime.datetime(1, 1, 1, tzinfo=datetime.timezone.utc)),
    ("started_at", datetime.datetime(9999, 12, 31, tzinfo=datetime.timezone.utc)),
]


@pytest.mark.parametrize("state", ["finished", "failed"])
@pytest.mark.parametrize(("key", "value"), ODD)
def test_a_value_no_writer_could_write_is_left_out_of_the_estimate_and_said(
    state: str, key: str, value: object
) -> None:
    import attrs

    sound = [attempt(i, "finished", started=900 - 60 * i, seconds=50.0 + i) for i in range(5)]
    sound.append(attempt(5, "running", started=30))
    odd = attrs.evolve(attempt(9, state, started=500, seconds=40.0), **{key: value})

    with_odd = stage_progress("train", [*sound, odd], NOW, expected=12)
    # the same run counted, nothing of its times used
    blank = attrs.evolve(odd, seconds=None, started_at=None)
    without = stage_progress("train", [*sound, blank], NOW, expected=12)

    assert with_odd.eta == without.eta
    assert with_odd.elapsed_seconds == without.elapsed_seconds
    assert (with_odd.done, with_odd.failed) == (without.done, without.failed)
    assert not without.left_out
    [said] = with_odd.left_out
    assert odd.attempt_id in said and key in said


@pytest.mark.parametrize("start", [datetime.datetime(1, 1, 1, tzinfo=datetime.timezone.utc),
                                   datetime.datetime(9999, 1, 1, tzinfo=datetime.timezone.utc)])
def test_a_running_attempt_with_an_impossible_start_counts_as_just_started(
    start: datetime.datetime,
) -> None:
    import attrs

    finished = [attempt(i, "finished", started=900 - 60 * i, seconds=50.0 + i) for i in range(5)]
    odd = attrs.evolve(attempt(5, "running", started=0), started_at=start)
    progress = stage_progress("train", [*finished, odd], NOW, expected=6)
    fresh = stage_progress("train", [*finished, attempt(5, "running", started=0)], NOW,
                           expected=6)
    assert progress.running == 1 and progress.left_out
    assert progress.eta == fresh.eta
    assert progress.eta is not None and math.isfinite(progress.eta.p90)
