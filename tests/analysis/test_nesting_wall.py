"""Every summary of a recorded experiment gives a total equal to the wall time measured
around it, within 5 %: the report's total, the table's, ``compute``'s wall time and
``lost``'s productive time. Once for the README's example (``examples/train_loop.py``,
its stages one after another) and once for a fit in plain Python whose epochs, and the
validation inside each, are stages nested in it.

The experiment runs in its own interpreter, which measures the wall time around it
(after a first save elsewhere has captured its hardware and software, a cost of the
first save, not of the stages). Its directory is on a RAM file system where there is
one: the test is about what the summaries add up, not about how long ``fsync`` takes on
a shared disk.
"""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.cli import run_cli
from helpers.process_life import run_script

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

WARM_UP = """
import sys, tempfile, time
sys.path.insert(0, sys.argv[2])
from stagetimer import Recorder, record_timing
record_timing("warm_up", 0.0, recorder=Recorder(tempfile.mkdtemp(dir=sys.argv[1])))
"""

README = WARM_UP + """
import train_loop
t0 = time.perf_counter()
train_loop.main(["--out", sys.argv[1] + "/suite", "--seeds", "2", "--epochs", "300"])
print("WALL", time.perf_counter() - t0)
"""

NESTED = WARM_UP + """
import random
from stagetimer import stage
from train_loop import MLP, evaluate, make_data, train_epoch
rec = Recorder(sys.argv[1] + "/suite/fit", policy="upsert")
t0 = time.perf_counter()
with rec:
    for seed in range(2):
        train, test = make_data(400, seed), make_data(200, 10_000 + seed)
        model, rng = MLP(16, seed), random.Random(seed)
        with stage("fit_train", run_idx=seed):
            for epoch in range(40):
                with stage("train_epoch", run_idx=seed, label=f"epoch{epoch}"):
                    train_epoch(model, train, 0.01, rng)
                    with stage("validate", run_idx=seed, label=f"epoch{epoch}"):
                        sum((model.forward(x)[0] - y) ** 2 for x, y in test)
print("WALL", time.perf_counter() - t0)
"""


@pytest.fixture
def fast_dir() -> Iterator[Path]:
    """A directory on a RAM file system where there is one (else the usual temporary)."""
    shm = "/dev/shm"
    root = shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None
    with tempfile.TemporaryDirectory(dir=root) as name:
        yield Path(name)


def cli_json(*args: Any) -> Any:
    done = run_cli(*args)
    assert (0, "") == (done.returncode, done.stderr)
    return json.loads(done.stdout)


def summaries(suite: Path) -> dict[str, float]:
    """The total every summary gives of the directories under ``suite``."""
    (row,) = list(csv.DictReader(io.StringIO(run_cli("table", suite, "--csv").stdout)))
    (hardware,) = cli_json("compute", suite, "--json")["hardware"]
    return {
        "report": cli_json("report", suite, "--json")["total_seconds"],
        "table": float(row["total_seconds"]),
        "compute": hardware["total"]["wall_seconds"],
        "lost": cli_json("lost", suite, "--json")["total"]["productive_seconds"],
    }


def wall_of(stdout: str) -> float:
    (line,) = [line for line in stdout.splitlines() if line.startswith("WALL ")]
    return float(line.split()[1])


@pytest.mark.parametrize("script", [README, NESTED], ids=["readme-example", "nested-fit"])
def test_every_summary_gives_the_wall_time_measured_around_the_experiment(
    fast_dir: Path, script: str
) -> None:
    done = run_script(script, fast_dir, EXAMPLES, timeout=300)
    wall = wall_of(done.stdout)
    totals = summaries(fast_dir / "suite")

    assert {name: pytest.approx(wall, rel=0.05) for name in totals} == totals
