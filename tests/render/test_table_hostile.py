"""``stagetimer table`` with names a writer allows but a format may choke on: the LaTeX
compiles (pdflatex, where installed), the Markdown renders to the names (GitHub's
renderer), and no CSV cell is a formula a spreadsheet would run."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers.cli import run_cli
from helpers.markdown import table_rows

HOSTILE = [
    "[0pt]x", "[", "]x[", "\\", "\\\\", "{", "}x{", "%", "&", "#", "$x$", "^", "~", "_",
    "<b>bold</b>", "--", "caf\N{LATIN SMALL LETTER E WITH ACUTE}", "\N{SNOWMAN}",
    "\\end{tabular}", "x\\\\[2pt]", "*x*", "a\\|b", "|", "`", "'", '"', "&amp;", " lead",
    "=HYPERLINK(\"http://x\")", "+1", "-1", "@SUM(A1)", "\\x", "ok",
]


def _write(directory: Path, stages: dict[str, list[float]]) -> None:
    directory.mkdir(parents=True)
    data = {
        name: {"total_seconds": sum(v), "runs": [{"seconds": s, "run_idx": i}
                                                 for i, s in enumerate(v)]}
        for name, v in stages.items()
    }
    (directory / "timings.json").write_text(json.dumps(data))


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    """One directory per hostile name (a row label), each a stage of that name."""
    root = tmp_path / "suite"
    for i, name in enumerate(HOSTILE):
        label = name.replace("/", "_").strip() or f"blank{i}"
        if label in (".", ".."):
            label = f"dots{i}"
        _write(root / f"{i:02d}" / label, {name: [1.0 + i, 2.0 + i]})
    return root


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex is not installed")
def test_latex_with_hostile_names_compiles_with_pdflatex(hostile: Path, tmp_path: Path) -> None:
    result = run_cli("table", "--latex", hostile)
    document = (
        "\\documentclass{article}\n\\usepackage{booktabs}\n\\begin{document}\n"
        + result.stdout + "\\end{document}\n"
    )
    (tmp_path / "t.tex").write_text(document, encoding="utf-8")

    compiled = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "t.tex"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )

    pdf = (tmp_path / "t.pdf").exists()
    assert (0, 0, True) == (result.returncode, compiled.returncode, pdf), compiled.stdout[-3000:]


def test_latex_row_starting_with_a_bracket_is_braced(tmp_path: Path) -> None:
    _write(tmp_path / "s" / "[0pt]x", {"train": [1.0, 2.0]})
    _write(tmp_path / "s" / "y", {"train": [1.0, 2.0]})

    lines = run_cli("table", "--latex", tmp_path / "s").stdout.splitlines()

    assert any(line.startswith("{[}0pt{]}x & ") for line in lines), lines


def test_markdown_renders_to_the_names_written(hostile: Path) -> None:
    result = run_cli("table", hostile)
    header, *rows = table_rows(result.stdout)
    labels = sorted(row[1] for row in rows)
    stages = sorted(cell.rsplit(" (", 1)[0] for cell in header[2:-1])
    expected_labels = sorted(
        (n.replace("/", "_").strip() or "") for n in HOSTILE
    )

    assert (0, sorted(HOSTILE), expected_labels) == (result.returncode, stages, labels)


@pytest.mark.parametrize("form", ["--csv"])
def test_no_csv_cell_starts_a_formula(hostile: Path, form: str) -> None:
    for command in (["table", form], ["report", "--csv"]):
        result = run_cli(*command, hostile)
        cells = [cell for row in csv.reader(io.StringIO(result.stdout)) for cell in row]
        starts = [cell for cell in cells if cell[:1] in ("=", "+", "-", "@")]
        assert (0, []) == (result.returncode, starts), command


def test_a_quoted_formula_keeps_its_text_after_the_quote(hostile: Path) -> None:
    rows = list(csv.DictReader(io.StringIO(run_cli("report", "--csv", hostile).stdout)))

    assert "'=HYPERLINK(\"http://x\")" in {row["stage"] for row in rows}
