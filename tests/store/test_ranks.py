"""Ranks of one distributed launch write one directory: none replaces another's runs, and
readers count each seed once, as its slowest rank."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stagetimer import compare, load_timings, to_records
from stagetimer._analysis.report import build_report
from stagetimer._analysis.seeds import RankSpread
from stagetimer._analysis.table import build_table
from stagetimer._analysis.tree import load_tree
from stagetimer._record.placement import rank_of
from stagetimer._render.report_text import render_text
from stagetimer._store.rules import apply_run

RANKS, SEEDS = 4, 3

#: What each launcher sets in its ranks' environments (torchrun(1), srun(1), mpirun(1)).
LAUNCHERS: dict[str, Any] = {
    "torchrun": lambda r, n: {"RANK": str(r), "WORLD_SIZE": str(n), "LOCAL_RANK": str(r),
                              "LOCAL_WORLD_SIZE": str(n), "MASTER_ADDR": "127.0.0.1"},
    "srun": lambda r, n: {"SLURM_PROCID": str(r), "SLURM_NTASKS": str(n), "SLURM_LOCALID": str(r),
                          "SLURM_STEP_NUM_TASKS": str(n)},
    "mpirun": lambda r, n: {"OMPI_COMM_WORLD_RANK": str(r), "OMPI_COMM_WORLD_SIZE": str(n),
                            "OMPI_COMM_WORLD_LOCAL_RANK": str(r)},
    "hydra": lambda r, n: {"PMI_RANK": str(r), "PMI_SIZE": str(n)},
}
_LAUNCH_VARIABLES = {v for make in LAUNCHERS.values() for v in make(0, 1)}

RANK_SCRIPT = """
import sys
from stagetimer import Recorder, record_timing
directory, policy, rank, launch = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rec = Recorder(directory, policy=policy, software=False)
for seed in range(3):
    # seed s takes 1 + s seconds on the slowest rank; rank r is 0.1 * (3 - r) s faster
    record_timing("ippo_train", 1.0 + seed + 0.1 * rank, run_idx=seed, recorder=rec,
                  launch=launch)
    record_timing("checkpoint_save", 0.5, run_idx=seed, recorder=rec, launch=launch)
