"""Values no writer stores, hand-edited into the files, are named in the compute statement
as the report names impossible seconds, and left out of its sums."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.cli import run_cli
from helpers.compute_trees import CPU_ONLY, run, write

from stagetimer._analysis.compute import compute_statement


def _tree(tmp_path: Path) -> Path:
    write(tmp_path / "exp", {"hw-cpu": CPU_ONLY, "hw-neg": {**CPU_ONLY, "cpu": {
        "model_name": "Intel Xeon Gold 6248", "logical_cpus": -4}}}, {
        "train": [
            run(10, "hw-cpu", 0, cpu_seconds=1e308),  # 10 s on 2 CPUs give at most 20 s
            run(10, "hw-cpu", 1, cpu_seconds=-5.0, gpu_energy_joules=-1.0),
            run(10, "hw-cpu", 2, cpu_seconds=12.0),  # possible: counted as stored
        ],
        "eval": [run(3600, "hw-neg", 0)],
    })
    return tmp_path


def test_absurd_values_are_flagged_and_left_out_of_the_sums(tmp_path: Path) -> None:
    statement = compute_statement(_tree(tmp_path))

    cpu, neg = sorted(statement.hardware, key=lambda h: h.hardware_id)
    # 12 s recorded, and 2 x 10 s x 2 CPUs of wall time for the two impossible ones.
    assert round(cpu.total.cpu_core_hours * 3600, 9) == 52.0
    assert cpu.total.cpu_recorded_runs == 1
    assert cpu.total.energy_kwh == 0.0 and cpu.total.energy_runs == 0
    assert (neg.logical_cpus, neg.total.cpu_core_hours) == (0, 0.0)
    where = f"{tmp_path / 'exp'}: stage train"
    assert statement.flags == [
        f"{where} run 0: cpu_seconds 1e+308 is more than 10 s of wall time on 2 logical CPUs "
        "give; no writer stores that, so wall time x logical CPUs is used",
        f"{where} run 1: cpu_seconds -5 is negative; no writer stores that, so it is left out",
        f"{where} run 1: gpu_energy_joules -1 is negative; no writer stores that, so it is "
        "left out",
        "hardware hw-neg: logical_cpus -4 is not a count of CPUs; no writer stores that, so "
        "its runs without recorded CPU time count no CPU core-hours",
    ]


def test_the_command_prints_the_flags_in_every_form(tmp_path: Path) -> None:
    tree = _tree(tmp_path)

    text = run_cli("compute", str(tree))
    data = json.loads(run_cli("compute", str(tree), "--json").stdout)
    markdown = run_cli("compute", str(tree), "--markdown").stdout
    latex = run_cli("compute", str(tree), "--latex").stdout

    assert text.returncode == 0
    assert "warning: " in text.stdout and "cpu_seconds 1e+308 is more than" in text.stdout
    assert "1e+308" not in text.stdout.split("To paste:")[1]
    assert len(data["flags"]) == 4
    assert markdown.count("**Warning:**") == 4
    assert latex.count("% Warning:") == 4
