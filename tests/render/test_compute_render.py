"""``stagetimer compute`` as text, Markdown, LaTeX and JSON; the report's and compare's
figures of what stages used."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers.compute_trees import CPU_ONLY, GIB, GPU_NODE, run, two_machine_tree, write

from stagetimer._cli import main


def compute(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["compute", *args]) == 0
    return capsys.readouterr().out


def test_markdown_renders_one_table_per_machine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    markdown_it = pytest.importorskip("markdown_it", reason="markdown-it-py is not installed")
    html = markdown_it.MarkdownIt("commonmark").enable("table").render(
        compute(capsys, str(two_machine_tree(tmp_path)), "--markdown")
    )
    assert html.count("<table>") == 2
    # The GPU node's training row, and an estimate's asterisk shown, not taken as emphasis.
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", html)
    assert cells[:6] == ["training", "2", "2 h 30 min", "10", "6", "2 kWh"]
    # The estimate's asterisk is shown, not taken as emphasis; the two notes are.
    assert "32*" in cells and html.count("<em>") == 2
    assert "training took 10 GPU-hours in all" in html


def test_latex_compiles(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    latex = compute(capsys, str(two_machine_tree(tmp_path)), "--latex")
    assert "4 $\\times$ NVIDIA H100 80GB HBM3" in latex
    assert latex.count("\\begin{tabular}") == 2
    pdflatex = shutil.which("pdflatex")
    if pdflatex is None:
        pytest.skip("pdflatex is not installed: the LaTeX was checked as text only")
    document = tmp_path / "statement.tex"
    document.write_text(
        "\\documentclass{article}\\usepackage{booktabs}\\begin{document}\n"
        + latex + "\\end{document}\n"
    )
    done = subprocess.run(
        [pdflatex, "-interaction=nonstopmode", "-halt-on-error", document.name],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:]


def test_json_holds_the_hand_sums_and_the_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = json.loads(compute(capsys, str(two_machine_tree(tmp_path)), "--json"))
    gpu, cpu = data["hardware"]
    assert gpu["families"]["training"]["gpu_hours"] == pytest.approx(10.0)
    assert gpu["total"]["energy_kwh"] == pytest.approx(2.02)
    assert cpu["total"]["cpu_core_hours"] == pytest.approx(3.2)
    assert cpu["total"]["energy_kwh"] is None
    assert data["sentence"].startswith("Experiments ran on 4 \N{MULTIPLICATION SIGN} NVIDIA H100")
    assert "2.02 kWh of GPU energy (measured for 4 of 5 runs)" in data["sentence"]


def test_text_says_which_core_hours_are_estimates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = compute(capsys, str(two_machine_tree(tmp_path)))
    assert "wall time x logical CPUs for the others (* marks estimates)" in text
    assert "1 run(s) left out: hardware not described" in text


def test_finite_durations_whose_sum_overflows_give_json_and_a_short_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Each stage may hold 1e308 s; their sum is past the largest float.
    from stagetimer import Recorder, record_timing

    rec = Recorder(tmp_path / "art")
    record_timing("train", 1e308, run_idx=0, recorder=rec)
    record_timing("evaluate", 1e308, run_idx=0, recorder=rec)

    [machine] = json.loads(compute(capsys, "--json", str(tmp_path)))["hardware"]
    text = compute(capsys, str(tmp_path))

    assert None is machine["total"]["wall_seconds"]  # inf: not JSON
    assert max(map(len, re.findall(r"\d+", text))) < 20, text  # no 300-digit number


def test_a_missing_path_is_status_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compute", str(tmp_path / "nowhere")]) == 1
    assert "nowhere" in capsys.readouterr().err


def test_report_shows_cpu_use_peak_of_the_limit_and_energy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path / "a", {"hw-gpu": GPU_NODE}, {
        "ippo_train": [
            run(100, "hw-gpu", 0, cpu_seconds=185, memory_peak_bytes=int(14.2 * GIB),
                gpu_energy_joules=312_000),
            run(100, "hw-gpu", 1, cpu_seconds=185),
        ],
    })
    assert main(["report", str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out
    assert (
        "ippo_train: CPU use 1.85 (CPU time / wall time), peak 14.2 GiB of 512 GiB, "
        "GPU energy 312 kJ (1 of 2 runs)"
    ) in out


def test_compare_shows_what_stages_used_side_by_side(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path / "base", {"hw-cpu": CPU_ONLY}, {
        "ippo_train": [run(10, "hw-cpu", i, cpu_seconds=9.8, memory_peak_bytes=2 * GIB)
                       for i in range(3)],
    })
    write(tmp_path / "new", {"hw-cpu": CPU_ONLY}, {
        "ippo_train": [run(10, "hw-cpu", i, cpu_seconds=19) for i in range(3)],
    })
    main(["compare", str(tmp_path / "base"), str(tmp_path / "new")])
    assert "  used: CPU use 0.98 -> 1.9, peak 2 GiB -> -" in capsys.readouterr().out
    main(["compare", "--json", str(tmp_path / "base"), str(tmp_path / "new")])
    [stage] = json.loads(capsys.readouterr().out)["pairs"][0]["stages"]
    assert stage["resources"]["base"]["memory_peak_bytes_max"] == 2 * GIB
    assert stage["resources"]["new"]["cpu_use"] == pytest.approx(1.9)


def test_names_from_the_files_stay_text_in_markdown_and_latex(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = "AMD_EPYC_9654 & co | 50% *fast* \\o/"
    write(tmp_path / "a", {"hw-odd": {**CPU_ONLY, "cpu": {"model_name": name, "logical_cpus": 2}}},
          {"ippo_train": [run(60, "hw-odd", 0, cpu_seconds=30)]})
    markdown_it = pytest.importorskip("markdown_it", reason="markdown-it-py is not installed")
    html = markdown_it.MarkdownIt("commonmark").enable("table").render(
        compute(capsys, str(tmp_path), "--markdown")
    )
    assert "AMD_EPYC_9654 &amp; co | 50% *fast* \\o/" in html
    latex = compute(capsys, str(tmp_path), "--latex")
    # "|" in OT1 prints an em dash: it is \textbar{} (latex_text, the table's escapes)
    assert "AMD\\_EPYC\\_9654 \\& co \\textbar{} 50\\% *fast* \\textbackslash{}o/" in latex


def test_markup_in_a_name_stays_text_in_markdown_and_compiles_in_latex(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = "<b>EPYC</b> [a](b) `c` \"q\" 'r' x-y \N{DEGREE SIGN}"
    write(tmp_path / "a", {"hw-odd": {**CPU_ONLY, "cpu": {"model_name": name, "logical_cpus": 2}}},
          {"ippo_train": [run(60, "hw-odd", 0, cpu_seconds=30)]})
    markdown_it = pytest.importorskip("markdown_it", reason="markdown-it-py is not installed")
    html = markdown_it.MarkdownIt("commonmark").enable("table").render(
        compute(capsys, str(tmp_path), "--markdown")
    )
    assert "&lt;b&gt;EPYC&lt;/b&gt; [a](b) `c` &quot;q&quot; 'r' x-y \N{DEGREE SIGN}" in html
    latex = compute(capsys, str(tmp_path), "--latex")
    assert "\\textless{}b\\textgreater{}EPYC" in latex and "\\textasciigrave{}c" in latex
    assert latex.isascii()
