"""``plan``: the --time and --mem that a fraction Q of runs fit, checked on replayed
histories against held-out runs; time-outs counted as at least the limit."""

from __future__ import annotations

import datetime
import random
import statistics
from pathlib import Path

import pytest

from stagetimer._analysis.attempts.scan import Attempt
from stagetimer._analysis.plan import plan_from, slurm_memory, slurm_time, suggest


def _history(rng: random.Random, count: int, limit: float) -> list[tuple[float, bool]]:
    """``count`` runs of a log-normal stage under a time limit: the longer ones killed at
    the limit (censored: at least the limit)."""
    runs = []
    for _ in range(count):
        seconds = 3600.0 * rng.lognormvariate(0.0, 0.5)
        runs.append((min(seconds, limit), seconds <= limit))
    return runs


@pytest.mark.parametrize("limit", [float("inf"), 3600.0 * 2.0])
def test_at_most_five_percent_of_held_out_runs_exceed_the_suggestion(limit: float) -> None:
    exceeded = []
    for seed in range(30):
        rng = random.Random(seed)
        suggestion = suggest("train", "hw", _history(rng, 200, limit), [], 0.95)
        assert suggestion is not None
        held_out = [3600.0 * rng.lognormvariate(0.0, 0.5) for _ in range(2000)]
        exceeded.append(sum(s > suggestion.time_seconds for s in held_out) / len(held_out))
    assert statistics.median(exceeded) <= 0.05
    assert sum(e <= 0.05 for e in exceeded) >= 27  # the margin's 90 % confidence, and some


def test_time_outs_count_as_at_least_the_limit_never_their_partial_time() -> None:
    """A third of the runs hit a 1 h limit: the suggestion is above the limit (their
    partial time, taken as a duration, would put it below)."""
    rng = random.Random(1)
    runs = _history(rng, 90, 3600.0)
    assert sum(not ended for _, ended in runs) > 20
    suggestion = suggest("train", "hw", runs, [], 0.95)
    assert suggestion is not None and suggestion.time_seconds > 3600.0
    assert suggestion.censored == sum(not ended for _, ended in runs)
    assert "longest seen plus half" in suggestion.margin()


def test_timeout_attempts_are_read_as_censored_durations(tmp_path: object) -> None:
    start = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    end = start + datetime.timedelta(hours=2)
    killed = [
        Attempt(f"{i:032x}", "d", "train", i, None, None, start, "killed", "timeout", None,
                None, (end, end + datetime.timedelta(minutes=1)), "slurm: TIMEOUT",
                hardware_id="hw-1")
        for i in range(5)
    ]
    suggestions = plan_from([], killed, 0.95)
    assert suggestions == []  # nothing ended: nothing to plan from
    durations = [(7200.0, False)] * 5 + [(3600.0, True)] * 5
    direct = suggest("train", "hw-1", durations, [], 0.95)
    assert direct is not None and direct.time_seconds >= 7200.0


def test_memory_quantile_with_margin() -> None:
    rng = random.Random(2)
    peaks = [int(2**30 * rng.uniform(4, 8)) for _ in range(400)]
    suggestion = suggest("train", "hw", [(10.0, True)] * 10, peaks, 0.95)
    assert suggestion is not None and suggestion.memory_bytes is not None
    assert suggestion.memory_quantile_bytes is not None
    assert suggestion.memory_bytes >= suggestion.memory_quantile_bytes
    assert 0.95 <= sum(p <= suggestion.memory_bytes for p in peaks) / len(peaks) <= 0.99


def test_slurm_forms() -> None:
    assert slurm_time(59) == "00:01:00"
    assert slurm_time(3600 * 26 + 61) == "1-02:02:00"
    assert slurm_memory(2**30 * 3 + 1) == "3073M"
    assert slurm_memory(2**30 * 12) == "12G"


def test_a_quantile_outside_zero_one_is_refused() -> None:
    with pytest.raises(ValueError, match=r"quantile 1\.5"):
        suggest("train", None, [(1.0, True)], [], 1.5)


def test_plan_command_counts_time_outs_from_markers_as_at_least_their_time(
    tmp_path: Path,
) -> None:
    """Real runs in timings.json, and attempts the reader calls killed by the time limit
    (stood in for by a reader told so): the command's suggestion rises past them."""
    import json
    import subprocess
    import sys

    from stagetimer import Recorder, record_timing

    rec = Recorder(tmp_path)
    for i in range(20):
        record_timing("train", 100.0 + i, run_idx=i, recorder=rec)
    root = Path(__file__).resolve().parents[2]
    ran = subprocess.run([sys.executable, "-m", "stagetimer", "plan", "--json", str(tmp_path)],
                         capture_output=True, text=True, timeout=60, check=True,
                         env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})
    [plain] = json.loads(ran.stdout)["suggestions"]
    assert plain["censored"] == 0 and 119.0 <= plain["time_seconds"] <= 1.5 * 119.0
    # the same runs with five time-outs at 300 s, as plan_from is given them
    from stagetimer._analysis.tree import load_tree

    start = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    end = start + datetime.timedelta(seconds=300)
    killed = [Attempt(f"{i:032x}", str(tmp_path), "train", 20 + i, None, None, start,
                      "killed", "timeout", None, None, (end, end), "slurm: TIMEOUT",
                      hardware_id=plain["hardware_id"]) for i in range(5)]
    [censored] = plan_from(load_tree(tmp_path), killed, 0.95)
    assert censored.censored == 5 and censored.time_seconds >= 300.0
