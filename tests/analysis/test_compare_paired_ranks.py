"""compare --paired with the ranks of a distributed launch: runs are matched by
(run_idx, label, rank), and the matched ranks of one seed make one pair (their slowest on
each side), as every reader counts a seed."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from helpers.cli import run_cli

from stagetimer import compare


def write_ranked(directory: Path, seconds: dict[tuple[int, int], float], world: int) -> Path:
    """One stage ``train`` whose run (seed, rank) took ``seconds[seed, rank]``."""
    directory.mkdir(parents=True)
    runs = [
        {"seconds": s, "run_idx": seed, "rank": rank, "world_size": world}
        for (seed, rank), s in seconds.items()
    ]
    total = sum(seconds.values())
    (directory / "timings.json").write_text(
        json.dumps({"train": {"total_seconds": total, "runs": runs}})
    )
    return directory


def test_a_seed_counts_once_although_its_slowest_rank_differs_between_sides(
    tmp_path: Path,
) -> None:
    # base: rank 3 is the slowest; new: rank 0 is, and each seed is 10 % slower
    base = {(seed, rank): 1.0 + seed + 0.1 * rank for seed in range(4) for rank in range(4)}
    new = {(seed, rank): 1.1 * (1.3 + seed) - 0.1 * rank for seed in range(4) for rank in range(4)}
    write_ranked(tmp_path / "base", base, 4)
    write_ranked(tmp_path / "new", new, 4)

    (stage,) = compare(tmp_path / "base", tmp_path / "new", paired=True).pairs[0].stages

    # 4 seeds, not 16 ranks and not 0 (the slowest ranks' numbers do not match)
    assert (4, (0, 0)) == (stage.pairs_of_runs, stage.unmatched_runs)
    assert stage.ratio == pytest.approx(1.1)
    assert (stage.base.runs, stage.new.runs) == (4, 4)


def test_only_the_ranks_on_both_sides_are_timed_and_the_rest_counted(tmp_path: Path) -> None:
    # new lost ranks 2 and 3 of every seed: both sides are timed on ranks 0 and 1
    base = {(seed, rank): 1.0 + seed + (1.0 if rank == 3 else 0.0)
            for seed in range(3) for rank in range(4)}
    new = {(seed, rank): 1.0 + seed for seed in range(3) for rank in range(2)}
    write_ranked(tmp_path / "base", base, 4)
    write_ranked(tmp_path / "new", new, 4)

    (stage,) = compare(tmp_path / "base", tmp_path / "new", paired=True).pairs[0].stages
    data = json.loads(run_cli("compare", "--json", "--paired", tmp_path / "base",
                              tmp_path / "new").stdout)

    assert (3, (6, 0)) == (stage.pairs_of_runs, stage.unmatched_runs)
    assert math.isclose(stage.ratio or 0.0, 1.0)  # rank 3's extra second left out
    assert {"base": 6, "new": 0} == data["pairs"][0]["stages"][0]["unmatched_runs"]
    assert 3 == data["pairs_of_runs"]


def test_unranked_runs_do_not_match_a_rank(tmp_path: Path) -> None:
    write_ranked(tmp_path / "base", {(seed, 0): 1.0 + seed for seed in range(3)}, 2)
    (tmp_path / "new").mkdir()
    runs = [{"seconds": 1.0 + seed, "run_idx": seed} for seed in range(3)]
    (tmp_path / "new" / "timings.json").write_text(
        json.dumps({"train": {"total_seconds": 6.0, "runs": runs}})
    )

    (stage,) = compare(tmp_path / "base", tmp_path / "new", paired=True).pairs[0].stages

    assert (0, (3, 3), None) == (stage.pairs_of_runs, stage.unmatched_runs, stage.ratio)
