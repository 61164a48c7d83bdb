"""The change-point benchmark's harness (benchmarks/bench_history.py): its scoring, its corpus
and its recorded series, on a tiny corpus, so that the table in docs/benchmarks.md cannot
rot. The anchors are not needed: their rows say "not installed" without them."""

from __future__ import annotations

import itertools
import math
import statistics
import sys
from dataclasses import astuple
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import bench_history as bench  # benchmarks/ is no package; the harness lives there


def test_a_change_is_found_within_one_point_and_each_true_change_once() -> None:
    assert [True] == bench.match([10], [11])
    assert [True] == bench.match([10], [9])
    assert [False] == bench.match([10], [12])
    # two detections beside one change find it once; the nearer one is used
    assert [True, False] == bench.match([10, 30], [10, 11, 28])
    # one detection between two close changes finds only one of them
    assert [True, False] == bench.match([10, 12], [11])


def test_scoring_of_a_known_output_gives_its_precision_recall_and_f1() -> None:
    truths = [[10], [30, 60], [], [50]]
    founds = [[11], [29, 30, 62], [50], []]
    s = bench.score(truths, founds)
    # found: 10 (by 11), 30 (by 30); missed: 60 (62 is two away), 50
    # false: 29 (30 already found), 62, and 50 in the series without a change
    assert (2, 5, 4) == (s.true_positives, s.detections, s.changes)
    assert math.isclose(2 / 5, s.precision)
    assert math.isclose(2 / 4, s.recall)
    assert math.isclose(2 * (2 / 5) * (2 / 4) / (2 / 5 + 2 / 4), s.f1)
    # one detection between two changes one point either side finds one of them
    assert (1, 1, 2) == astuple(bench.score([[10, 12]], [[11]]))
    assert 0.0 == bench.score([[5]], [[]]).f1
    assert math.isnan(bench.score([[]], [[]]).f1)  # nothing to find, nothing found


def test_the_corpus_is_the_same_every_run_and_labelled_as_generated() -> None:
    a = bench.corpus(singles=1, multis=1, aas=1)
    b = bench.corpus(singles=1, multis=1, aas=1)
    assert [(x.cell, x.kind, x.points, x.changes) for x in a] == \
        [(x.cell, x.kind, x.points, x.changes) for x in b]
    cells = {x.cell for x in a}
    assert 9 + 2 == len(cells)  # three kinds of noise x 1, 3, 5 seeds; two short lengths
    assert 9 * (5 + 1 + 1) + 2 * 5 == len(a)  # short: no multi, aas // 2 = 0 A/A series
    for x in a:
        seeds = int(x.cell.split(", ")[-1].split()[0])
        assert {seeds} == {len(p) for p in x.points}
        n = int(x.cell.split()[1]) if x.cell.startswith("short") else bench.POINTS
        assert n == len(x.points)
        assert len(x.changes) == len(x.sizes)
        if x.kind == "a/a":
            assert [] == x.changes
        elif x.kind == "single":
            assert 1 == len(x.changes) and n // 10 <= x.changes[0] <= n - n // 10
        else:
            assert 2 <= len(x.changes) <= 4
            assert all(b - a >= 10 for a, b in itertools.pairwise(x.changes))


@pytest.mark.parametrize("size", [3.0, -5.0])
def test_a_step_moves_the_level_by_its_size_in_noise_sds(size: float) -> None:
    import random

    points = bench.synthetic(random.Random(1), 400, 5, "normal", [(200, size)])
    logs = [statistics.fmean(math.log(v) for v in p) for p in points]
    shift = statistics.fmean(logs[200:]) - statistics.fmean(logs[:200])
    assert abs(shift / bench.NOISES["normal"] - size) < 0.2
    sd = statistics.stdev(math.log(v) - logs[i] for i, p in enumerate(points[:200]) for v in p)
    assert abs(sd / bench.NOISES["normal"] - math.sqrt(4 / 5)) < 0.1  # n-1 of 5 seeds


def test_the_harness_scores_stagetimer_and_writes_the_table() -> None:
    series = bench.corpus(singles=1, multis=1, aas=2)
    results = bench.run_all(series, sigproc_python=None, time_1000=False,
                            only=["stagetimer", "stagetimer, means"])
    assert ["stagetimer", "stagetimer, means"] == [r.name for r in results]
    figures = bench.evaluate(series, results[0])
    # steps of 5 SD with 5 seeds cannot be missed; A/A series of 100 points get no alert
    five = [f for x, f in zip(series, results[0].founds or [], strict=True)
            if x.kind == "single" and x.sizes == [5.0] and x.cell == "normal, 5 seeds"]
    assert [bench.match(x.changes, f) for x, f in zip(
        [x for x in series if x.kind == "single" and x.sizes == [5.0]
         and x.cell == "normal, 5 seeds"], five, strict=True)] == [[True]]
    assert 0.0 == figures["false_alerts"]
    assert 0.5 < figures["f1"] <= 1.0
    text = bench.table(series, results)
    assert text.count("\n") == 3 and "| stagetimer | every seed |" in text
    assert f"**{figures['f1']:.3f}**" in text.splitlines()[2]


@pytest.mark.slow
def test_recorded_series_are_real_runs_read_back_with_their_labels(tmp_path: Path) -> None:
    series = bench.recorded_corpus(str(tmp_path), repeats=1, points=6, seeds=3,
                                   factors=(1.0, 4.0), loops=200_000)
    assert ["a/a", "recorded"] == [x.kind for x in series]
    aa, step = series
    assert [] == aa.changes
    (at,) = step.changes
    assert 2 <= at <= 3
    assert all(3 == len(p) and min(p) > 0 for p in step.points)
    before = statistics.median(v for p in step.points[:at] for v in p)
    after = statistics.median(v for p in step.points[at:] for v in p)
    assert after > 2.0 * before  # four times the loop, on a machine shared with others
    # a second call reads the same tree again instead of recording anew
    again = bench.recorded_corpus(str(tmp_path), repeats=1, points=6, seeds=3,
                                  factors=(1.0, 4.0), loops=200_000)
    assert [x.points for x in series] == [x.points for x in again]