"""


def launch(launcher: str, directory: Path, policy: str, number: int = 1) -> None:
    """Start the 4 ranks at once, as the launcher would, and wait for them."""
    base = {k: v for k, v in os.environ.items() if k not in _LAUNCH_VARIABLES}
    children = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(RANK_SCRIPT), str(directory), policy,
             str(rank), str(number)],
            env={**base, **LAUNCHERS[launcher](rank, RANKS)},
            stderr=subprocess.PIPE, text=True,
        )
        for rank in range(RANKS)
    ]
    for child in children:
        _, err = child.communicate(timeout=120)
        assert child.returncode == 0, err


def ranked_runs(directory: Path, stage: str = "ippo_train") -> list[tuple[Any, ...]]:
    runs = load_timings(directory).stages[stage].runs
    return [(r.run_idx, r.rank, r.world_size, r.seconds, r.metadata.get("launch")) for r in runs]


def expected(number: int = 1) -> list[tuple[Any, ...]]:
    return [
        (seed, rank, RANKS, 1.0 + seed + 0.1 * rank, number)
        for seed in range(SEEDS) for rank in range(RANKS)
    ]


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
@pytest.mark.parametrize("policy", ["sequential", "upsert"])
def test_four_ranks_three_seeds_keep_every_run(launcher: str, policy: str, tmp_path: Path) -> None:
    launch(launcher, tmp_path, policy)

    runs = ranked_runs(tmp_path)

    assert expected() == sorted(runs)
    if policy == "upsert":  # sorted by run_idx, then rank, however the ranks raced
        assert expected() == runs


@pytest.mark.parametrize("policy", ["sequential", "upsert"])
def test_a_second_launch_replaces_each_rank_s_own_runs(policy: str, tmp_path: Path) -> None:
    launch("torchrun", tmp_path, policy, number=1)
    launch("torchrun", tmp_path, policy, number=2)

    assert expected(2) == sorted(ranked_runs(tmp_path))
    assert [0.5] * 12 == [r[3] for r in ranked_runs(tmp_path, "checkpoint_save")]


def test_the_report_counts_each_seed_once_as_its_slowest_rank(tmp_path: Path) -> None:
    launch("srun", tmp_path, "upsert")

    [artifact], problems = build_report([tmp_path])
    stats = {s.name: s for s in artifact.stages}["ippo_train"]

    assert [] == problems
    assert (3, pytest.approx(1.3 + 2.3 + 3.3), pytest.approx(2.3)) == (
        stats.runs, stats.total_seconds, stats.mean_seconds
    )
    assert RankSpread(ranks=4, seeds=3, max_seconds=pytest.approx(0.3),
                      median_seconds=pytest.approx(0.3)) == stats.rank_spread
    text = render_text([artifact])
    assert "ranks: ippo_train 3 seeds \N{MULTIPLICATION SIGN} 4 ranks, each seed counted once as " \
        "its slowest rank; ranks apart by up to 300 ms (median 300 ms)" in text
    assert "checkpoint_save 3 seeds" in text  # its ranks tie: a spread of 0


def test_the_table_and_compare_count_seeds_and_to_records_keeps_ranks(tmp_path: Path) -> None:
    launch("mpirun", tmp_path / "base", "upsert")
    launch("mpirun", tmp_path / "new", "upsert")

    table = build_table(load_tree(tmp_path / "base"))
    comparison = compare(tmp_path / "base", tmp_path / "new")
    rows = [r for r in to_records(tmp_path / "base") if r["stage"] == "ippo_train"]

    assert 3 == table.cells[0]["ippo_train"].runs
    assert pytest.approx(2.3) == table.cells[0]["ippo_train"].mean
    stage = {s.name: s for s in comparison.pairs[0].stages}["ippo_train"]
    assert (3, 3, pytest.approx(1.0)) == (stage.base.runs, stage.new.runs, stage.ratio)
    assert sorted((r["run_idx"], r["rank"], r["world_size"]) for r in rows) == [
        (seed, rank, 4) for seed in range(SEEDS) for rank in range(RANKS)
    ]


# -- the rules, run by run ---------------------------------------------------------------


def run(
    seconds: float, run_idx: int | None, rank: int | None = None, **extra: Any
) -> dict[str, Any]:
    found: dict[str, Any] = {"seconds": seconds, "hardware_id": "hw-x"}
    if run_idx is not None:
        found["run_idx"] = run_idx
    if rank is not None:
        found.update(rank=rank, world_size=2)
    return {**found, **extra}


def test_sequential_run_0_resets_only_its_own_rank() -> None:
    data: dict[str, Any] = {}
    for r in (run(1, 0, 0), run(2, 0, 1), run(3, 1, 0), run(4, 1, 1), run(5, 0, 0)):
        apply_run(data, "ippo_train", r, "sequential")

    assert [run(2, 0, 1), run(4, 1, 1), run(5, 0, 0)] == data["ippo_train"]["runs"]
    assert 11.0 == data["ippo_train"]["total_seconds"]


def test_sequential_run_0_clears_only_its_own_rank_s_continuation() -> None:
    data: dict[str, Any] = {
        "ippo_train_auto_resume": {"total_seconds": 3.0, "runs": [run(1, 0, 0), run(2, 0, 1)]}
    }
    apply_run(data, "ippo_train", run(9, 0, 0), "sequential")

    assert {"total_seconds": 2.0, "runs": [run(2, 0, 1)]} == data["ippo_train_auto_resume"]
    apply_run(data, "ippo_train", run(9, 0, 1), "sequential")
    assert "ippo_train_auto_resume" not in data


def test_runs_without_a_rank_are_one_group_of_their_own() -> None:
    data: dict[str, Any] = {}
    for r in (run(1, 0, 0), run(2, 0), run(3, 1), run(4, 0)):
        apply_run(data, "ippo_train", r, "sequential")

    assert [run(1, 0, 0), run(4, 0)] == data["ippo_train"]["runs"]


def test_a_stage_without_run_idx_is_replaced_per_rank() -> None:
    data: dict[str, Any] = {}
    for r in (run(1, None, 0), run(2, None, 1), run(3, None, 0)):
        apply_run(data, "alpharank", r, "sequential")

    assert [run(2, None, 1), run(3, None, 0)] == data["alpharank"]["runs"]


def test_upsert_keys_on_run_idx_label_and_rank() -> None:
    data: dict[str, Any] = {}
    for r in (run(1, 1, 1), run(2, 1, 0), run(3, 0, 1), run(4, 1, 1), run(5, 1, 1, label="b")):
        apply_run(data, "ippo_train", r, "upsert")

    assert [run(3, 0, 1), run(2, 1, 0), run(4, 1, 1), run(5, 1, 1, label="b")] == (
        data["ippo_train"]["runs"]
    )


# -- which launcher: the rank and world size from the environment ------------------------


@pytest.mark.parametrize(
    ("environ", "expected_rank"),
    [
        ({"RANK": "3", "WORLD_SIZE": "4"}, (3, 4)),
        ({"SLURM_PROCID": "5", "SLURM_NTASKS": "8"}, (5, 8)),
        ({"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2"}, (1, 2)),
        ({"PMI_RANK": "0", "PMI_SIZE": "16"}, (0, 16)),
        # torchrun's variables win over the Slurm step around it
        ({"RANK": "2", "WORLD_SIZE": "4", "SLURM_PROCID": "0", "SLURM_NTASKS": "1"}, (2, 4)),
        # a Slurm step of one task (every job array task) is no distributed launch
        ({"SLURM_PROCID": "0", "SLURM_NTASKS": "1"}, None),
        ({"RANK": "0", "WORLD_SIZE": "1"}, None),
        # not a rank below a world size: passed over for the next launcher's pair
        ({"RANK": "4", "WORLD_SIZE": "4", "PMI_RANK": "1", "PMI_SIZE": "2"}, (1, 2)),
        ({"RANK": "-1", "WORLD_SIZE": "4"}, None),
        ({"RANK": "x", "WORLD_SIZE": "4"}, None),
        ({"RANK": "1"}, None),
        ({}, None),
    ],
)
def test_rank_from_the_launcher_s_environment(
    environ: dict[str, str], expected_rank: tuple[int, int] | None
) -> None:
    assert expected_rank == rank_of(environ)


TORCHRUN_SCRIPT = """
import sys
import torch.distributed as dist
from stagetimer import Recorder, stage
dist.init_process_group("gloo")
with Recorder(sys.argv[1], policy="upsert"):
    for seed in range(3):
        with stage("ippo_train", run_idx=seed):
            dist.barrier()
