"""``stagetimer history`` over a suite recorded by real processes in a real git repository.

Each commit's script runs as its own process under the real recorder, which captures
the commit and the packages it imported (a local distribution, ``fastmath``, upgraded
from 1.0 to 1.1 at the fifth commit, where the stage gets 50 % slower).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.cli import run_cli
from helpers.git_repo import git, make_repo

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """\
import sys, fastmath, stagetimer
recorder = stagetimer.Recorder(sys.argv[2])
seed = int(sys.argv[1])
stagetimer.record_timing("train", fastmath.cost() * (1 + 0.01 * seed), run_idx=seed,
                         recorder=recorder, batch=64)
stagetimer.record_timing("eval", 0.5 * (1 + 0.01 * seed), run_idx=seed, recorder=recorder)
# commit {number}
"""


def _install(site: Path, version: str, cost: float) -> None:
    for old in site.glob("fastmath-*.dist-info"):
        for file in old.iterdir():
            file.unlink()
        old.rmdir()
    (site / "fastmath").mkdir(parents=True, exist_ok=True)
    (site / "fastmath" / "__init__.py").write_text(f"def cost():\n    return {cost}\n")
    info = site / f"fastmath-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: fastmath\nVersion: {version}\n")
    (info / "top_level.txt").write_text("fastmath\n")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[str]]:
    """(repo, suite, commits): 7 commits, 3 seeds each, fastmath 1.1 from the fifth."""
    base = tmp_path_factory.mktemp("history")
    repo, site, suite = make_repo(base / "repo"), base / "site", base / "suite"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    commits = []
    for number in range(7):
        if number in (0, 4):
            _install(site, "1.0" if number < 4 else "1.1", 1.0 if number < 4 else 1.5)
        (repo / "train.py").write_text(SCRIPT.format(number=number))
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"step {number}")
        commits.append(git(repo, "rev-parse", "HEAD"))
        for seed in range(3):
            subprocess.run([sys.executable, str(repo / "train.py"), str(seed),
                            str(suite / f"{number:02d}")], env=env, check=True, timeout=60)
    return repo, suite, commits


def test_the_text_names_the_change_and_what_changed_there(
    recorded: tuple[Path, Path, list[str]],
) -> None:
    repo, suite, commits = recorded
    ran = run_cli("history", suite, "--repo", repo)
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    assert lines[0] == "history: 2 series, 14 points, in commit order"
    start = lines.index("change points, newest first (1; q <= 0.05 over 2 tests, at least 2 %):")
    change = lines[start + 1:start + 5]
    assert change[0].startswith(f"train on {lines[-1].split()[2]}")
    assert ": 1.50x slower (95 % interval " in change[0]
    assert change[1].startswith(f"  between {commits[3][:10]} and {commits[4][:10]}: median ")
    assert change[2] == f"  1 commit: {git(repo, 'log', '--oneline', '-1', commits[4])}"
    assert change[3] == (f"  software: commit {commits[3][:7]} → {commits[4][:7]}; "
                         "fastmath 1.0 → 1.1")
    assert lines[-2].startswith("  eval on ")
    assert "7 points, 0 changes, now 505 ms since" in lines[-2]
    assert "7 points, 1 change, now 1.52 s since" in lines[-1]


def test_json_is_the_documented_shape_and_the_same_bytes_each_time(
    recorded: tuple[Path, Path, list[str]],
) -> None:
    repo, suite, commits = recorded
    first = run_cli("history", suite, "--repo", repo, "--json")
    second = run_cli("history", suite, "--repo", repo, "--json")
    assert first.returncode == 0
    assert first.stdout == second.stdout
    data = json.loads(first.stdout)
    train = next(s for s in data["series"] if s["stage"] == "train")
    assert [p["commit"] for p in train["points"]] == commits
    assert [len(p["seeds"]) for p in train["points"]] == [3] * 7
    [change] = train["changes"]
    assert change["before"]["commit"] == commits[3]
    assert change["after"]["commit"] == commits[4]
    assert change["ratio"] == pytest.approx(1.5, rel=1e-9)
    assert {"field": "packages.fastmath", "before": "1.0", "after": "1.1"} in \
        change["differences"]["software"]
    assert data["order"] == "commit"


def test_markdown_is_a_table_of_the_changes_and_one_of_the_series(
    recorded: tuple[Path, Path, list[str]],
) -> None:
    repo, suite, commits = recorded
    ran = run_cli("history", suite, "--repo", repo, "--markdown")
    assert ran.returncode == 0
    lines = ran.stdout.splitlines()
    assert lines[0] == ("**stagetimer history**: 2 series in commit order, 1 change point "
                        "(q ≤ 0.05 over 2 tests)")
    row = next(line for line in lines if line.startswith("| train on "))
    assert f"| {commits[3][:10]} | {commits[4][:10]} | 1.01 s | 1.52 s | 1.50x slower |" in row
    assert "fastmath 1\\.0 → 1\\.1 |" in row  # Markdown's escapes: shown as written
    assert "| series | points | changes | now |" in lines


@pytest.mark.parametrize(("percent", "status"), [("20", 3), ("60", 0)])
def test_fail_if_slower_exits_3_when_the_newest_segment_is_slower(
    recorded: tuple[Path, Path, list[str]], percent: str, status: int
) -> None:
    repo, suite, commits = recorded
    ran = run_cli("history", suite, "--repo", repo, "--fail-if-slower", percent)
    assert ran.returncode == status
    if status:
        assert f"is 1.5x slower since {commits[4][:10]}" in ran.stderr
        assert f"(more than {percent} %; q = " in ran.stderr


def test_an_unknown_stage_exits_1_naming_it(recorded: tuple[Path, Path, list[str]]) -> None:
    repo, suite, _ = recorded
    ran = run_cli("history", suite, "--repo", repo, "--stage", "trian")
    assert ran.returncode == 1
    assert ran.stdout == ""
    assert ran.stderr == ("stagetimer history: no run of stage 'trian' was found "
                          "(stages: eval, train)\n")


def test_a_missing_path_exits_1_naming_it(tmp_path: Path) -> None:
    ran = run_cli("history", tmp_path / "nowhere")
    assert ran.returncode == 1
    assert ran.stderr == f"stagetimer history: {tmp_path / 'nowhere'}: no such file or directory\n"


def test_without_the_repository_the_time_order_is_said(
    recorded: tuple[Path, Path, list[str]], tmp_path: Path,
) -> None:
    _, suite, _ = recorded
    ran = run_cli("history", suite, "--repo", tmp_path)
    assert ran.returncode == 0
    assert ran.stdout.splitlines()[:2] == [
        "history: 2 series, 14 points, in time order",
        f"note: points in the order of their first run, not of the commit graph: {tmp_path} "
        "is not in a git repository",
    ]


def test_the_current_directory_is_the_default_repository(
    recorded: tuple[Path, Path, list[str]],
) -> None:
    repo, suite, _ = recorded
    ran = run_cli("history", suite, "--stage", "train", cwd=repo)
    assert ran.stdout.startswith("history: 1 series, 7 points, in commit order\n")


def test_fewer_than_four_points_say_so(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    ran_dir = tmp_path / "suite" / "0"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    (repo / "t.py").write_text("import sys, stagetimer\nstagetimer.record_timing('a', 1.0, "
                               "recorder=stagetimer.Recorder(sys.argv[1]))\n")
    subprocess.run([sys.executable, str(repo / "t.py"), str(ran_dir)], env=env, check=True,
                   timeout=60)
    ran = run_cli("history", tmp_path / "suite", "--repo", repo)
    assert ran.returncode == 0
    assert ran.stdout.splitlines()[-1].endswith("; 1 point: fewer than 4, no change is looked for")


def test_html_writes_one_page_and_an_unwritable_path_exits_1_before_reading(
    recorded: tuple[Path, Path, list[str]], tmp_path: Path,
) -> None:
    repo, suite, _ = recorded
    ran = run_cli("history", suite, "--repo", repo, "--html", tmp_path / "h.html")
    assert ran.returncode == 0
    assert ran.stderr == f"page written to {tmp_path / 'h.html'}\n"
    assert (tmp_path / "h.html").read_text().startswith("<!DOCTYPE html>")
    bad = run_cli("history", tmp_path / "nowhere", "--html", tmp_path / "no" / "h.html")
    assert bad.returncode == 1
    assert "--html" in bad.stderr and "nowhere" not in bad.stderr
