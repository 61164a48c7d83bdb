"""What the readers say about software (and metadata): compare names what differs per
pair, the report warns when one stage's runs ran different software, to_records has the
code's columns."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.cli import run_cli
from helpers.git_repo import git

from stagetimer import compare, to_records
from stagetimer._analysis.report import build_report

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

TRAIN = """\
import sys
from stagetimer import Recorder, record_timing
if sys.argv[3] == "six":
    import six
rec = Recorder(sys.argv[1], policy="upsert")
for seed in range(3):
    record_timing("ippo_train", 1.0 + seed * 0.01, run_idx=seed + int(sys.argv[2]), recorder=rec)
"""


def two_commits(tmp_path: Path) -> tuple[Path, str, str]:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "train.py").write_text(TRAIN)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "one")
    first = git(repo, "rev-parse", "HEAD")
    (repo / "README").write_text("two\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "two")
    return repo, first, git(repo, "rev-parse", "HEAD")


def train(repo: Path, directory: Path, first_seed: int = 0, imports: str = "-") -> None:
    subprocess.run([sys.executable, str(repo / "train.py"), str(directory), str(first_seed),
                    imports], check=True, timeout=120, capture_output=True)


@pytest.fixture
def sides(tmp_path: Path) -> tuple[Path, Path, str, str]:
    """base: the first commit, clean; new: the second, with an edit, importing six."""
    repo, first, second = two_commits(tmp_path)
    git(repo, "checkout", "-q", first)
    train(repo, tmp_path / "base")
    git(repo, "checkout", "-q", "main")
    (repo / "train.py").write_text(TRAIN + "# an uncommitted edit\n")
    train(repo, tmp_path / "new", imports="six")
    return tmp_path / "base", tmp_path / "new", first, second


def test_compare_names_what_differs_in_one_line(sides: tuple[Path, Path, str, str]) -> None:
    from importlib.metadata import version

    base, new, first, second = sides

    result = run_cli("compare", str(base), str(new))

    line = (
        f"Software differs: commit {first[:7]} → {second[:7]} (uncommitted changes); "
        f"six not loaded → {version('six')}"
    )
    assert (0, True) == (result.returncode, line in result.stdout.splitlines()), result.stdout


def test_compare_json_lists_the_software_differences(sides: tuple[Path, Path, str, str]) -> None:
    base, new, first, second = sides

    data = json.loads(run_cli("compare", "--json", str(base), str(new)).stdout)
    (pair,) = data["pairs"]

    fields = [(d["field"], d["base"], d["new"]) for d in pair["software_differences"]]
    assert ("code.commit", first, second) in fields
    assert ("code.dirty", False, True) in fields
    assert {"packages.six"} <= {field for field, _, _ in fields}
    assert [1, 1] == [len(pair["software_ids"]["base"]), len(pair["software_ids"]["new"])]


def test_the_same_software_on_both_sides_says_so(tmp_path: Path) -> None:
    repo, _, _ = two_commits(tmp_path)
    train(repo, tmp_path / "base")
    train(repo, tmp_path / "new")

    comparison = compare(tmp_path / "base", tmp_path / "new")
    text = run_cli("compare", str(tmp_path / "base"), str(tmp_path / "new")).stdout

    assert ((), True) == (comparison.pairs[0].software_differences, "Same software." in text)


def test_the_report_warns_when_one_stage_ran_two_commits(tmp_path: Path) -> None:
    repo, first, second = two_commits(tmp_path)
    git(repo, "checkout", "-q", first)
    train(repo, tmp_path / "runs", first_seed=0)
    git(repo, "checkout", "-q", "main")
    train(repo, tmp_path / "runs", first_seed=3)

    [artifact], _ = build_report([tmp_path / "runs"])

    [warning] = [w for w in artifact.warnings if "software" in w]
    assert f"commit {first[:7]} → {second[:7]}" in warning
    assert warning.startswith("stage ippo_train: its runs ran different software")


def test_to_records_has_the_code_s_commit_and_dirty_state(tmp_path: Path) -> None:
    repo, _, second = two_commits(tmp_path)
    train(repo, tmp_path / "runs")

    rows = to_records(tmp_path / "runs")

    assert {(second, False)} == {(r["commit"], r["dirty"]) for r in rows}
    assert all(r["software_id"].startswith("sw-") for r in rows)


LOADER = """
import sys
from stagetimer import Recorder, record_timing
rec = Recorder(sys.argv[1], policy="upsert", software=False)
for seed in range(3):
    record_timing("load_data", float(sys.argv[3]) + seed * 0.01, run_idx=seed, recorder=rec,
                  mp=sys.argv[2], seed=seed, workers=4)
"""


def test_compare_names_the_metadata_that_differs(tmp_path: Path) -> None:
    # fork and spawn DataLoaders, as a new user compares them: the mp key is the change
    for side, mp, seconds in (("base", "fork", "1.0"), ("new", "spawn", "3.26")):
        subprocess.run([sys.executable, "-c", LOADER, str(tmp_path / side), mp, seconds],
                       check=True, timeout=120)

    text = run_cli("compare", str(tmp_path / "base"), str(tmp_path / "new")).stdout
    data = compare(tmp_path / "base", tmp_path / "new").to_dict()

    # seed differs in every run (it names the run, not a setting); workers is the same
    assert "Metadata differs: load_data mp: fork → spawn" in text.splitlines(), text
    assert [{"stage": "load_data", "key": "mp", "base": ["fork"], "new": ["spawn"]}] == (
        data["pairs"][0]["metadata_differences"]
    )


def test_the_markdown_comment_names_the_software_that_differs(
    sides: tuple[Path, Path, str, str],
) -> None:
    from helpers.markdown import rendered

    base, new, first, second = sides

    page = rendered(run_cli("compare", "--markdown", str(base), str(new)).stdout)

    items = [text for tag, text in page.blocks if tag == "li"]
    assert any(
        item.startswith(f"software: commit {first[:7]} → {second[:7]} (uncommitted changes)")
        for item in items
    ), items


HOSTILE_LOADER = """
import sys
from stagetimer import Recorder, record_timing
rec = Recorder(sys.argv[1], policy="upsert", software=False)
for seed in range(3):
    record_timing("load_data", 1.0 + seed * 0.01, run_idx=seed, recorder=rec, mp=sys.argv[2])
"""


def test_metadata_differences_are_escaped_in_text_and_markdown(tmp_path: Path) -> None:
    from helpers.markdown import rendered

    # a value with a terminal escape and Markdown's emphasis and raw HTML in it
    for side, mp in (("base", "fork"), ("new", "*spawn*<b>\x1b[31m")):
        subprocess.run([sys.executable, "-c", HOSTILE_LOADER, str(tmp_path / side), mp],
                       check=True, timeout=120)

    text = run_cli("compare", str(tmp_path / "base"), str(tmp_path / "new")).stdout
    page = rendered(
        run_cli("compare", "--markdown", str(tmp_path / "base"), str(tmp_path / "new")).stdout
    )

    assert "Metadata differs: load_data mp: fork → *spawn*<b>\\x1b[31m" in text.splitlines()
    assert "\x1b" not in text
    items = [t for tag, t in page.blocks if tag == "li"]
    assert "metadata: load_data mp: fork → *spawn*<b>\\x1b[31m" in items, items
