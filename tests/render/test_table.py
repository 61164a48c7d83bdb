"""``stagetimer table``: a row per directory, a column per stage, mean ± sd (n) in one unit
per column, a total; GitHub Markdown, LaTeX booktabs and CSV (parsed back here)."""

from __future__ import annotations

import csv
import io
import statistics
from pathlib import Path

import pytest
from helpers.cli import Ran, run_cli
from helpers.markdown import table_rows

from stagetimer import Recorder, record_timing


def run(*args: str) -> Ran:
    return run_cli(*args)


def record(directory: Path, stage: str, seconds: list[float]) -> None:
    rec = Recorder(directory)
    for i, s in enumerate(seconds):
        record_timing(stage, s, run_idx=i, recorder=rec)


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    exp = tmp_path / "exp"
    for env in ("coins", "pursuit"):
        for algo, base in (("ippo", 100.0), ("iql", 200.0)):
            directory = exp / env / algo
            record(directory, f"{algo}_train", [base, base + 10, base + 20])
            record(directory, "checkpoint_save", [0.5, 0.7, 0.6])
    return exp


def markdown_rows(text: str) -> list[list[str]]:
    """The table as GitHub shows it: header, then each row (the alignment row is no row)."""
    header, *rows = table_rows(text)
    return [header, ["-"] * len(header), *rows]


def test_markdown_is_a_github_table_with_a_row_per_directory(suite: Path) -> None:
    result = run("table", str(suite))

    assert 0 == result.returncode, result.stderr
    rows = markdown_rows(result.stdout)
    assert ["level 1", "algorithm", "ippo_train (s)", "checkpoint_save (ms)",
            "iql_train (min)", "total"] == rows[0]
    assert [["coins", "ippo"], ["coins", "iql"], ["pursuit", "ippo"], ["pursuit", "iql"]] == [
        r[:2] for r in rows[2:]
    ]


def test_a_cell_is_mean_plus_minus_sd_and_runs_in_its_columns_unit(suite: Path) -> None:
    rows = markdown_rows(run("table", str(suite)).stdout)

    ippo = rows[2]
    assert "110 \N{PLUS-MINUS SIGN} 10.0 (3)" == ippo[2]
    assert "600 \N{PLUS-MINUS SIGN} 100 (3)" == ippo[3]
    assert "" == ippo[4]  # coins/ippo has no iql_train
    assert "5 min 32 s" == ippo[5]  # 330 + 1.8 s, a duration
    assert "3.50 \N{PLUS-MINUS SIGN} 0.167 (3)" == rows[3][4]  # 210 s: minutes


def test_median_cells_are_the_median_and_quartiles(suite: Path) -> None:
    rows = markdown_rows(run("table", "--median", str(suite)).stdout)

    assert "110 [105, 115] (3)" == rows[2][2]
    assert "600 [550, 650] (3)" == rows[2][3]


def test_directories_of_different_depths_are_one_path_column(tmp_path: Path) -> None:
    record(tmp_path / "a" / "ippo", "ippo_train", [1.0])
    record(tmp_path / "b" / "deeper" / "ippo", "ippo_train", [2.0])

    rows = markdown_rows(run("table", str(tmp_path)).stdout)

    assert ["directory", "a/ippo", "b/deeper/ippo"] == [rows[0][0], rows[2][0], rows[3][0]]


def test_stage_columns_follow_the_order_stages_were_first_seen(tmp_path: Path) -> None:
    record(tmp_path / "a", "zeta", [1.0])
    record(tmp_path / "a", "alpha", [1.0])
    record(tmp_path / "b", "mid", [1.0])

    header = markdown_rows(run("table", str(tmp_path)).stdout)[0]

    assert ["zeta", "alpha", "mid"] == [h.split(" (")[0] for h in header[1:-1]]


def test_latex_uses_booktabs_rules_and_escapes_underscores(suite: Path) -> None:
    result = run("table", "--latex", str(suite))

    assert 0 == result.returncode, result.stderr
    lines = result.stdout.splitlines()
    assert r"\begin{tabular}{llrrrr}" in lines
    assert [r"\toprule", r"\midrule", r"\bottomrule"] == [
        line for line in lines if line in (r"\toprule", r"\midrule", r"\bottomrule")
    ]
    assert (
        r"coins & ippo & 110 $\pm$ 10.0 (3) & 600 $\pm$ 100 (3) &  & 5 min 32 s \\" in lines
    )
    assert r"level 1 & algorithm & ippo\_train (s) & checkpoint\_save (ms) & " \
        r"iql\_train (min) & total \\" in lines


def test_csv_parses_back_to_the_raw_seconds(suite: Path) -> None:
    result = run("table", "--csv", str(suite))

    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert 4 == len(rows)
    first = rows[0]
    assert str(suite / "coins" / "ippo") == first["artifact"]
    assert 110.0 == float(first["ippo_train_mean_seconds"])
    assert statistics.stdev([100.0, 110.0, 120.0]) == pytest.approx(
        float(first["ippo_train_stdev_seconds"])
    )
    assert "3" == first["ippo_train_runs"]
    assert "" == first["iql_train_mean_seconds"]
    assert 331.8 == pytest.approx(float(first["total_seconds"]))


def test_csv_with_median_adds_median_and_quartile_columns(suite: Path) -> None:
    rows = list(csv.DictReader(io.StringIO(run("table", "--csv", "--median", str(suite)).stdout)))

    assert (110.0, 105.0, 115.0) == (
        float(rows[0]["ippo_train_median_seconds"]), float(rows[0]["ippo_train_q1_seconds"]),
        float(rows[0]["ippo_train_q3_seconds"]),
    )


def test_formats_are_exclusive() -> None:
    result = run("table", "--latex", "--csv", ".")

    assert 2 == result.returncode
    assert "not allowed with argument" in result.stderr


def test_a_missing_path_exits_1_with_one_line(tmp_path: Path) -> None:
    result = run("table", str(tmp_path / "missing"))

    assert 1 == result.returncode
    assert [f"stagetimer table: {tmp_path / 'missing'}: no such file or directory"] == (
        result.stderr.splitlines()
    )


def test_runs_no_writer_stores_are_left_out_of_the_cells(tmp_path: Path) -> None:
    record(tmp_path / "a", "nashconv", [1.0, 3.0])
    path = tmp_path / "a" / "timings.json"
    path.write_text(path.read_text().replace('"seconds": 3.0', '"seconds": -5.0'))

    rows = markdown_rows(run("table", str(tmp_path / "a")).stdout)

    assert "1.00 (1)" == rows[2][1]


def test_escape_sequences_in_stage_names_are_escaped(tmp_path: Path) -> None:
    record(tmp_path / "a", "nash", [1.0])
    path = tmp_path / "a" / "timings.json"
    path.write_text(path.read_text().replace('"nash"', '"nash\\u001b[2J"'))

    result = run("table", str(tmp_path / "a"))

    assert "\x1b" not in result.stdout
    assert "nash\\x1b[2J (s)" == markdown_rows(result.stdout)[0][1]
