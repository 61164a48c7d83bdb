"""The analysis layer's fast paths against plain definitions of what they must give.

Each reader summarises ten thousand stages with shortcuts: fields gathered in C
(``map(dict.get, ...)``), a first test that decides the usual stage (no ranks, no
resources, every duration valid, every metadata value one plain value), sorts and walks
written for speed. Every test here builds random input (fixed seeds) with the boundary
cases those first tests decide (-0.0, bool against int, 1 against 1.0, huge ints,
infinities, NaN, ``"rank": null``, empty sides, equal natural keys, links in a tree) and
compares the fast function with a plain definition written here, run by run.
"""

from __future__ import annotations

import json
import math
import os
import random
import statistics
import sys
from datetime import datetime, timezone
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from stagetimer._analysis.compare.ids import distinct_ids
from stagetimer._analysis.compare.metadata import NOT_METADATA, metadata_values
from stagetimer._analysis.compare.significance import welch_test
from stagetimer._analysis.compare.stage import FLOOR_SECONDS, measure
from stagetimer._analysis.compare.suites import _stage_runs
from stagetimer._analysis.compute import side_by_side, stage_use
from stagetimer._analysis.folding import seed_times
from stagetimer._analysis.raw import raw_seconds
from stagetimer._analysis.report import LegacyRun, report_from
from stagetimer._analysis.report_warnings import metadata_warning
from stagetimer._analysis.rows import RECORD_COLUMNS, records_from
from stagetimer._analysis.seeds import RankSpread, by_seed
from stagetimer._analysis.table import build_table, natural_key
from stagetimer._analysis.tree import Artifact, find_artifact_dirs
from stagetimer._format import LEGACY_KEYS, MAX_RUN_IDX, RESOURCE_FIELDS, RUN_FIELDS
from stagetimer._store.parse import parse_timings
from stagetimer._store.records import HardwareSidecar

_FLOAT_MAX = sys.float_info.max

# --- plain definitions -------------------------------------------------------------------


def _as_float(value: int | float) -> float:
    """A stored number as a double: an int through its decimal text (correctly rounded;
    beyond a double, an infinity of its sign), never through ``float(int)``."""
    return float(str(value)) if type(value) is int else value


def _valid(value: object) -> float | None:
    """The duration a writer could have stored (a number from 0 to the largest double)."""
    if type(value) not in (int, float):
        return None
    number = _as_float(value)  # type: ignore[arg-type]
    return number if 0.0 <= number <= _FLOAT_MAX else None


def _seed_view(runs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], RankSpread | None]:
    """A seed once: the ranked runs grouped by (run_idx, label, world_size), each group
    replaced, at the place of its first run, by its first run of the largest valid duration
    (its first run when none is valid); and the spread of each group of 2+ valid ranks."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    order: list[tuple[Any, ...] | int] = []
    for position, run in enumerate(runs):
        if run.get("rank") is None:
            order.append(position)
            continue
        key = (run.get("run_idx"), run.get("label"), run.get("world_size"))
        if key not in groups:
            order.append(key)
        groups.setdefault(key, []).append(run)
    view = []
    spreads: list[tuple[float, int]] = []
    for entry in order:
        if isinstance(entry, int):
            view.append(runs[entry])
            continue
        group = groups[entry]
        valid = [(s, r) for r in group if (s := _valid(r["seconds"])) is not None]
        if valid:
            best = max(s for s, _ in valid)
            view.append(next(r for s, r in valid if s == best))
        else:
            view.append(group[0])
        if len(valid) > 1:
            values = [s for s, _ in valid]
            spreads.append((max(values) - min(values), len(values)))
    if not spreads:
        return view, None
    gaps = [s for s, _ in spreads]
    return view, RankSpread(max(n for _, n in spreads), len(spreads), max(gaps),
                            float(_exact_median(gaps)))


def _exact_median(values: list[float]) -> Fraction:
    """The median in exact fractions (``statistics.median`` overflows on two 1e308)."""
    ordered = sorted(Fraction(v) for v in values)
    n = len(ordered)
    return ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2


def _exact_moments(kept: list[float]) -> tuple[float, float, float | None]:
    """Mean, median and sample standard deviation, in exact fractions, rounded once."""
    exact = [Fraction(v) for v in kept]
    n = len(exact)
    mean = sum(exact, Fraction(0)) / n
    middle = _exact_median(kept)
    stdev = None
    if n > 1:
        variance = sum(((v - mean) ** 2 for v in exact), Fraction(0)) / (n - 1)
        if variance <= _FLOAT_MAX:
            stdev = math.sqrt(float(variance))
        else:  # a variance past the largest double: its root is not
            stdev = math.sqrt(float(variance / 2**1200)) * 2**600
    return float(mean), float(middle), stdev


# --- random stored stages ----------------------------------------------------------------


def _seconds(rng: random.Random) -> int | float:
    odd = rng.random()
    if odd < 0.7:
        return rng.choice([rng.uniform(0.0, 5.0), rng.uniform(50.0, 500.0),
                           float(rng.randint(0, 9))])
    return rng.choice([
        0, 3, 0.0, -0.0, 1e-7, 1e-6, -1.0, -3, float("inf"), float("-inf"), float("nan"),
        10**400, -(10**400), 2**1024 - 2**970, 2**1024 - 2**971, 1.7e308, _FLOAT_MAX, 1e308,
    ])


_FORMS = [
    "2026-11-29T{h:02d}:{m:02d}:00.{ms:03d}Z",  # the writer's
    "2026-11-29T{h:02d}:{m:02d}:00Z",  # whole seconds
    "2026-11-29T{h:02d}:{m:02d}:00.{ms:03d}000+00:00",  # Python's isoformat
    "2026-11-29T{h5:02d}:{m:02d}:00.{ms:03d}-05:00",  # an offset
    "2026-1{h:d}-45T00:00:00.000Z",  # the writer's length, no time
    "yesterday",
    "",
]


def _started_at(rng: random.Random) -> str:
    """A start in the stage's form, now and then in another (one writer writes one form)."""
    odd = rng.random()
    form = _FORMS[0] if odd < 0.8 else "" if odd < 0.82 else rng.choice(_FORMS)
    hour = rng.randint(5, 23)
    return form.format(h=hour, h5=hour - 5, m=rng.randint(0, 59), ms=rng.randint(0, 999))


