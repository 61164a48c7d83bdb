"""Benchmark: change points in a history, stagetimer's detector against the anchors.

Run:  pip install -e '.[history-bench]'
      python benchmarks/bench_history.py [--quick] [--sigproc-python PATH]

A labelled corpus, the same every run (fixed seeds), of series of 100 points:

- **noise**: ``normal`` (each seed's log-seconds ~ N(level, SD), SD = 5 %);
  ``day-to-day`` (half the variance shared by a point's seeds, as the same code on another
  night, half each seed's own; SD = 5 % in all); ``log-normal + outliers`` (SD = 0.25 in
  log-seconds, so skewed seconds, and 2 % of the seeds 1.5-3x slow, a neighbour's job);
- **seeds**: 1, 3 and 5 a point;
- **series**: one step of 1, 2, 3, 4 or 5 noise SDs (up or down, at point 10-90); two to
  four steps of 1-5 SDs, at least 10 points apart; A/A series (no change);
- **short series** of 12 and 20 points (normal noise, 5 seeds): one step of 1-5 SDs in
  the middle third, or none;
- **recorded**: series of 30 points recorded by real processes, one a point (a software
  version) running a CPU loop 5 times (its seeds) under ``stage()``, the loop made
  1.25, 1.5, 2 or 3 times longer from a known point on (and one without), read back with
  ``stagetimer.to_records``. The points of all recorded series are run in one shuffled
  order, so that the machine's own changes of load are noise on scattered points, not
  steps that no label knows. The tree is kept under the system's temporary directory
  (``stagetimer-bench-history/``) and reused while its parameters are the same.

"SD" is the standard deviation of one seed's log-seconds (about the relative SD of its
seconds). A change is found when a detection lies within one point of it; each true change
is matched at most once, and every other detection is a false one. Precision, recall and
F1 are over the whole corpus; "false alerts" is the share of A/A series with any alert.

stagetimer's detector sees every seed; ``stagetimer, means`` is the same detector given
one value a point (the mean of its seeds), as the anchors are: the difference is what the
seeds bring. The anchors, each with its documented defaults, on the mean of each point's
seeds in seconds (what asv and Otava store for a benchmark with repeats):

- Apache Otava, ``otava.analysis.compute_change_points(values)`` (E-Divisive split in
  windows of 50, then merged with a t-test: ``max_pvalue=0.001``, ``min_magnitude=0``);
- asv, ``asv.step_detect.detect_steps(values)`` (a Potts fit with its automatic gamma); each
  boundary between its steps is a change (``detect_regressions`` keeps only the upward
  ones of those);
- ruptures, ``Pelt(model="l2").fit(x).predict(pen=log(n) * sigma**2)``, the BIC-like penalty
  of its documentation, with sigma estimated from the series (the median absolute
  successive difference / 0.6745 / sqrt 2, which a step does not move); once with
  ``jump=1`` (every position) and once with the default ``jump=5`` (changes only at
  multiples of 5);
- MongoDB's signal-processing-algorithms,
  ``energy_statistics.e_divisive(values)`` (``pvalue=0.05``, ``permutations=100``), under
  its own ``deterministic_numpy_random(seed)`` so that a run repeats. It pins numpy < 2 and
  Otava pins numpy 2.2.0, so it lives in an environment of its own (extra
  ``history-bench-mongodb``), named with ``--sigproc-python``; this script runs it there.

Time: per series of 100 points (the mean over the corpus, in this process), and for one
series of 1,000 points of 5 seeds with three steps. Exits 1 while a goal of stagetimer's
is missed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "NOISES", "SEEDS", "Score", "Series", "corpus", "detectors", "evaluate", "main",
    "match", "recorded_corpus", "score", "synthetic",
]

#: the standard deviation of one seed's log-seconds, per kind of noise
NOISES = {"normal": 0.05, "day-to-day": 0.05, "log-normal + outliers": 0.25}
SEEDS = (1, 3, 5)
STEP_SIZES = (1, 2, 3, 4, 5)
POINTS = 100
#: the short series: their lengths and seeds
SHORT_POINTS = (12, 20)
SHORT_SEEDS = 5
#: share of seeds slowed by a neighbour in the outlier noise, and by how much
OUTLIER_SHARE = 0.02
#: a detection within this many points of a true change finds it
TOLERANCE = 1
#: recorded series: points, seeds, the slowdowns injected (1.0: none)
RECORDED_POINTS = 30
RECORDED_SEEDS = 5
RECORDED_FACTORS = (1.0, 1.25, 1.5, 2.0, 3.0)
#: the loop of one recorded seed (about 40 ms on a 2-vCPU guest)
RECORDED_LOOPS = 400_000
#: the goals of stagetimer's detector
GOAL_FALSE_ALERTS = 0.01
GOAL_RECALL_3SD = 0.90
GOAL_SECONDS_1000 = 1.0


@dataclass
class Series:
    """One labelled series: each point the seconds of its seeds."""

    cell: str  # "normal, 3 seeds"
    kind: str  # "single" | "multi" | "a/a" | "recorded"
    points: list[list[float]]
    changes: list[int]  # the first point after each true change
    sizes: list[float] = field(default_factory=list)  # |size| in SDs (nan: recorded)


def synthetic(
    rng: random.Random, n: int, seeds: int, noise: str, steps: Sequence[tuple[int, float]]
) -> list[list[float]]:
    """``n`` points of ``seeds`` durations; each (index, size) step moves the level of the
    points from ``index`` on by ``size`` noise SDs (log-seconds)."""
    sd = NOISES[noise]
    shared = sd / math.sqrt(2.0) if noise == "day-to-day" else 0.0
    own = sd / math.sqrt(2.0) if noise == "day-to-day" else sd
    level = math.log(10.0 ** rng.uniform(-2.0, 2.0))  # 10 ms to 100 s
    at = dict(steps)
    points = []
    for i in range(n):
        level += at.get(i, 0.0) * sd
        shift = rng.gauss(0.0, shared) if shared else 0.0
        point = []
        for _ in range(seeds):
            value = math.exp(level + shift + rng.gauss(0.0, own))
            if noise == "log-normal + outliers" and rng.random() < OUTLIER_SHARE:
                value *= rng.uniform(1.5, 3.0)
            point.append(value)
        points.append(point)
    return points


def _positions(rng: random.Random, count: int) -> list[int]:
    while True:  # rejection: ``count`` positions in 10..90, at least 10 apart
        chosen = sorted(rng.sample(range(10, POINTS - 9), count))
        if all(b - a >= 10 for a, b in itertools.pairwise(chosen)):
            return chosen


def corpus(*, singles: int, multis: int, aas: int, seed: int = 20261206) -> list[Series]:
    """The synthetic corpus: per noise and seed count, ``singles`` series per step size,
    ``multis`` series of 2-4 steps and ``aas`` A/A series, all of ``POINTS`` points; then
    short series (``SHORT_POINTS``, normal noise, ``SHORT_SEEDS`` seeds): ``singles`` per
    step size (in the middle third) and ``aas // 2`` A/A series of each length."""
    out: list[Series] = []
    for noise in NOISES:
        for seeds in SEEDS:
            cell = f"{noise}, {seeds} seed{'s' if seeds > 1 else ''}"
            rng = random.Random(f"{seed}/{noise}/{seeds}")
            for size in STEP_SIZES:
                for _ in range(singles):
                    at = rng.randrange(10, POINTS - 9)
                    signed = size * rng.choice((1.0, -1.0))
                    out.append(Series(cell, "single",
                                      synthetic(rng, POINTS, seeds, noise, [(at, signed)]),
                                      [at], [float(size)]))
            for _ in range(multis):
                where = _positions(rng, rng.choice((2, 3, 4)))
                sizes = [rng.choice(STEP_SIZES) for _ in where]
                signs = [rng.choice((1.0, -1.0)) for _ in where]
                steps = [(a, s * sign) for a, s, sign in zip(where, sizes, signs, strict=True)]
                out.append(Series(cell, "multi", synthetic(rng, POINTS, seeds, noise, steps),
                                  where, [float(s) for s in sizes]))
            for _ in range(aas):
                out.append(Series(cell, "a/a", synthetic(rng, POINTS, seeds, noise, []), []))
    for n in SHORT_POINTS:  # where the history is short, the seeds tell the noise
        cell = f"short: {n} points, normal, {SHORT_SEEDS} seeds"
        rng = random.Random(f"{seed}/short/{n}")
        for size in STEP_SIZES:
            for _ in range(singles):
                at = rng.randrange(n // 3, 2 * n // 3 + 1)
                signed = size * rng.choice((1.0, -1.0))
                out.append(Series(cell, "single",
                                  synthetic(rng, n, SHORT_SEEDS, "normal", [(at, signed)]),
                                  [at], [float(size)]))
        for _ in range(aas // 2):
            out.append(Series(cell, "a/a", synthetic(rng, n, SHORT_SEEDS, "normal", []), []))
    return out


_RECORD_SCRIPT = """
import sys
from stagetimer import Recorder, stage
directory, loops, seeds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with Recorder(directory):
    for seed in range(seeds):
        with stage("work", run_idx=seed):
            total = 0
            for i in range(loops):
                total += i * i
"""


def recorded_corpus(
    root: str | None = None, *, repeats: int = 2, points: int = RECORDED_POINTS,
    seeds: int = RECORDED_SEEDS, factors: Sequence[float] = RECORDED_FACTORS,
    loops: int = RECORDED_LOOPS, seed: int = 20261206,
) -> list[Series]:
    """Series recorded by real processes (one a point) and read back with ``to_records``.

    The tree is made once under ``root`` (default: the system's temporary directory) in a
    folder named for its parameters, and read again on later runs."""
    from stagetimer import to_records

    key = f"shuffled-r{repeats}-p{points}-s{seeds}-l{loops}-f{'_'.join(map(str, factors))}-{seed}"
    base = os.path.join(root or tempfile.gettempdir(), "stagetimer-bench-history", key)
    rng = random.Random(f"{seed}/recorded")
    plan = [(factor, rng.randrange(points // 3, 2 * points // 3))
            for _ in range(repeats) for factor in factors]
    if not os.path.exists(os.path.join(base, "complete")):
        partial = base + f".partial-{os.getpid()}"
        shutil.rmtree(partial, ignore_errors=True)
        # in a shuffled order: the machine's own changes of load fall on scattered points
        # of every series (noise), not on a run of points of one (a step no label knows)
        order = [(s, i) for s in range(len(plan)) for i in range(points)]
        rng.shuffle(order)
        for s, i in order:
            factor, at = plan[s]
            work = round(loops * (factor if i >= at else 1.0))
            directory = os.path.join(partial, f"series{s:02d}", f"point{i:03d}")
            subprocess.run([sys.executable, "-c", _RECORD_SCRIPT, directory, str(work),
                            str(seeds)], check=True, timeout=120)
        with open(os.path.join(partial, "complete"), "w") as f:
            json.dump(plan, f)
        shutil.rmtree(base, ignore_errors=True)
        os.makedirs(os.path.dirname(base), exist_ok=True)
        os.rename(partial, base)
    out = []
    for s, (factor, at) in enumerate(plan):
        by_point: dict[int, list[tuple[int, float]]] = {}
        for row in to_records(os.path.join(base, f"series{s:02d}")):
            i = int(os.path.basename(row["artifact"])[len("point"):])
            by_point.setdefault(i, []).append((row["run_idx"], row["seconds"]))
        series = [[sec for _, sec in sorted(by_point[i])] for i in range(points)]
        out.append(Series(f"recorded, {seeds} seeds", "recorded" if factor != 1.0 else "a/a",
                          series, [at] if factor != 1.0 else [],
                          [math.nan] if factor != 1.0 else []))
    return out


# --- scoring ---------------------------------------------------------------------------


def match(truth: Sequence[int], found: Sequence[int], tolerance: int = TOLERANCE) -> list[bool]:
    """For each true change (oldest first), whether a detection within ``tolerance`` points
    finds it; each detection finds at most one change (the nearest first)."""
    free = sorted(set(found))
    hits = []
    for t in sorted(truth):
        near = [d for d in free if abs(d - t) <= tolerance]
        if near:
            free.remove(min(near, key=lambda d: (abs(d - t), d)))
        hits.append(bool(near))
    return hits


@dataclass
class Score:
    true_positives: int = 0
    detections: int = 0
    changes: int = 0

    @property
    def precision(self) -> float:
        return self.true_positives / self.detections if self.detections else math.nan

    @property
    def recall(self) -> float:
        return self.true_positives / self.changes if self.changes else math.nan

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        if math.isnan(p) or math.isnan(r):
            return 0.0 if self.changes or self.detections else math.nan
        return 2 * p * r / (p + r) if p + r else 0.0


def score(truths: Sequence[Sequence[int]], founds: Sequence[Sequence[int]]) -> Score:
    """Precision, recall and F1 of detections over series with their true changes."""
    s = Score()
    for truth, found in zip(truths, founds, strict=True):
        s.true_positives += sum(match(truth, found))
        s.detections += len(set(found))
        s.changes += len(truth)
    return s


# --- the detectors ---------------------------------------------------------------------

Detector = Callable[[list[list[float]]], list[int]]


def _means(points: list[list[float]]) -> list[float]:
    return [statistics.fmean(p) for p in points]


def _clean(found: Any, n: int) -> list[int]:
    return sorted({int(i) for i in found if 0 < int(i) < n})


def _stagetimer(points: list[list[float]]) -> list[int]:
    from stagetimer._analysis.history.changepoints import find_changes

    return [c.index for c in find_changes(points)]


def _stagetimer_means(points: list[list[float]]) -> list[int]:
    from stagetimer._analysis.history.changepoints import find_changes

    return [c.index for c in find_changes([[m] for m in _means(points)])]


def _otava(points: list[list[float]]) -> list[int]:
    from otava.analysis import compute_change_points

    change_points, _ = compute_change_points(_means(points))
    return _clean((c.index for c in change_points), len(points))


def _asv(points: list[list[float]]) -> list[int]:
    from asv.step_detect import detect_steps

    return _clean((left for left, *_ in detect_steps(_means(points))[1:]), len(points))


def _ruptures(jump: int | None) -> Detector:
    def run(points: list[list[float]]) -> list[int]:
        import numpy as np
        import ruptures

        x = np.asarray(_means(points))
        sigma = float(np.median(np.abs(np.diff(x)))) / 0.6744897501960817 / math.sqrt(2.0)
        algo = ruptures.Pelt(model="l2") if jump is None else ruptures.Pelt(model="l2", jump=jump)
        return _clean(algo.fit(x).predict(pen=math.log(len(x)) * sigma**2), len(points))
    return run


def _sigproc_values(values: list[float], seed: int) -> list[int]:
    from signal_processing_algorithms.determinism import deterministic_numpy_random
    from signal_processing_algorithms.energy_statistics.energy_statistics import e_divisive

    with deterministic_numpy_random(seed):
        return _clean(e_divisive(values), len(values))


def detectors(
    only: Sequence[str] | None = None,
) -> dict[str, tuple[str, str, Detector | None]]:
    """name -> (what it sees, how it was called, the callable or None if not installed);
    ``only``: these names (the anchors not named are not imported)."""
    rows: dict[str, tuple[str, str, Detector | None]] = {
        "stagetimer": ("every seed", "find_changes(points)", _stagetimer),
        "stagetimer, means": ("mean of the seeds", "find_changes([[mean] ...])",
                              _stagetimer_means),
    }
    anchors = {
        "Apache Otava": ("otava", "compute_change_points(x)", _otava),
        "asv step_detect": ("asv", "detect_steps(x)", _asv),
        "ruptures PELT, jump=1": ("ruptures", "Pelt('l2', jump=1), pen=log(n)*sigma^2",
                                  _ruptures(1)),
        "ruptures PELT, defaults": ("ruptures", "Pelt('l2') (jump=5), pen=log(n)*sigma^2",
                                    _ruptures(None)),
    }
    for name, (module, call, fn) in anchors.items():
        if only is not None and name not in only:
            continue
        try:
            __import__(module)
        except ImportError:
            rows[name] = ("mean of the seeds", f"not installed ({module})", None)
        else:
            rows[name] = ("mean of the seeds", call, fn)
    return rows


def _timed(fn: Detector, points: list[list[float]]) -> tuple[list[int], float]:
    start = time.perf_counter()
    found = fn(points)
    return found, time.perf_counter() - start


def run_sigproc(values: list[list[float]], python: str | None) -> list[tuple[list[int], float]]:
    """e_divisive on each series of values (in this process if it imports, else in
    ``python``), each under ``deterministic_numpy_random(its index)``, with its time."""
    try:
        import signal_processing_algorithms  # noqa: F401
    except ImportError:
        if not python:
            raise
        done = subprocess.run([python, os.path.abspath(__file__), "--sigproc-worker"],
                              input=json.dumps(values), capture_output=True, text=True,
                              check=True, timeout=3600)
        return [(found, seconds) for found, seconds in json.loads(done.stdout)]
    out = []
    for i, series in enumerate(values):
        start = time.perf_counter()
        found = _sigproc_values(series, i)
        out.append((found, time.perf_counter() - start))
    return out


def _sigproc_worker() -> None:
    values = json.load(sys.stdin)
    out = []
    for i, series in enumerate(values):
        start = time.perf_counter()
        found = _sigproc_values(series, i)
        out.append((found, time.perf_counter() - start))
    json.dump(out, sys.stdout)


# --- evaluation ------------------------------------------------------------------------


@dataclass
class Result:
    name: str
    sees: str
    call: str
    founds: list[list[int]] | None = None  # None: not run
    seconds: list[float] = field(default_factory=list)
    seconds_1000: float = math.nan
    why_not: str = ""


def evaluate(series: Sequence[Series], result: Result) -> dict[str, float]:
    """The figures of one detector over the corpus."""
    assert result.founds is not None
    s = score([x.changes for x in series], result.founds)
    aa = [bool(f) for x, f in zip(series, result.founds, strict=True)
          if x.kind == "a/a" and len(x.points) == POINTS]
    big = [hit for x, f in zip(series, result.founds, strict=True)
           for hit, size in zip(match(x.changes, f), x.sizes, strict=True) if size >= 3]
    return {"precision": s.precision, "recall": s.recall, "f1": s.f1,
            "false_alerts": sum(aa) / len(aa) if aa else math.nan,
            "recall_3sd": sum(big) / len(big) if big else math.nan}


def series_1000(seeds: int = 5) -> list[list[float]]:
    return synthetic(random.Random("1000 points"), 1000, seeds, "normal",
                     [(250, 3.0), (500, -4.0), (750, 5.0)])


def run_all(series: Sequence[Series], *, sigproc_python: str | None,
            time_1000: bool = True, only: Sequence[str] | None = None) -> list[Result]:
    results = []
    long = series_1000()
    for name, (sees, call, fn) in detectors(only).items():
        if only is not None and name not in only:
            continue
        r = Result(name, sees, call)
        if fn is None:
            r.why_not = call
        else:
            founds, seconds = [], []
            for x in series:
                found, sec = _timed(fn, x.points)
                founds.append(found)
                seconds.append(sec)
            r.founds, r.seconds = founds, seconds
            if time_1000:
                times = [_timed(fn, long)[1] for _ in range(3)]
                r.seconds_1000 = statistics.median(times)
        results.append(r)
    if only is None or "signal-processing-algorithms" in only:
        r = Result("signal-processing-algorithms", "mean of the seeds",
                   "e_divisive(x) (pvalue=0.05, permutations=100)")
        values = [_means(x.points) for x in series]
        if time_1000:
            values.append(_means(long))
        try:
            out = run_sigproc(values, sigproc_python)
        except ImportError:
            r.why_not = ("not installed: it pins numpy<2, Otava numpy==2.2.0; install "
                         "'.[history-bench-mongodb]' in another environment and name its "
                         "python with --sigproc-python")
        else:
            if time_1000:
                r.seconds_1000 = out.pop()[1]
            r.founds = [found for found, _ in out]
            r.seconds = [sec for _, sec in out]
        results.append(r)
    return results


def _pct(x: float) -> str:
    return "-" if math.isnan(x) else f"{100 * x:.1f} %"


def _num(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:.3f}"


def _ms(x: float) -> str:
    if math.isnan(x):
        return "-"
    return f"{1000 * x:.1f} ms" if x < 1 else f"{x:.2f} s"


def table(series: Sequence[Series], results: Sequence[Result]) -> str:
    lines = [
        "| detector | values a point | precision | recall | F1 | false alerts, A/A "
        "(100 points) | recall, steps >= 3 SD | time a series (100 points) | "
        "1,000 points |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        if r.founds is None:
            lines.append(f"| {r.name} | {r.sees} | {r.why_not} | | | | | | |")
            continue
        e = evaluate(series, r)
        lines.append(
            f"| {r.name} | {r.sees} | {_num(e['precision'])} | {_num(e['recall'])} | "
            f"**{_num(e['f1'])}** | {_pct(e['false_alerts'])} | {_pct(e['recall_3sd'])} | "
            f"{_ms(statistics.fmean(r.seconds))} | {_ms(r.seconds_1000)} |")
    return "\n".join(lines)


def cell_table(series: Sequence[Series], results: Sequence[Result]) -> str:
    """F1 per cell (noise, seeds), and stagetimer's false alerts and big-step recall."""
    ran = [r for r in results if r.founds is not None]
    cells = list(dict.fromkeys(x.cell for x in series))
    head = "| cell | " + " | ".join(f"F1 {r.name}" for r in ran) + \
        " | stagetimer: false alerts | stagetimer: recall >= 3 SD |"
    lines = [head, "|" + " --- |" * (len(ran) + 3)]
    for cell in cells:
        idx = [i for i, x in enumerate(series) if x.cell == cell]
        sub = [series[i] for i in idx]
        cols = []
        for r in ran:
            assert r.founds is not None
            cols.append(_num(score([x.changes for x in sub],
                                   [r.founds[i] for i in idx]).f1))
        st = next(r for r in ran if r.name == "stagetimer")
        e = evaluate(sub, Result(st.name, st.sees, st.call,
                                 [st.founds[i] for i in idx] if st.founds else None))
        lines.append(f"| {cell} | " + " | ".join(cols) +
                     f" | {_pct(e['false_alerts'])} | {_pct(e['recall_3sd'])} |")
    return "\n".join(lines)


def size_table(series: Sequence[Series], results: Sequence[Result]) -> str:
    """Recall by step size (synthetic series)."""
    ran = [r for r in results if r.founds is not None]
    lines = ["| step | " + " | ".join(r.name for r in ran) + " |",
             "|" + " --- |" * (len(ran) + 1)]
    for size in STEP_SIZES:
        cols = []
        for r in ran:
            assert r.founds is not None
            hits = [hit for x, f in zip(series, r.founds, strict=True)
                    for hit, s in zip(match(x.changes, f), x.sizes, strict=True) if s == size]
            cols.append(_pct(sum(hits) / len(hits)) if hits else "-")
        lines.append(f"| {size} SD | " + " | ".join(cols) + " |")
    return "\n".join(lines)


def goals(series: Sequence[Series], results: Sequence[Result]) -> list[tuple[str, bool]]:
    by = {r.name: r for r in results if r.founds is not None}
    st = evaluate(series, by["stagetimer"])
    anchors = {n: evaluate(series, r)["f1"] for n, r in by.items()
               if not n.startswith("stagetimer")}
    best = max(anchors.items(), key=lambda kv: kv[1]) if anchors else ("none", math.nan)
    means = evaluate(series, by["stagetimer, means"])["f1"]
    out = [
        (f"F1 {st['f1']:.3f} >= the best anchor's ({best[0]}: {best[1]:.3f}); on means "
         f"only {means:.3f} (the seeds add {st['f1'] - means:+.3f})",
         not anchors or st["f1"] >= best[1]),
        (f"false alerts on A/A series of 100 points {_pct(st['false_alerts'])} <= 1 %",
         st["false_alerts"] <= GOAL_FALSE_ALERTS),
        (f"recall of steps >= 3 SD within one point {_pct(st['recall_3sd'])} >= 90 %",
         st["recall_3sd"] >= GOAL_RECALL_3SD),
        (f"detection of 1,000 points {_ms(by['stagetimer'].seconds_1000)} <= 1 s",
         by["stagetimer"].seconds_1000 <= GOAL_SECONDS_1000),
    ]
    return out


def recorded_sd(series: Sequence[Series]) -> float:
    """The pooled standard deviation of the seeds' log-seconds within their points."""
    squares, df = 0.0, 0
    for x in series:
        for p in x.points:
            logs = [math.log(v) for v in p]
            mean = statistics.fmean(logs)
            squares += sum((v - mean) ** 2 for v in logs)
            df += len(logs) - 1
    return math.sqrt(squares / df) if df else math.nan


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--quick", action="store_true", help="a smaller corpus")
    parser.add_argument("--sigproc-python", default=os.environ.get("STAGETIMER_SIGPROC_PYTHON"),
                        help="the python of an environment holding signal-processing-algorithms")
    parser.add_argument("--no-recorded", action="store_true",
                        help="leave out the series recorded by real processes")
    parser.add_argument("--sigproc-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.sigproc_worker:
        _sigproc_worker()
        return 0
    if args.quick:
        series = corpus(singles=4, multis=6, aas=20)
    else:
        series = corpus(singles=20, multis=30, aas=100)
    if not args.no_recorded:
        series += recorded_corpus(repeats=1 if args.quick else 2)
    results = run_all(series, sigproc_python=args.sigproc_python)
    steps = sum(len(x.changes) for x in series)
    aa = sum(x.kind == "a/a" and len(x.points) == POINTS for x in series)
    print(f"{len(series)} series ({steps} true changes, {aa} A/A series of {POINTS} points)")
    recorded = [x for x in series if x.cell.startswith("recorded")]
    if recorded:
        print(f"recorded series: the SD of a seed's log-seconds within its point, pooled: "
              f"{recorded_sd(recorded):.3f}")
    print()
    print(table(series, results))
    print("\nF1 per cell:\n")
    print(cell_table(series, results))
    print("\nRecall by step size:\n")
    print(size_table(series, results))
    print()
    missed = False
    for line, ok in goals(series, results):
        print(f"{'ok    ' if ok else 'MISSED'} {line}")
        missed |= not ok
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
