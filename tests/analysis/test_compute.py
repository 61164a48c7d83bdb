"""The compute statement on trees written directly in the file format, against sums by hand
(``helpers/compute_trees.py`` works them out)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.compute_trees import GIB, H100, two_machine_tree

from stagetimer import to_records
from stagetimer._analysis.compute import compute_statement, family


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return two_machine_tree(tmp_path)


def test_families() -> None:
    assert [family(n) for n in (
        "ippo_train", "cfr_train_auto_resume", "checkpoint_save", "nashconv",
        "nashconv_auto_resume", "alpharank", "_train",
    )] == ["training", "training", "checkpoint", "NashConv", "NashConv", "the rest", "the rest"]


def test_gpu_node_against_hand_sums(tree: Path) -> None:
    statement = compute_statement(tree)
    gpu, _ = statement.hardware  # the longest wall time first
    assert (gpu.hardware_id, gpu.gpu_count, gpu.gpu_names) == ("hw-gpu", 4, (H100,))
    assert (statement.undescribed_runs, statement.invalid_runs) == (1, 1)

    training = gpu.families["training"]
    assert training.gpu_hours == pytest.approx(10.0)
    assert training.cpu_core_hours == pytest.approx(6.0)
    assert training.energy_kwh == pytest.approx(2.0)
    assert training.cpu_source == "recorded CPU time"

    checkpoint = gpu.families["checkpoint"]
    assert checkpoint.gpu_hours == pytest.approx(120 * 4 / 3600)
    assert checkpoint.energy_kwh == pytest.approx(0.02)

    nashconv = gpu.families["NashConv"]
    assert (nashconv.gpu_hours, nashconv.cpu_core_hours) == (pytest.approx(2.0), 32.0)
    assert nashconv.cpu_source == "wall time x logical CPUs"
    assert nashconv.energy_runs == 0

    total = gpu.total
    assert total.wall_seconds == 3600 + 5400 + 120 + 1800
    assert total.gpu_hours == pytest.approx(10 + 120 * 4 / 3600 + 2)
    assert total.cpu_core_hours == pytest.approx(6 + 60 / 3600 + 32)
    assert total.energy_kwh == pytest.approx(2.02)
    assert (total.energy_runs, total.runs) == (4, 5)
    assert total.cpu_source.startswith("recorded CPU time for 4 of 5 runs")


def test_cpu_only_machine_against_hand_sums(tree: Path) -> None:
    cpu = compute_statement(tree).hardware[1]
    assert (cpu.gpu_count, cpu.logical_cpus, cpu.memory_limit_bytes) == (0, 2, 8 * GIB)
    assert cpu.families["training"].cpu_core_hours == pytest.approx(3.0)
    assert cpu.families["the rest"].cpu_core_hours == pytest.approx(0.2)
    assert cpu.total.gpu_hours == 0.0
    assert cpu.total.energy_runs == 0
    assert cpu.to_dict()["total"]["energy_kwh"] is None  # not recorded: absent, not 0


def test_to_records_carries_the_four_columns(tree: Path) -> None:
    rows = {(r["stage"], r["run_idx"]): r for r in to_records(tree / "gpu")}
    first = rows[("ippo_train", 0)]
    assert (
        first["cpu_seconds"], first["children_cpu_seconds"], first["memory_peak_bytes"],
        first["gpu_energy_joules"],
    ) == (7200, 3600, 100 * GIB, 3.6e6)
    nashconv = rows[("nashconv", None)]
    assert [nashconv[k] for k in ("cpu_seconds", "memory_peak_bytes")] == [None, None]
