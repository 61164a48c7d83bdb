"""The suite's wall span, which reads only the stages that could end last, against every run
read one by one: timestamps in the writer's form and in others (offsets, other precisions,
unreadable ones), runs no writer stores, stages of ranks, stages without a start.

One writer writes one form: each stage's runs are written in one form here, the stages of
a suite in several."""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from stagetimer._analysis.report import build_report, wall_span

_EPOCH = datetime(2026, 11, 29, tzinfo=timezone.utc)


def _started_at(rng: random.Random, form: int, offset: float) -> str | None:
    """A start ``offset`` seconds after the epoch in ``form``, or now and then none or an
    unreadable one."""
    moment = _EPOCH + timedelta(seconds=offset)
    odd = rng.random()
    if odd < 0.05:
        return None  # no start recorded
    if odd < 0.1:
        return rng.choice(["yesterday", "2026-13-45T00:00:00.000Z"])  # unreadable
    if form == 0:
        return moment.isoformat()  # "+00:00", microseconds
    if form == 1:
        return moment.astimezone(timezone(timedelta(hours=-5))).isoformat()  # an offset
    if form == 2:
        return moment.strftime("%Y-%m-%dT%H:%M:%S") + "Z"  # whole seconds
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _seconds(rng: random.Random) -> float:
    if rng.random() < 0.05:
        return rng.choice([-1.0, float("inf")])  # no writer stores these
    return rng.choice([rng.uniform(0.0, 5.0), rng.uniform(50.0, 500.0)])


def _suite(root: Path, seed: int) -> None:
    rng = random.Random(seed)
    for d in range(rng.randint(1, 6)):
        stages: dict[str, Any] = {}
        for s in range(rng.randint(1, 4)):
            form = rng.randrange(5)  # mostly the writer's: 3 and 4
            ranks = rng.choice([1, 1, 2])
            runs = []
            for seed in range(rng.randint(1, 5)):
                for rank in range(ranks):
                    run: dict[str, Any] = {"seconds": _seconds(rng), "run_idx": seed}
                    if ranks > 1:
                        run.update(rank=rank, world_size=ranks)
                    start = _started_at(rng, form, rng.uniform(0.0, 3600.0))
                    if start is not None:
                        run["started_at"] = start
                    runs.append(run)
            stages[f"stage{s}"] = {"runs": runs}
        directory = root / f"d{d}"
        directory.mkdir()
        (directory / "timings.json").write_text(json.dumps(stages))


def _parse(text: object) -> float | None:
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment.timestamp()


def _every_run(root: Path) -> tuple[float, float] | None:
    """The span read run by run: earliest readable start, latest start + valid seconds."""
    starts, ends = [], []
    for timings in root.glob("*/timings.json"):
        for stage in json.loads(timings.read_text()).values():
            for run in stage["runs"]:
                start, seconds = _parse(run.get("started_at")), run["seconds"]
                if start is None or not (0.0 <= seconds < float("inf")):
                    continue
                starts.append(start)
                ends.append(start + seconds)
    return (min(starts), max(ends)) if starts else None


@pytest.mark.parametrize("seed", range(60))
def test_the_wall_span_is_the_span_of_every_run(tmp_path: Path, seed: int) -> None:
    _suite(tmp_path, seed)
    reports, problems = build_report([tmp_path])
    assert not problems

    expected = _every_run(tmp_path)
    span = wall_span(reports)

    if expected is None:
        assert span is None
    else:
        assert span == pytest.approx(expected, abs=1e-6)
