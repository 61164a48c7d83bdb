"""``stagetimer compare``: the count of comparisons and the explanation in the text,
``--markdown`` as GitHub shows it, ``--paired`` and the exit statuses, and outputs that
survive any name or number the format allows."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers.cli import run_cli
from helpers.compare_trees import lognormal, write_artifact
from helpers.markdown import rendered

SLOW = {"train": [10.0, 10.2, 9.9, 10.1, 10.0]}
SLOWER = {"train": [13.0, 13.1, 12.9, 13.0, 13.2]}


def _tree(root: Path, stages: dict[str, list[float]], names: list[str]) -> Path:
    for name in names:
        write_artifact(root / name, stages)
    return root


def test_text_says_how_many_comparisons_the_verdicts_were_adjusted_over(tmp_path: Path) -> None:
    base = _tree(tmp_path / "base", {**SLOW, "save": [1.0, 1.1]}, ["a", "b"])
    new = _tree(tmp_path / "new", {**SLOWER, "save": [1.0, 1.1]}, ["a", "b"])

    last = run_cli("compare", base, new).stdout.splitlines()[-1]

    assert last == (
        "2 pair(s), 4 stage(s): 2 slower, 2 no significant difference (threshold 2 %; Welch's "
        "t on log-seconds; 4 comparisons, a verdict needs the Benjamini-Hochberg q <= 0.05 "
        "over all of them)"
    )


def test_an_interval_excluding_1_without_a_verdict_is_explained(tmp_path: Path) -> None:
    # p about 0.01 alone; beside 99 stages of no change, q about 0.5
    base, new = [1.0, 1.1, 0.9, 1.05, 0.95], [1.2, 1.3, 1.1, 1.25, 1.15]
    same = {f"t{i}": lognormal(i, 1.0, 0.2, 5) for i in range(99)}
    write_artifact(tmp_path / "base", {"s": base, **same})
    write_artifact(tmp_path / "new", {"s": new, **same})

    line = run_cli("compare", tmp_path / "base", tmp_path / "new").stdout.splitlines()[3]

    assert line.startswith("s: ") and line.endswith(
        "; the 95 % interval excludes 1, but adjusted over 100 comparisons q = 0.441 > 0.05: "
        "one such interval in 20 is expected by chance"
    ), line


def test_a_change_below_the_threshold_is_explained(tmp_path: Path) -> None:
    write_artifact(tmp_path / "base", {"s": [1.0, 1.001, 0.999, 1.0]})
    write_artifact(tmp_path / "new", {"s": [1.01, 1.011, 1.009, 1.01]})

    out = run_cli("compare", "--threshold", "5", tmp_path / "base", tmp_path / "new").stdout

    assert "the interval excludes 1, but the change is below the 5 % threshold" in out


def test_json_has_p_q_comparisons_paired_and_software_differences(tmp_path: Path) -> None:
    write_artifact(tmp_path / "base", SLOW)
    write_artifact(tmp_path / "new", SLOWER)

    data = json.loads(run_cli("compare", "--json", tmp_path / "base", tmp_path / "new").stdout)
    (pair,) = data["pairs"]
    (stage,) = pair["stages"]

    assert (1, False, None, [], True, True) == (
        data["comparisons"], data["paired"], data["pairs_of_runs"], pair["software_differences"],
        0 < stage["p_value"] < 1e-6, stage["q_value"] == stage["p_value"],
    )


def test_paired_json_counts_the_pairs_of_runs(tmp_path: Path) -> None:
    write_artifact(tmp_path / "base", SLOW)
    write_artifact(tmp_path / "new", {"train": SLOWER["train"][:3]})

    data = json.loads(
        run_cli("compare", "--json", "--paired", tmp_path / "base", tmp_path / "new").stdout
    )
    (stage,) = data["pairs"][0]["stages"]

    assert (True, 3, 3, {"base": 2, "new": 0}) == (
        data["paired"], data["pairs_of_runs"], stage["pairs_of_runs"], stage["unmatched_runs"],
    )


@pytest.mark.parametrize(
    ("args", "status"),
    [
        (["--fail-if-slower", "5"], 3),  # a regression
        (["--fail-if-slower", "50"], 0),  # slower, but within the gate
        (["--fail-if-slowr", "5"], 2),  # a typo: usage error
        (["--threshold", "x"], 2),
        (["--json", "--markdown"], 2),
    ],
)
def test_exit_status_tells_a_regression_from_a_usage_error(
    tmp_path: Path, args: list[str], status: int
) -> None:
    write_artifact(tmp_path / "base", SLOW)
    write_artifact(tmp_path / "new", SLOWER)

    assert status == run_cli("compare", *args, tmp_path / "base", tmp_path / "new").returncode


def test_a_missing_side_exits_1(tmp_path: Path) -> None:
    write_artifact(tmp_path / "base", SLOW)

    result = run_cli("compare", "--fail-if-slower", "5", tmp_path / "base", tmp_path / "gone")

    assert (1, 1) == (result.returncode, len(result.stderr.splitlines()))


# -- --markdown -------------------------------------------------------------------------


HOSTILE = ["a\\|b", "*x*", "<b>bold</b>", "&amp;", "[l](http://x)", "# h", "`c`", "_u_"]


def test_markdown_is_a_pull_request_comment(tmp_path: Path) -> None:
    base = {"regressed": SLOW["train"], "improved": SLOWER["train"], "same": [1.0, 1.1, 0.9]}
    new = {"regressed": SLOWER["train"], "improved": SLOW["train"], "same": [1.0, 1.1, 0.9]}
    write_artifact(tmp_path / "base", base)
    write_artifact(tmp_path / "new", new)

    result = run_cli("compare", "--markdown", tmp_path / "base", tmp_path / "new")
    page = rendered(result.stdout)
    first = next(text for tag, text in page.blocks if tag == "p")

    assert (
        0,
        ["Regressions (1)", "Improvements (1)"],
        ["1 other stage: no significant difference or too few runs"],
        [["regressed"], ["improved"], ["same"]],
    ) == (
        result.returncode,
        [text for tag, text in page.blocks if tag == "h4"],
        [text for tag, text in page.blocks if tag == "summary"],
        [row[:1] for row in page.rows if row[0] != "stage"],
    )
    assert first.startswith(
        ":x: stagetimer compare: 1 slower, 1 faster, 1 no significant difference (1 pair of "
        "directories; 3 comparisons"
    ), first
    assert result.stdout.index("Improvements") < result.stdout.index("<details>")
    # the helper's trees record no software: the comment does not claim it is the same
    assert "Same hardware on both sides (by the fields that change timings); the software " \
        "was not recorded." in result.stdout


def test_markdown_names_render_as_written(tmp_path: Path) -> None:
    stages = {name: [1.0, 1.1, 1.2] for name in HOSTILE}
    for side in ("base", "new"):
        for directory in ("x*y*", "p|q"):
            write_artifact(tmp_path / side / directory, stages)

    result = run_cli("compare", "--markdown", tmp_path / "base", tmp_path / "new")
    rows = [row for row in rendered(result.stdout).rows if row[0] != "directory"]

    assert (0, sorted(HOSTILE * 2), sorted(["x*y*"] * 8 + ["p|q"] * 8)) == (
        result.returncode, sorted(row[1] for row in rows), sorted(row[0] for row in rows),
    )


def test_markdown_names_the_hardware_difference(tmp_path: Path) -> None:
    import attrs
    from helpers.compare_trees import GIB, MACHINE

    from stagetimer.hardware import MemoryInfo

    smaller = attrs.evolve(MACHINE, memory=MemoryInfo(limit_bytes=8 * GIB, source="cgroup_v1"))
    write_artifact(tmp_path / "base", SLOW)
    write_artifact(tmp_path / "new", SLOW, hardware=(smaller,))

    page = rendered(run_cli("compare", "--markdown", tmp_path / "base", tmp_path / "new").stdout)
    items = [text for tag, text in page.blocks if tag == "li"]

    assert 1 == len(items) and items[0].startswith("hardware: memory"), items


# -- any name, any number ---------------------------------------------------------------------


def test_json_survives_a_directory_name_that_is_not_utf8(tmp_path: Path) -> None:
    odd = os.fsdecode(b"caf\xe9")
    for side in ("base", "new"):
        write_artifact(tmp_path / side / odd, SLOW)

    for command in (["compare", "--json", tmp_path / "base", tmp_path / "new"],
                    ["report", "--json", tmp_path / "base"],
                    ["compare", "--markdown", tmp_path / "base", tmp_path / "new"],
                    ["compare", tmp_path / "base", tmp_path / "new"]):
        result = run_cli(*command)
        assert (0, "") == (result.returncode, result.stderr), command
    data = json.loads(run_cli("compare", "--json", tmp_path / "base", tmp_path / "new").stdout)
    assert os.fsencode(data["pairs"][0]["new"]).endswith(b"/caf\xe9")


@pytest.mark.parametrize("flag", [[], ["--json"], ["--markdown"], ["--paired"]])
def test_extreme_durations_never_overflow(tmp_path: Path, flag: list[str]) -> None:
    write_artifact(tmp_path / "base", {"s": [0.0, 1e300], "t": [1e308, 1e308]})
    write_artifact(tmp_path / "new", {"s": [1.0, 2.0], "t": [1e308, 1e308]})

    result = run_cli("compare", *flag, tmp_path / "base", tmp_path / "new")

    assert (0, "") == (result.returncode, result.stderr)
    if flag == ["--json"]:
        json.loads(result.stdout)


def test_extreme_durations_plot(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    write_artifact(tmp_path / "base", {"s": [0.0, 1e300], "t": [1e308, 1e308]})
    write_artifact(tmp_path / "new", {"s": [1.0, 2.0], "t": [1e308, 1e308]})

    result = run_cli("compare", "--plot", tmp_path / "c.png", tmp_path / "base", tmp_path / "new")

    assert (0, True) == (result.returncode, (tmp_path / "c.png").stat().st_size > 0)


def _remove_deep(root: Path, depth: int) -> None:
    """Remove the chain ``root/d/d/...`` bottom up (shutil.rmtree, and so pytest's clean-up
    of old temporary directories, recurses once per level)."""
    here = os.getcwd()
    try:
        os.chdir(root)
        for _ in range(depth):
            os.chdir("d")
        for name in os.listdir("."):
            os.unlink(name)
        for _ in range(depth):
            os.chdir("..")
            os.rmdir("d")
    finally:
        os.chdir(here)


def test_a_tree_deeper_than_the_recursion_limit_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    deep = tmp_path / "deep"
    deep.mkdir()
    monkeypatch.chdir(deep)
    for _ in range(1100):  # one level at a time: pathlib's mkdir(parents=True) recurses
        os.mkdir("d")
        os.chdir("d")
    write_artifact(Path("."), SLOW)
    monkeypatch.chdir(tmp_path)
    request.addfinalizer(lambda: _remove_deep(deep, 1100))

    for command in (["report", deep], ["table", deep], ["compare", deep, deep]):
        result = run_cli(*command)
        assert (0, "") == (result.returncode, result.stderr), command


def test_report_plot_of_extreme_durations_is_drawn_without_warnings(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    write_artifact(tmp_path / "a", {"s": [0.0, 1e300], "t": [1e308, 1e308], "u": [1e-6, 2e-6]})

    result = run_cli("report", "--plot", tmp_path / "r.png", tmp_path / "a")

    assert (0, True) == (result.returncode, (tmp_path / "r.png").stat().st_size > 0)
    assert "Warning" not in result.stderr, result.stderr


def test_a_whole_ratio_keeps_three_significant_digits(tmp_path: Path) -> None:
    # exactly twice and half as fast, with no spread in the logs: 2.00x, as the interval is
    # written beside it (trailing zeros kept), never "2x"
    write_artifact(tmp_path / "base", {"train": [2.0, 2.0, 2.0], "eval": [1.0, 1.0, 1.0]})
    write_artifact(tmp_path / "new", {"train": [1.0, 1.0, 1.0], "eval": [2.0, 2.0, 2.0]})

    text = run_cli("compare", tmp_path / "base", tmp_path / "new").stdout
    markdown = run_cli("compare", "--markdown", tmp_path / "base", tmp_path / "new").stdout

    for output in (text, markdown):
        assert "2.00x faster" in output and "2.00x slower" in output, output
        assert "2x" not in output.replace("2.00x", ""), output