def _moment(text: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


def _start_range(starts: list[str]) -> tuple[str | None, str | None]:
    """The earliest and latest readable start (the least and greatest string where none is);
    in the writer's one form (``...Z``, one length) the strings sort as the times do."""
    if not starts:
        return None, None
    if len({len(t) for t in starts}) == 1 and all(t.endswith("Z") for t in starts):
        if all(_moment(t) is not None for t in starts):  # then the order of the times
            assert sorted(starts) == sorted(starts, key=_moment)  # type: ignore[arg-type]
        return min(starts), max(starts)
    read = sorted((m, t) for t in starts if (m := _moment(t)) is not None)
    return (read[0][1], read[-1][1]) if read else (min(starts), max(starts))


def _run(rng: random.Random, seed: int, rank: int | None, world: int | None) -> dict[str, Any]:
    run: dict[str, Any] = {"seconds": _seconds(rng)}
    if rng.random() < 0.9:
        run["run_idx"] = seed if rng.random() < 0.95 else rng.choice([-1, -seed - 2, MAX_RUN_IDX])
    if rank is not None or rng.random() < 0.1:
        run["rank"] = rank  # sometimes "rank": null
        if world is not None:
            run["world_size"] = world
    if rng.random() < 0.1:
        run["label"] = rng.choice(["a", "b"])
    if rng.random() < 0.05:
        run[rng.choice(LEGACY_KEYS)] = rng.choice([16, 15.5])
    if rng.random() < 0.85:
        run["hardware_id"] = rng.choice(["hw-a", "hw-a", "hw-b"])
    if rng.random() < 0.5:
        run["software_id"] = rng.choice(["sw-a", "sw-a", "sw-b"])
    if rng.random() < 0.8:
        run["started_at"] = _started_at(rng)
    return run


def _stage(rng: random.Random) -> dict[str, Any]:
    ranks = rng.choice([None, None, 2, 3])
    runs = []
    for seed in range(rng.randint(0, 6)):
        for rank in range(ranks) if ranks else [None]:
            if rng.random() < 0.9:  # a rank that never wrote
                runs.append(_run(rng, seed, rank, ranks))
    rng.shuffle(runs)
    stage: dict[str, Any] = {"runs": runs}
    if rng.random() < 0.7:
        total = 0.0
        for run in runs:
            value = _valid(run["seconds"])
            total += 0.0 if value is None else value
        stage["total_seconds"] = total if rng.random() < 0.8 else rng.choice([total + 1.0, 0, -1])
    if rng.random() < 0.3:
        stage["expected_runs"] = rng.choice([0, 1, 5, -1, MAX_RUN_IDX, MAX_RUN_IDX + 1])
    return stage


def _parsed(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` through its JSON text and the readers' own parse (shape checked)."""
    return parse_timings("timings.json", json.dumps(data).encode())


def _artifact(name: str, data: dict[str, Any]) -> Artifact:
    return Artifact(name, name, ".", HardwareSidecar(), _parsed(data))


# --- report: _stage_stats, value_flags, moments, _count_references -------------------------


def _flags(name: str, stored: dict[str, Any]) -> list[str]:
    """The warnings for values no writer stores, over every rank's run."""
    runs = stored["runs"]
    flags = []
    for position, run in enumerate(runs):
        if _valid(run["seconds"]) is None:
            value = _as_float(run["seconds"])
            idx = run.get("run_idx")
            where = (f"stage {name} run {idx}" if idx is not None and idx >= 0
                     else f"stage {name} run #{position + 1} in the file")
            why = "negative" if value < 0 else "not a finite number"
            flags.append(f"{where}: seconds {value:.17g} is {why}; no writer stores that, so "
                         "it is left out of the statistics")
    for position, run in enumerate(runs):
        if run.get("run_idx") is not None and run["run_idx"] < 0:
            flags.append(f"stage {name} run #{position + 1} in the file: run_idx "
                         f"{run['run_idx']} is negative; no writer stores that")
    if not flags and "total_seconds" in stored:
        summed = 0.0
        for run in runs:
            summed += _valid(run["seconds"]) or 0.0
        stored_total = stored["total_seconds"]
        if not math.isclose(_as_float(stored_total), summed, rel_tol=1e-9, abs_tol=1e-9):
            shown = f"{stored_total:.17g}" if type(stored_total) is float else str(stored_total)
            flags.append(f"stage {name}: total_seconds {shown} is not the sum of its runs "
                         f"({summed:.17g}); the report uses the runs")
    return flags


def _same(got: float | None, expected: float | None, rel: float) -> bool:
    if got is None or expected is None:
        return got is expected
    return got == expected or math.isclose(got, expected, rel_tol=rel)


@pytest.mark.parametrize("seed", range(40))
def test_the_report_summarises_each_stage_as_its_runs_read_one_by_one(seed: int) -> None:
    rng = random.Random(seed)
    data = {f"stage{s}": _stage(rng) for s in range(rng.randint(1, 8))}
    [report] = report_from([_artifact("d", data)])
    parsed = _parsed(data)
    referenced: dict[str, int] = {}
    legacy: list[LegacyRun] = []
    for stats, (name, stored) in zip(report.stages, parsed.items(), strict=True):
        view, spread = _seed_view(stored["runs"])
        legacy.extend(
            LegacyRun(name, r.get("run_idx"), r.get("label"),
                      {k: r[k] for k in LEGACY_KEYS if k in r})
            for r in view if any(k in r for k in LEGACY_KEYS)
        )
        seconds = [_as_float(r["seconds"]) for r in view]
        kept = [s for s in seconds if 0.0 <= s <= _FLOAT_MAX]
        # Python's own sum, which the report gives (compensated from 3.12, a plain left
        # fold before): what is compared is which values are added.
        total = sum(kept, 0.0)
        assert stats.name == name
        assert stats.runs == len(view)
        assert repr(stats.run_seconds) == repr(tuple(seconds))  # -0.0, nan and inf as read
        assert repr(stats.total_seconds) == repr(total)
        assert stats.flagged_runs == sum(_valid(r["seconds"]) is None for r in stored["runs"])
        if kept:
            mean, middle, stdev = _exact_moments(kept)
            assert _same(stats.mean_seconds, mean, 1e-9), (stats, mean)
            assert _same(stats.median_seconds, middle, 1e-15), (stats, middle)
            assert _same(stats.stdev_seconds, stdev, 1e-9), (stats, stdev)
            assert (stats.min_seconds, stats.max_seconds) == (min(kept), max(kept))
        else:
            assert (stats.mean_seconds, stats.median_seconds, stats.stdev_seconds,
                    stats.min_seconds, stats.max_seconds) == (None,) * 5
        ids = [r.get("hardware_id") for r in view]
        assert stats.hardware_ids == tuple(dict.fromkeys(i for i in ids if i is not None))
        software = [r.get("software_id") for r in view if r.get("software_id") is not None]
        assert stats.software_ids == tuple(dict.fromkeys(software))
        assert stats.runs_without_hardware == ids.count(None)
        expected = stored.get("expected_runs")
        assert stats.expected_runs == (expected if expected is not None
                                       and 0 < expected <= MAX_RUN_IDX else None)
        starts = [r["started_at"] for r in view if r.get("started_at") is not None]
        assert (stats.first_started_at, stats.last_started_at) == _start_range(starts)
        assert stats.rank_spread == spread
        for hw_id in ids:
            if hw_id is not None:
                referenced[hw_id] = referenced.get(hw_id, 0) + 1
        flags = [w for w in report.warnings if w.startswith(f"stage {name} ")
                 or w.startswith(f"stage {name}: total_seconds")]
        assert flags == _flags(name, stored)
    assert list(report.legacy_runs) == legacy
    assert list(report.hardware) == list(referenced)
    for hw_id, count in referenced.items():  # none described here: each one is named
        assert (f"{hw_id}: {count} run(s) refer to it but timings_hardware.json does not "
                "describe it") in report.warnings


@pytest.mark.parametrize("starts", [
    [], [""], ["", ""], ["", "2026-11-29T05:00:00.000Z"], ["2026-11-29T05:00:00.000Z"] * 2,
    ["2026-11-29T05:00:00.000Z", "2026-11-29T01:00:00.000-05:00"],  # 05:00 and 06:00 UTC
    ["2026-11-29T05:30:00+09:00", "2026-11-29T05:00:00.000Z", "2026-11-29T06:00:00.000Z"],
    ["yesterday", "2026-11-29T05:00:00Z", "2026-11-29T04:00:00.000Z"], ["b", "a"],
])
def test_a_stages_first_and_last_start_are_its_earliest_and_latest(starts: list[str]) -> None:
    from stagetimer._analysis.wall_span import start_range

    assert start_range(starts) == _start_range(starts)


# --- report_warnings.metadata_warning: its common-case test against metadata_values -------

_METADATA = [
    "fork", "spawn", "é", "a\u0000b", "", 0, 1, 2, -1, 10**30, 10**400, True, False, None,
    1.0, 0.0, -0.0, float("nan"), float("inf"), [1], [1.0], {"a": 1}, {"a": 1.0}, {"a": True},
]


def _mixed_keys(runs: list[dict[str, Any]], keys: set[str]) -> list[str]:
    """Each metadata key with two or more values as ``metadata_values`` tells them apart."""
    mixed = []
    for key in keys - NOT_METADATA:
        counts = metadata_values(runs, key)
        if counts is not None and len(counts) > 1:
            mixed.append(key)
    return sorted(mixed)


@pytest.mark.parametrize("seed", range(300))
def test_metadata_warning_names_exactly_the_keys_metadata_values_tells_apart(seed: int) -> None:
    rng = random.Random(seed)
    pool = rng.sample(_METADATA, rng.randint(1, 3))
    runs: list[dict[str, Any]] = []
    for _ in range(rng.randint(0, 5)):
        run: dict[str, Any] = {"seconds": 1.0}
        for key in ("mp", "batch", "seed"):
            if rng.random() < 0.9:
                run[key] = rng.choice(pool) if key != "seed" else rng.choice(_METADATA)
        runs.append(run)
    keys = set().union(*runs)
    got = metadata_warning("s", runs, keys)
    mixed = _mixed_keys(runs, keys) if len(runs) > 1 else []
    if not mixed:
        assert got is None, (runs, got)
        return
    assert got is not None, runs
    for key in ("mp", "batch", "seed"):
        named = f"{key}=" in got or f"no {key} in" in got
        assert named == (key in mixed), (key, runs, got)


# --- id_pairs.distinct_ids ------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(50))
def test_distinct_ids_are_each_id_once_first_seen_first(seed: int) -> None:
    rng = random.Random(seed)
    runs: list[dict[str, Any]] = [{"seconds": 1.0} for _ in range(rng.randint(0, 8))]
    for run in runs:
        if rng.random() < 0.8:
            run["hardware_id"] = rng.choice(["a", "b", "c", "", "é", None])
    expected: list[str] = []
    for run in runs:
        value = run.get("hardware_id")
        if value is not None and value not in expected:
            expected.append(value)
    assert distinct_ids(runs, "hardware_id") == tuple(expected)


# --- seeds.by_seed: its no-ranks exit against the grouping -----------------------------------


@pytest.mark.parametrize("seed", range(200))
def test_by_seed_counts_each_seed_once_as_its_slowest_valid_rank(seed: int) -> None:
    rng = random.Random(seed)
    stage = _parsed({"s": _stage(rng)})["s"]
    view, spread = by_seed(stage)
    expected_runs, expected_spread = _seed_view(stage["runs"])
    assert view["runs"] == expected_runs or (
        [id(r) for r in view["runs"]] == [id(r) for r in expected_runs]  # NaN != NaN
    )
    assert spread == expected_spread
    if view is not stage:
        total = 0.0
        for run in expected_runs:
            total += _valid(run["seconds"]) or 0.0
        assert repr(view["total_seconds"]) == repr(total)
        assert {k: v for k, v in view.items() if k not in ("runs", "total_seconds")} == {
            k: v for k, v in stage.items() if k not in ("runs", "total_seconds")}


# --- raw.raw_seconds: float() in C against the loader's as_float ------------------------------


@pytest.mark.parametrize("seed", range(100))
def test_raw_seconds_are_the_stored_numbers_as_doubles(seed: int) -> None:
    rng = random.Random(seed)
    values = [_seconds(rng) for _ in range(rng.randint(0, 12))]
    got = raw_seconds({"runs": [{"seconds": v} for v in values]})
    assert all(type(s) is float for s in got)
    assert repr(got) == repr([_as_float(v) for v in values])  # -0.0 and nan kept


# --- compare._stage_runs and stage_verdict.measure: the usual-stage and empty-side exits ------


@pytest.mark.parametrize("seed", range(100))
def test_stage_runs_are_the_valid_durations_and_their_runs(seed: int) -> None:
    rng = random.Random(seed)
    stage = _parsed({"s": _stage(rng)})["s"]
    valid, runs = _stage_runs(stage)
    pairs = [(_valid(r["seconds"]), r) for r in stage["runs"]]
    assert repr(valid) == repr([s for s, _ in pairs if s is not None])
    assert [id(r) for r in runs] == [id(r) for s, r in pairs if s is not None]


def _durations(rng: random.Random) -> list[float]:
    count = rng.choice([0, 0, 1, 1, 2, 3, 5, 8])
    if rng.random() < 0.2:
        return [rng.choice([0.0, 1e-6, 2.5])] * count  # no spread
    return [rng.choice([rng.uniform(0.5, 2.0), rng.uniform(0.5, 2.0), 0.0, -0.0, 1e-7,
                        1e-6, 1.0000001e-6, 1e300, _FLOAT_MAX]) for _ in range(count)]


def _log_side(values: list[float]) -> tuple[float, float, int]:
    logs = [math.log(max(v, FLOOR_SECONDS)) for v in values]
    mean = math.fsum(logs) / len(logs)
    variance = statistics.variance(logs, mean) if len(logs) > 1 else math.nan
    return mean, variance, len(logs)


@pytest.mark.parametrize("seed", range(300))
def test_measure_is_the_plain_statistics_of_both_sides(seed: int) -> None:
    rng = random.Random(seed)
    base, new = _durations(rng), _durations(rng)
    measured = measure("s", base, new)
    for side, values in ((measured.base, base), (measured.new, new)):
        assert side.runs == len(values)
        if values:
            mean, middle, stdev = _exact_moments(values)
            assert _same(side.mean_seconds, mean, 1e-12)
            assert _same(side.median_seconds, middle, 1e-15)
            assert _same(side.stdev_seconds, stdev, 1e-9)
        else:
            assert (side.median_seconds, side.mean_seconds, side.stdev_seconds) == (None,) * 3
    if not base or not new:
        assert (measured.ratio, measured.test) == (None, None)
        return
    (mean_b, var_b, n_b), (mean_n, var_n, n_n) = _log_side(base), _log_side(new)
    difference = mean_n - mean_b
    ratio = math.exp(difference) if difference < 709.7 else math.inf
    assert _same(measured.ratio, ratio, 1e-12), (base, new, measured)
    if n_b < 2 or n_n < 2:
        assert measured.test is None
        return
    assert measured.test is not None
    expected = welch_test((mean_n, var_n, n_n), (mean_b, var_b, n_b))
    for got, want in zip(measured.test, expected, strict=True):
        assert got == want or math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12), (
            base, new, measured.test, expected)


# --- compute: the no-resources exits of stage_use and side_by_side ---------------------------


def _number(resources: object, key: str) -> float | None:
    value = resources.get(key) if type(resources) is dict else None
    if type(value) not in (int, float):
        return None
    number = _as_float(value)  # type: ignore[arg-type]
    return number if 0.0 <= number < math.inf else None


def _tally(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Every run's figures summed, the runs that recorded none included."""
    found: dict[str, Any] = {"cpu": 0.0, "wall": 0.0, "children": [], "energy": [],
                             "peak": None, "peak_run": None}
    for run in runs:
        resources, seconds = run.get("resources"), _valid(run.get("seconds"))
        if type(resources) is not dict or seconds is None:
            continue
        cpu = _number(resources, "cpu_seconds")
        if cpu is not None:
            found["cpu"] += cpu
            found["wall"] += run["seconds"]
        for key, into in (("children_cpu_seconds", "children"), ("gpu_energy_joules", "energy")):
            if (value := _number(resources, key)) is not None:
                found[into].append(value)
        peak = _number(resources, "memory_peak_bytes")
        if peak is not None and (found["peak"] is None or peak > found["peak"]):
            found["peak"], found["peak_run"] = int(peak), run
    found["cpu_use"] = found["cpu"] / found["wall"] if found["wall"] >= 0.01 else None
    found["empty"] = (found["cpu_use"] is None and not sum(found["children"])
                      and not found["energy"] and found["peak"] is None)
    return found


def _resource_runs(rng: random.Random) -> list[dict[str, Any]]:
    runs = []
    for i in range(rng.randint(0, 5)):
        run: dict[str, Any] = {"seconds": _seconds(rng), "run_idx": i,
                               "hardware_id": rng.choice(["hw-a", "hw-b", None])}
        odd = rng.random()
        if odd < 0.2:
            run["resources"] = None
        elif odd < 0.6:
            run["resources"] = {
                key: rng.choice([0, 0.0, -0.0, 1.5, 7, 10**400, -1.0, float("inf"), 3e9])
                for key in RESOURCE_FIELDS if rng.random() < 0.6
            }
            if rng.random() < 0.3:
                run["resources"]["a_later_key"] = rng.choice([True, "x", 1.0])
        runs.append(run)
    return runs


@pytest.mark.parametrize("seed", range(200))
def test_what_a_stage_used_is_summed_over_every_run(seed: int) -> None:
    rng = random.Random(seed)
    base = _parsed({"s": {"runs": _resource_runs(rng)}})["s"]["runs"]
    new = _parsed({"s": {"runs": _resource_runs(rng)}})["s"]["runs"]
    limits = {"hw-a": None}
    use = stage_use("s", base, limits)
    found = _tally(base)
    if found["empty"]:
        assert use is None
    else:
        assert use is not None
        assert use.cpu_use == found["cpu_use"]
        assert use.children_cpu_seconds == (sum(found["children"], 0.0)
                                            if found["children"] else None)
        assert use.energy_joules == (sum(found["energy"], 0.0) if found["energy"] else None)
        assert (use.energy_runs, use.runs, use.peak_bytes) == (
            len(found["energy"]), len(base), found["peak"])
    sides = side_by_side(base, new)
    expected = {}
    for name, runs in (("base", base), ("new", new)):
        tally = _tally(runs)
        expected[name] = None if tally["empty"] else {
            "cpu_use": tally["cpu_use"],
            "children_cpu_seconds_mean": (sum(tally["children"], 0.0) / len(tally["children"])
                                          if tally["children"] else None),
            "memory_peak_bytes_max": tally["peak"],
            "gpu_energy_joules_mean": (sum(tally["energy"], 0.0) / len(tally["energy"])
                                       if tally["energy"] else None),
        }
    assert sides == (None if expected["base"] is None and expected["new"] is None else expected)


# --- table: natural order, whatever the order the paths were given in --------------------------

_NAMES = ["seed_1", "seed_01", "seed_001", "seed_2", "seed_10", "seed_\u0661", "seed_\uff11",
          "Seed_1", "seed_", "seed", "seed_1a", "seed_1_b", "a", "b10", "b9", "b09", "é2",
          "e2", "x-1", "x_1", "0", "00", "007", "7"]


def _natural_chunks(text: str) -> list[tuple[int, Any]]:
    """Runs of decimal digits as numbers, the text between as text, in order."""
    chunks: list[tuple[int, Any]] = []
    for ch in text:
        digit = ch.isdecimal()
        if chunks and (chunks[-1][0] == 1) == digit:
            chunks[-1] = (chunks[-1][0], chunks[-1][1] + ch)
        else:
            chunks.append((1 if digit else 0, ch))
    return [(kind, int(value) if kind else value) for kind, value in chunks]


def _reference_less(a: str, b: str) -> bool:
    """``a`` before ``b``: chunk by chunk, numbers by value, text by text, a number after
    the text it follows ends; the same chunks: the texts themselves."""
    ca, cb = _natural_chunks(a), _natural_chunks(b)
    if ca and ca[0][0] == 1:
        ca.insert(0, (0, ""))
    if cb and cb[0][0] == 1:
        cb.insert(0, (0, ""))
    for (_, x), (_, y) in zip(ca, cb, strict=False):  # the shorter decides at its end
        if x != y:
            return bool(x < y)  # one kind at one position: text, number, text, ...
    if len(ca) != len(cb):
        return len(ca) < len(cb)
    return a < b


def test_natural_key_reads_digits_as_numbers_and_ties_on_the_text() -> None:
    for a in _NAMES:
        for b in _NAMES:
            assert (natural_key(a) < natural_key(b)) == _reference_less(a, b), (a, b)
            assert (natural_key(a) == natural_key(b)) == (a == b), (a, b)
    assert sorted(["seed_10", "seed_2", "seed_1", "seed_01"], key=natural_key) == [
        "seed_01", "seed_1", "seed_2", "seed_10"]


@pytest.mark.parametrize("seed", range(20))
def test_the_table_rows_are_in_one_order_whatever_the_order_given(seed: int) -> None:
    rng = random.Random(seed)
    names = rng.sample(_NAMES, rng.randint(2, len(_NAMES)))
    data = {"s": {"runs": [{"seconds": 1.0}]}}
    artifacts = [Artifact(f"/suite/{n}", "/suite", n, HardwareSidecar(), data) for n in names]
    orders = set()
    for _ in range(4):
        rng.shuffle(artifacts)
        paths = build_table(artifacts).paths
        keys = [natural_key(p.rsplit("/", 1)[1]) for p in paths]
        assert keys == sorted(keys)
        orders.add(paths)
    assert len(orders) == 1, orders


# --- folding.seed_times ----------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(150))
def test_seed_times_sum_each_seeds_slowest_rank_in_the_stage_and_its_continuation(
    seed: int,
) -> None:
    rng = random.Random(seed)
    runs = _parsed({"s": _stage(rng)})["s"]["runs"]
    resumed = _parsed({"s": _stage(rng)})["s"]["runs"]
    found: dict[Any, list[float]] = {}
    for slot, stored in enumerate((runs, resumed)):
        for position, run in enumerate(_seed_view(stored)[0]):
            value = _valid(run["seconds"])
            if value is None:
                continue
            idx = run.get("run_idx")
            times = found.setdefault(("seed", idx) if idx is not None else (slot, position),
                                     [0.0, 0.0])
            times[slot] += value
    assert seed_times(runs, resumed) == [(a, b) for a, b in found.values()]


# --- tree: the one walk against os.walk -------------------------------------------------------


def _random_tree(rng: random.Random, root: Path, outside: Path, links: bool) -> None:
    """Directories up to three deep, some holding timings.json (or a rescue file), and with
    ``links``: links to other directories (siblings, the root, an ancestor, outside the
    root, themselves) and links that point nowhere."""
    directories = [root]
    for _ in range(rng.randint(1, 14)):
        parent = rng.choice(directories)
        if len(parent.relative_to(root).parts) < 3:
            child = parent / rng.choice(["a", "b", "seed_1", "seed_10", "é", "x y"])
            child.mkdir(exist_ok=True)
            directories.append(child)
    for directory in [*directories, outside]:
        if rng.random() < 0.5:
            (directory / "timings.json").write_text("{}")
        if rng.random() < 0.1:
            (directory / "notes.txt").write_text("")
        if rng.random() < 0.15:
            (directory / "timings.rescue-4711-1.json").write_text("{}")
    if not links:
        return
    targets = [*directories, outside, root.parent, Path("/")]
    for i in range(rng.randint(1, 6)):
        where = rng.choice(directories) / f"link{i}"
        odd = rng.random()
        if odd < 0.1:
            where.symlink_to(where.parent / "nowhere")
        elif odd < 0.15:
            where.symlink_to(where)  # a loop of one
        else:
            where.symlink_to(rng.choice(targets), target_is_directory=True)


def _reachable(root: Path) -> tuple[set[tuple[int, int]], set[tuple[int, int]]]:
    """The real directories holding timings.json, and those holding a rescue file,
    reachable from ``root`` through links, none entered twice, none of ``root``'s
    ancestors entered."""
    seen = set()
    path = Path(os.path.realpath(root))
    for above in [path, *path.parents]:
        st = os.stat(above)
        seen.add((st.st_dev, st.st_ino))
    found, rescued = set(), set()
    todo = [str(root)]
    while todo:
        directory = todo.pop()
        names = os.listdir(directory)
        st = os.stat(directory)
        if "timings.json" in names:
            found.add((st.st_dev, st.st_ino))
        if any(n.startswith("timings.rescue-") and n.endswith(".json") for n in names):
            rescued.add((st.st_dev, st.st_ino))
        for name in names:
            child = os.path.join(directory, name)
            if os.path.isdir(child):
                st = os.stat(child)
                if (st.st_dev, st.st_ino) not in seen:
                    seen.add((st.st_dev, st.st_ino))
                    todo.append(child)
    return found, rescued


def _key(path: str) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_dev, st.st_ino


def _parts(relpath: str) -> tuple[str, ...]:
    return () if relpath == "." else tuple(relpath.split("/"))


def _walked(tmp_path: Path, seed: int, links: bool) -> tuple[Path, Any, Any, list[str]]:
    """A random tree under ``tmp_path/root`` (links into ``tmp_path/outside`` if ``links``)
    and what ``find_artifact_dirs`` finds in it: root, found, problems, rescued."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    _random_tree(random.Random(seed), root, outside, links=links)
    rescued: list[str] = []
    found, problems = find_artifact_dirs([root], rescued)
    return root, found, problems, rescued


@pytest.mark.parametrize("seed", range(30))
def test_the_walk_finds_what_os_walk_finds(tmp_path: Path, seed: int) -> None:
    root, found, problems, rescued = _walked(tmp_path, seed, links=False)
    expected = sorted(
        _parts(os.path.relpath(directory, root).replace(os.sep, "/"))
        for directory, _, files in os.walk(root) if "timings.json" in files
    )
    assert sorted(rescued) == sorted(
        directory for directory, _, files in os.walk(root)
        if "timings.rescue-4711-1.json" in files
    )
    assert problems == [] or not (expected or rescued)
    assert [_parts(relpath) for _, _, relpath in found] == expected
    for path, given, relpath in found:
        assert given == str(root)
        assert path == os.path.join(root, *_parts(relpath))


@pytest.mark.parametrize("seed", range(60))
def test_the_walk_through_links_finds_each_reachable_directory_once(
    tmp_path: Path, seed: int
) -> None:
    root, found, problems, rescued = _walked(tmp_path, seed, links=True)
    keys = [_key(path) for path, _, _ in found]
    expected, expected_rescued = _reachable(root)
    assert len(keys) == len(set(keys))
    assert set(keys) == expected
    rescued_keys = [_key(path) for path in rescued]
    assert len(rescued_keys) == len(set(rescued_keys))
    assert set(rescued_keys) == expected_rescued
    if expected or expected_rescued:
        assert problems == []
    parts = [_parts(relpath) for _, _, relpath in found]
    assert parts == sorted(parts)
    for path, _, relpath in found:
        assert path == os.path.join(root, *_parts(relpath))


# --- rows.records_from: a row per stored run ---------------------------------------------------

_MACHINES: dict[str, dict[str, Any]] = {
    "hw-a": {"cpu": {"model_name": "EPYC", "logical_cpus": 64, "physical_cores": 32},
             "memory": {"limit_bytes": 2**39}, "sources": {},
             "gpus": [{"index": i, "name": n, "peak_memory_bandwidth_bytes_per_s": 3 * 10**12}
                      for i, n in enumerate(["H100", "H100", "A100"])]},
    "hw-b": {"cpu": {"model_name": None, "logical_cpus": 2, "physical_cores": None},
             "memory": {"limit_bytes": None}, "sources": {}, "gpus": []},
}


def _hardware_row(description: dict[str, Any] | None) -> list[Any]:
    if description is None:
        return [None] * 7
    gpus = description["gpus"]
    names = list(dict.fromkeys(g["name"] for g in gpus))
    return [description["cpu"]["model_name"], description["cpu"]["logical_cpus"],
            description["cpu"]["physical_cores"], description["memory"]["limit_bytes"],
            len(gpus), " + ".join(names) or None,
            gpus[0]["peak_memory_bandwidth_bytes_per_s"] if gpus else None]


def _write_suite(rng: random.Random, root: Path) -> dict[str, dict[str, Any]]:
    written = {}
    for d in range(rng.randint(1, 3)):
        data: dict[str, Any] = {}
        for name in rng.sample(["ippo_train", "ippo_train_auto_resume", "eval", "save"],
                               rng.randint(1, 3)):
            stage = _stage(rng)
            for run in stage["runs"]:
                if rng.random() < 0.3:
                    run["mp"] = rng.choice(["fork", 1, 1.0, None, True])
                if rng.random() < 0.1:
                    run[rng.choice(LEGACY_KEYS)] = 16
                if rng.random() < 0.2:
                    run["job"] = rng.choice([{"job_id": "4711"}, {"job_id": 4711}, {}])
                if rng.random() < 0.2:
                    run["hardware_id"] = "hw-unknown"
                if rng.random() < 0.3:
                    run["resources"] = {"cpu_seconds": 1.5, "memory_peak_bytes": 2**40}
            data[name] = stage
        directory = root / f"d{d}"
        directory.mkdir(parents=True)
        (directory / "timings.json").write_text(json.dumps(data))
        (directory / "timings_hardware.json").write_text(
            json.dumps({"schema_version": 1, "hardware": _MACHINES}))
        written[str(directory)] = _parsed(data)
    return written


@pytest.mark.parametrize("seed", range(25))
def test_records_are_each_stored_run_as_it_is(tmp_path: Path, seed: int) -> None:
    written, artifacts = _suite_artifacts(random.Random(seed), tmp_path)
    rows = records_from(artifacts)
    expected = []
    meta: dict[str, None] = {}
    for path, data in written.items():
        for name, stage in data.items():
            base = name.removesuffix("_auto_resume")
            for run in stage["runs"]:
                job, resources = run.get("job"), run.get("resources")
                row = dict(zip(RECORD_COLUMNS, [
                    path, name, base, base != name, run.get("run_idx"), run.get("label"),
                    _as_float(run["seconds"]), run.get("started_at"), run.get("hardware_id"),
                    run.get("software_id"), None, None, run.get("rank"), run.get("world_size"),
                    run.get("cpus"),
                    job["job_id"] if job and type(job.get("job_id")) is str else None,
                    *_hardware_row(_MACHINES.get(run.get("hardware_id"))),
                    *[resources.get(k) if resources is not None else None
                      for k in RESOURCE_FIELDS],
                ], strict=True))
                for key, value in run.items():
                    if key not in RUN_FIELDS and key not in LEGACY_KEYS:
                        meta.setdefault(key)
                        row[f"meta.{key}"] = value
                expected.append(row)
    for row in expected:
        for key in meta:
            row.setdefault(f"meta.{key}", None)
    assert repr(rows) == repr(expected)


def _read_hardware(path: str) -> HardwareSidecar:
    from stagetimer._analysis.raw import HardwareCache

    return HardwareCache().read(path)


def _suite_artifacts(
    rng: random.Random, tmp_path: Path
) -> tuple[dict[str, dict[str, Any]], list[Artifact]]:
    """A random suite written under ``tmp_path``: each directory's parsed timings, and the
    directories as the readers' artifacts (hardware read back from the files)."""
    written = _write_suite(rng, tmp_path)
    return written, [Artifact(path, path, ".", _read_hardware(path), data)
                     for path, data in written.items()]


# --- compute.statement_from: every run of a tree per machine and stage family ----------------


@pytest.mark.parametrize("seed", range(25))
def test_the_compute_statement_sums_every_run(tmp_path: Path, seed: int) -> None:
    from stagetimer._analysis.compute import family, statement_from

    written, artifacts = _suite_artifacts(random.Random(seed), tmp_path)
    statement = statement_from(artifacts)
    sums: dict[str, dict[str, list[float]]] = {}
    invalid = undescribed = 0
    for data in written.values():
        for name, stage in data.items():
            for run in stage["runs"]:
                seconds = _valid(run["seconds"])
                described = _MACHINES.get(run.get("hardware_id"))
                if seconds is None:
                    invalid += 1
                    continue
                if described is None:
                    undescribed += 1
                    continue
                gpus, cpus = len(described["gpus"]), described["cpu"]["logical_cpus"]
                cpu = _number(run.get("resources"), "cpu_seconds")
                if cpu is not None and cpus > 0 and cpu > seconds * cpus + 0.01:
                    cpu = None  # more than its CPUs give in its wall time: flagged, not summed
                children = _number(run.get("resources"), "children_cpu_seconds") or 0.0
                core_hours = (cpu + children) / 3600.0 if cpu is not None else (
                    seconds / 3600.0 * cpus)
                for where in ("total", family(name)):
                    into = sums.setdefault(run["hardware_id"], {}).setdefault(
                        where, [0, 0.0, 0.0, 0.0, 0])
                    into[0] += 1
                    into[1] += seconds
                    into[2] += seconds / 3600.0 * gpus
                    into[3] += core_hours
                    into[4] += cpu is not None
    assert (statement.invalid_runs, statement.undescribed_runs) == (invalid, undescribed)
    walls = [h.total.wall_seconds for h in statement.hardware]
    assert walls == sorted(walls, reverse=True)
    assert {h.hardware_id for h in statement.hardware} == set(sums)
    for machine in statement.hardware:
        amounts = {"total": machine.total, **machine.families}
        assert set(amounts) == set(sums[machine.hardware_id])
        for where, got in amounts.items():
            runs, wall, gpu_hours, core_hours, recorded = sums[machine.hardware_id][where]
            assert (got.runs, got.cpu_recorded_runs) == (runs, recorded)
            for value, expected in ((got.wall_seconds, wall), (got.gpu_hours, gpu_hours),
                                    (got.cpu_core_hours, core_hours)):
                assert math.isclose(value, expected, rel_tol=1e-12), (where, value, expected)


# --- raw.HardwareCache: structured sidecars kept by their bytes --------------------------------

_SIDECARS = [
    json.dumps({"schema_version": 1, "hardware": _MACHINES}),
    json.dumps({"schema_version": 1, "hardware": {"hw-b": _MACHINES["hw-b"]}}),
    json.dumps({"schema_version": 1, "hardware": {}}),
    json.dumps({"schema_version": 99, "hardware": {}}),  # newer
    json.dumps({"schema_version": 1, "hardware": {"x": {"cpu": {"logical_cpus": "2"}}}}),
    '{"schema_version": 1, "hardware": ',  # cut short
    None,  # no sidecar
]


@pytest.mark.parametrize("seed", range(10))
def test_the_hardware_cache_reads_as_load_hardware_reads(tmp_path: Path, seed: int) -> None:
    from stagetimer._analysis.raw import HardwareCache
    from stagetimer._store.load import load_hardware

    rng = random.Random(seed)
    cache = HardwareCache()
    for d in range(12):
        directory = tmp_path / f"d{d}"
        directory.mkdir()
        content = rng.choice(_SIDECARS)
        if content is not None:
            (directory / "timings_hardware.json").write_text(content)
        outcomes: list[Any] = []
        for read in (cache.read, load_hardware):
            try:
                outcomes.append(read(str(directory)))
            except Exception as exc:  # the same error, naming this directory's file
                outcomes.append((type(exc), str(exc)))
        assert outcomes[0] == outcomes[1]
        if isinstance(outcomes[0], HardwareSidecar):  # a mapping of its own each time
            assert outcomes[0].hardware is not cache.read(str(directory)).hardware


# --- significance: the no-spread exit is the limit of the general path ------------------------


@pytest.mark.parametrize("seed", range(50))
def test_a_test_without_spread_is_the_limit_of_a_vanishing_spread(seed: int) -> None:
    from stagetimer._analysis.compare.significance import paired_test

    rng = random.Random(seed)
    n_a, n_b = rng.randint(2, 9), rng.randint(2, 9)
    mean_a = rng.choice([0.0, 1.0, rng.uniform(-3.0, 3.0)])
    mean_b = rng.choice([mean_a, rng.uniform(-3.0, 3.0)])
    exact = welch_test((mean_a, 0.0, n_a), (mean_b, 0.0, n_b))
    near = welch_test((mean_a, 1e-24, n_a), (mean_b, 1e-24, n_b))
    assert exact.difference == near.difference == mean_a - mean_b
    assert math.isclose(exact.p_value, near.p_value, abs_tol=1e-9), (exact, near)
    assert math.isclose(exact.low, near.low, abs_tol=1e-9)
    assert math.isclose(exact.high, near.high, abs_tol=1e-9)
    if mean_a == 0.0:  # the same log difference in every pair: no spread at all
        differences = [mean_b] * n_a
        paired = paired_test(differences)
        assert paired.p_value == (1.0 if mean_b == 0.0 else 0.0) or paired.p_value < 1e-9
        assert math.isclose(paired.low, paired.high, abs_tol=1e-9)
