"""``stagetimer report --plot``: a PNG or SVG of the stage totals, and a clear message
(exit 1, no traceback) where matplotlib is not installed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers.cli import Ran, run_cli, run_process

from stagetimer import Recorder, record_timing


def run(*args: str) -> Ran:
    return run_cli(*args)


@pytest.fixture
def exports(tmp_path: Path) -> Path:
    for algo in ("ippo", "iql_cer"):
        rec = Recorder(tmp_path / "exports" / "pursuit" / "classic_3" / algo)
        for i, seconds in enumerate((0.2, 0.3, 0.25)):
            record_timing(f"{algo}_train", seconds, run_idx=i, recorder=rec)
            record_timing("checkpoint_save", 0.01, run_idx=i, recorder=rec)
        record_timing("alpharank", 0.4, recorder=rec)
    return tmp_path / "exports"


def test_plot_png_is_written(exports: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "stages.png"

    result = run("report", str(exports), "--plot", str(out))

    assert 0 == result.returncode, result.stderr
    assert b"\x89PNG\r\n\x1a\n" == out.read_bytes()[:8]


def test_plot_svg_is_written_with_the_directories_and_families(
    exports: Path, tmp_path: Path
) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "stages.svg"

    result = run("report", "--json", str(exports), "--plot", str(out))

    assert 0 == result.returncode, result.stderr
    text = out.read_text()
    assert "<svg" in text
    shown = ["ippo", "iql_cer", "training", "checkpoint_save", "alpharank"]
    assert shown == [label for label in shown if f">{label}<" in text]


def test_plot_with_json_keeps_stdout_pure_json(exports: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")

    result = run("report", "--json", str(exports), "--plot", str(tmp_path / "p.png"))

    assert result.stdout.startswith("{") and result.stdout.rstrip().endswith("}")
    assert f"plot written to {tmp_path / 'p.png'}" in result.stderr


def test_plot_needs_png_or_svg_suffix(exports: Path, tmp_path: Path) -> None:
    result = run("report", str(exports), "--plot", str(tmp_path / "stages.pdf"))

    assert 2 == result.returncode
    assert "must end in .png or .svg" in result.stderr
    assert not (tmp_path / "stages.pdf").exists()


def test_without_matplotlib_one_line_says_how_to_install_it(exports: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "no_matplotlib" / "matplotlib"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('No module named matplotlib')\n")
    env = {**os.environ, "PYTHONPATH": str(blocker.parent)}
    out = tmp_path / "stages.png"

    result = run_process("report", str(exports), "--plot", str(out), env=env)  # no matplotlib

    assert 1 == result.returncode
    [line] = result.stderr.splitlines()
    assert "pip install 'stagetimer[plot]'" in line
    assert "Traceback" not in result.stderr
    assert not out.exists()


def test_the_plot_and_the_table_fold_a_continuation_alike(tmp_path: Path) -> None:
    """One fold (``folding.seed_times``): a seed with only a continuation still ran."""
    from stagetimer._analysis.report import report_from
    from stagetimer._analysis.table import build_table
    from stagetimer._analysis.tree import scan_tree
    from stagetimer._render.report_plot_rows import rows

    rec = Recorder(tmp_path / "a")
    record_timing("ippo_train", 10.0, run_idx=0, recorder=rec)
    record_timing("ippo_train", 10.0, run_idx=1, recorder=rec)
    record_timing("ippo_train_auto_resume", 5.0, run_idx=1, recorder=rec)
    record_timing("ippo_train_auto_resume", 7.0, run_idx=2, recorder=rec)
    artifacts, _ = scan_tree([tmp_path / "a"])

    [row] = rows(report_from(artifacts))
    table = build_table(artifacts, fold_continuations=True)

    assert (10.0, 15.0, 7.0) == row.bars["training"].seeds
    assert 32.0 == table.cells[0]["ippo_train"].total
    assert 3 == table.cells[0]["ippo_train"].runs