dist.destroy_process_group()
"""


def test_a_real_torchrun_launch_keeps_every_rank(tmp_path: Path) -> None:
    pytest.importorskip("torch.distributed")
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(TORCHRUN_SCRIPT))
    directory = tmp_path / "out"

    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "4",
         str(script), str(directory)],
        capture_output=True, text=True, timeout=300, check=False,
    )

    assert 0 == done.returncode, done.stderr[-2000:]
    runs = load_timings(directory).stages["ippo_train"].runs
    assert [(s, r, 4) for s in range(3) for r in range(4)] == [
        (x.run_idx, x.rank, x.world_size) for x in runs
    ]
    assert json.loads((directory / "timings_hardware.json").read_text())["software"]


# -- ranks are independent writers: a property over any interleaving -----------------------

_RECORDS = st.lists(
    st.tuples(
        st.sampled_from([None, 0, 1, 2]),  # rank (None: a process without one)
        st.sampled_from([None, 0, 1, 2, 3]),  # run_idx
        st.sampled_from([None, "a"]),  # label
    ),
    max_size=25,
)


def _record(i: int, rank: int | None, run_idx: int | None, label: str | None) -> dict[str, Any]:
    found = run(float(i), run_idx, rank)
    if label is not None:
        found["label"] = label
    return found


@settings(max_examples=300, deadline=None)
@given(records=_RECORDS, policy=st.sampled_from(["sequential", "upsert"]))
def test_each_rank_ends_as_if_it_had_written_alone(
    records: list[tuple[int | None, int | None, str | None]], policy: str
) -> None:
    together: dict[str, Any] = {}
    for i, fields in enumerate(records):
        apply_run(together, "ippo_train", _record(i, *fields), policy)

    for rank in {fields[0] for fields in records}:
        alone: dict[str, Any] = {}
        for i, fields in enumerate(records):
            if fields[0] == rank:
                apply_run(alone, "ippo_train", _record(i, *fields), policy)
        mine = [r for r in together["ippo_train"]["runs"] if r.get("rank") == rank]
        assert alone["ippo_train"]["runs"] == mine


def test_the_report_lists_each_rank_s_run_with_runs(tmp_path: Path) -> None:
    launch("hydra", tmp_path, "upsert")

    [artifact], _ = build_report([tmp_path])
    text = render_text([artifact], runs=True)

    listed = [line for line in text.splitlines() if line.startswith("    ippo_train ")]
    assert 12 == len(listed)
    ranks = [0, 1, 2, 3] * 3
    assert all(f"  rank {r} of 4  " in line for line, r in zip(listed, ranks, strict=True))
