"""``stagetimer compare``: the text, --json, --plot, --threshold and the --fail-if-slower gate."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest
from helpers.cli import Ran, run_cli
from helpers.compare_trees import GIB, MACHINE, write_artifact

from stagetimer.hardware import GpuInfo, MemoryInfo

BASE = {"ippo_train": [10.0, 10.2, 9.9, 10.1, 10.0], "save": [1.0, 1.3, 0.8, 1.1, 0.9]}
NEW = {"ippo_train": [8.0, 8.1, 7.9, 8.0, 8.2], "save": [1.1, 0.8, 1.2, 0.9, 1.0]}


def stagetimer(*args: str) -> Ran:
    return run_cli(*args)


@pytest.fixture
def sides(tmp_path: Path) -> tuple[str, str]:
    return (
        str(write_artifact(tmp_path / "main", BASE)),
        str(write_artifact(tmp_path / "feature", NEW)),
    )


def test_text_reads_like_pyperf_compare_to(sides: tuple[str, str]) -> None:
    result = stagetimer("compare", *sides)

    lines = result.stdout.splitlines()
    train = next(line for line in lines if line.startswith("ippo_train:"))
    assert (0, True) == (result.returncode, train.startswith(
        "ippo_train: Mean +- std dev: [base] 10.0 s +- 0.114 s -> [new] 8.04 s +- 0.114 s: "
        "1.25x faster (new/base 0.801, 95 % CI"
    ))  # fmt: skip


def test_text_says_no_significant_difference_for_noise(sides: tuple[str, str]) -> None:
    lines = stagetimer("compare", *sides).stdout.splitlines()

    save = next(line for line in lines if line.startswith("save:"))
    assert ": no significant difference (new/base" in save


def test_text_says_same_hardware_when_no_field_that_changes_timings_differs(
    sides: tuple[str, str],
) -> None:
    out = stagetimer("compare", *sides).stdout

    assert "Same hardware (by the fields that change timings)." in out.splitlines()


def test_text_says_in_words_which_hardware_differs(tmp_path: Path) -> None:
    a100 = GpuInfo(name="NVIDIA A100-SXM4-40GB")
    h100 = GpuInfo(name="NVIDIA H100 80GB HBM3")
    old = attrs.evolve(MACHINE, gpus=(a100,))
    new = attrs.evolve(MACHINE, gpus=(h100,), memory=MemoryInfo(limit_bytes=64 * GIB))
    write_artifact(tmp_path / "a", BASE, hardware=[old])
    write_artifact(tmp_path / "b", NEW, hardware=[new])

    lines = stagetimer("compare", str(tmp_path / "a"), str(tmp_path / "b")).stdout.splitlines()
    block = lines[lines.index("Hardware differs:") + 1]
    assert (
        "  memory.limit_bytes: 16 GiB → 64 GiB;"
        " gpus[0].name: NVIDIA A100-SXM4-40GB → NVIDIA H100 80GB HBM3"
    ) == block


def test_json_is_the_comparison_as_a_dict(sides: tuple[str, str]) -> None:
    from stagetimer import compare

    result = stagetimer("compare", "--json", *sides)

    assert compare(*sides).to_dict() == json.loads(result.stdout)


def test_threshold_is_given_in_percent(sides: tuple[str, str]) -> None:
    # ippo_train is 20 % faster: a threshold of 25 % calls that no significant difference.
    data = json.loads(stagetimer("compare", "--json", "--threshold", "25", *sides).stdout)

    assert ("no significant difference", 0.25) == (
        data["pairs"][0]["stages"][0]["verdict"],
        data["threshold"],
    )


def test_fail_if_slower_exits_3_naming_the_slower_stage(sides: tuple[str, str]) -> None:
    base, new = sides
    result = stagetimer("compare", "--fail-if-slower", "5", new, base)

    assert (3, True) == (result.returncode, "stage ippo_train is 1.25x" in result.stderr)


def test_fail_if_slower_passes_a_regression_smaller_than_its_percentage(
    sides: tuple[str, str],
) -> None:
    base, new = sides

    assert 0 == stagetimer("compare", "--fail-if-slower", "30", new, base).returncode


def test_fail_if_slower_passes_a_faster_new_side(sides: tuple[str, str]) -> None:
    assert 0 == stagetimer("compare", "--fail-if-slower", "0", *sides).returncode


def test_a_missing_side_exits_1_with_one_line_naming_it(tmp_path: Path) -> None:
    base = write_artifact(tmp_path / "main", BASE)

    result = stagetimer("compare", str(base), str(tmp_path / "nowhere"))
    assert (1, "", [f"stagetimer compare: {tmp_path / 'nowhere'}: no such file or directory"]) == (
        result.returncode,
        result.stdout,
        result.stderr.splitlines(),
    )


def test_a_corrupt_sidecar_exits_1_with_one_line(sides: tuple[str, str]) -> None:
    Path(sides[1], "timings.json").write_text('{"ippo_train": {"runs": 3}}')

    result = stagetimer("compare", *sides)
    assert (1, 1, "Traceback" in result.stderr) == (
        result.returncode,
        len(result.stderr.splitlines()),
        False,
    )


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "two"])
def test_a_percentage_that_is_not_one_is_a_usage_error(sides: tuple[str, str], value: str) -> None:
    result = stagetimer("compare", "--threshold", value, *sides)

    assert (2, True) == (result.returncode, repr(value) in result.stderr)


def test_plot_draws_a_png(sides: tuple[str, str], tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    target = tmp_path / "ratios.png"

    result = stagetimer("compare", "--plot", str(target), *sides)
    assert (0, b"\x89PNG") == (result.returncode, target.read_bytes()[:4])


def test_plot_into_a_missing_directory_is_refused_before_any_work(
    sides: tuple[str, str], tmp_path: Path
) -> None:
    target = tmp_path / "no" / "such" / "ratios.png"

    result = stagetimer("compare", "--plot", str(target), *sides)
    assert (1, "", f"its directory {target.parent} does not exist") == (
        result.returncode,
        result.stdout,
        result.stderr.strip().split(": ", 2)[-1],
    )


def test_plot_needs_a_png_or_svg_name(sides: tuple[str, str], tmp_path: Path) -> None:
    result = stagetimer("compare", "--plot", str(tmp_path / "ratios.pdf"), *sides)

    assert (1, "", True) == (
        result.returncode,
        result.stdout,
        "must end in .png or .svg" in result.stderr,
    )


def test_plot_of_two_trees_draws_every_pair(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    for side, stages in (("main", BASE), ("feature", NEW)):
        write_artifact(tmp_path / side / "pursuit" / "ippo", stages)
        write_artifact(tmp_path / side / "coins" / "ippo", stages)
    target = tmp_path / "ratios.svg"

    result = stagetimer(
        "compare", "--plot", str(target), str(tmp_path / "main"), str(tmp_path / "feature")
    )
    svg = target.read_text()
    assert (0, True, True) == (result.returncode, "pursuit/ippo" in svg, "coins/ippo" in svg)


def test_control_characters_from_the_files_never_reach_the_terminal(tmp_path: Path) -> None:
    name = "train\x1b[2J\u202e"
    base = write_artifact(tmp_path / "main", {name: [1.0, 1.1]})
    new = write_artifact(tmp_path / "feature", {name: [1.0, 1.2]})

    text, as_json = (
        stagetimer("compare", str(base), str(new)),
        stagetimer("compare", "--json", str(base), str(new)),
    )
    assert (False, False, name) == (
        "\x1b" in text.stdout or "\u202e" in text.stdout,
        "\x1b" in as_json.stdout or "\u202e" in as_json.stdout,
        json.loads(as_json.stdout)["pairs"][0]["stages"][0]["name"],
    )


def test_text_never_calls_undescribed_hardware_the_same(sides: tuple[str, str]) -> None:
    Path(sides[1], "timings_hardware.json").unlink()

    lines = stagetimer("compare", *sides).stdout.splitlines()
    assert (False, True) == (
        "Same hardware (by the fields that change timings)." in lines,
        any(line.startswith("Hardware unknown for hw-") for line in lines),
    )
