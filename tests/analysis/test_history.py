"""stagetimer.history over suites written in the file format, with real git repositories.

Each suite is a folder of artifact directories whose runs name software descriptions
(commit, packages) as a recorder stores them; the commits are those of a repository
made in the test, so that the commit graph, ``git log`` between points and the refusal
of another user's repository are git's own.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from helpers.git_repo import git, make_repo
from helpers.trees import MACHINE

import stagetimer
from stagetimer import history
from stagetimer._analysis.history import git as history_git
from stagetimer._errors import InvalidSettingError
from stagetimer.hardware import CpuInfo, Hardware, description, hardware_id
from stagetimer.software import software_id

OTHER_MACHINE = Hardware(host="node2", os="Linux 6.1.0-18-amd64", python="CPython 3.11.7",
                         machine="x86_64",
                         cpu=CpuInfo(affinity=(0, 1, 2, 3), logical_cpus=4, physical_cores=4,
                                     model_name="Intel Xeon"))
#: the seeds of a point at level 1: a spread of about 1 %
SEEDS = (1.00, 1.01, 0.99)


def software(commit: str | None, packages: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A software description as a recorder stores it."""
    return {
        "python": "CPython 3.11.7",
        "code": None if commit is None else {"commit": commit, "dirty": False,
                                             "diff_sha256": None},
        "packages": dict(packages or {"torch": "2.4.1"}),
        "accelerators": {},
        "sources": {},
    }


def write_point(
    directory: Path,
    stages: Mapping[str, Sequence[float]],
    *,
    sw: dict[str, Any] | None,
    started: str,
    machine: Hardware = MACHINE,
    metadata: Mapping[str, Any] | None = None,
) -> Path:
    """An artifact directory: each stage's seeds (run_idx 0, 1, ...), all started at
    ``started`` (plus the seed's number of seconds), on ``machine``, with ``sw``."""
    directory.mkdir(parents=True, exist_ok=True)
    hw_id = hardware_id(machine)
    sw_id = software_id(sw) if sw is not None else None
    timings = {}
    for name, seeds in stages.items():
        runs = []
        for i, seconds in enumerate(seeds):
            run: dict[str, Any] = {"seconds": seconds, "hardware_id": hw_id, "run_idx": i,
                                   "started_at": f"{started}:{i:02d}.000Z"}
            if sw_id is not None:
                run["software_id"] = sw_id
            run.update(metadata or {})
            runs.append(run)
        timings[name] = {"total_seconds": sum(seeds), "runs": runs}
    (directory / "timings.json").write_text(json.dumps(timings))
    sidecar: dict[str, Any] = {"schema_version": 1,
                               "hardware": {hw_id: description(machine)}}
    if sw is not None:
        sidecar["software"] = {sw_id: sw}
    (directory / "timings_hardware.json").write_text(json.dumps(sidecar))
    return directory


def commit_all(repo: Path, count: int) -> list[str]:
    """``count`` more commits in ``repo``, each changing train.py; their hashes."""
    commits = []
    for i in range(count):
        (repo / "train.py").write_text(f"print('train {i}')\n")
        git(repo, "commit", "-q", "-am", f"change {i}")
        commits.append(git(repo, "rev-parse", "HEAD"))
    return commits


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


def minute(i: int) -> str:
    return f"2026-03-01T10:{i:02d}"


def slow_suite(suite: Path, commits: list[str], slow_from: int, **kw: Any) -> None:
    """A point per commit; ``train`` 30 % slower from commit ``slow_from`` on."""
    for i, commit in enumerate(commits):
        factor = 1.3 if i >= slow_from else 1.0
        write_point(suite / f"{i:02d}", {"train": [s * factor for s in SEEDS],
                                         "eval": [s * 0.5 for s in SEEDS]},
                    sw=software(commit), started=minute(i), **kw)


def test_a_step_is_a_change_point_named_by_the_commits_on_either_side(
    tmp_path: Path, repo: Path
) -> None:
    commits = commit_all(repo, 10)
    slow_suite(tmp_path / "suite", commits, 6)
    found = history(tmp_path / "suite", repo=repo)
    assert found.order == "commit"
    [train] = [s for s in found.series if s.stage == "train"]
    [change] = train.changes
    assert (change.before.commit, change.after.commit) == (commits[5], commits[6])
    assert change.ratio == pytest.approx(1.3, rel=1e-9)
    low, high = change.ratio_interval or (0, 0)
    assert low < 1.3 < high
    assert change.q_value <= 0.05
    assert (change.median_before, change.median_after) == pytest.approx((1.0, 1.3))
    assert change.differences.commits == (git(repo, "log", "--oneline", "-1", commits[6]),)
    assert change.differences.commit_count == 1
    [eval_series] = [s for s in found.series if s.stage == "eval"]
    assert eval_series.changes == ()


def test_commits_between_points_are_listed_newest_first_and_counted(
    tmp_path: Path, repo: Path
) -> None:
    commits = commit_all(repo, 12)
    kept = commits[:5] + commits[8:]  # three commits never measured
    slow_suite(tmp_path / "suite", kept, 5)
    [change] = next(s for s in history(tmp_path / "suite", repo=repo).series
                if s.stage == "train").changes
    expected = git(repo, "log", "--oneline", f"{commits[4]}..{commits[8]}").splitlines()
    assert list(change.differences.commits) == expected
    assert change.differences.commit_count == 4


def test_the_commit_graph_orders_points_whatever_their_time(
    tmp_path: Path, repo: Path
) -> None:
    commits = commit_all(repo, 8)
    times = [minute(i) for i in (0, 1, 2, 7, 3, 4, 5, 6)]  # commit 3 measured last
    for i, commit in enumerate(commits):
        write_point(tmp_path / "suite" / f"{i:02d}", {"train": SEEDS}, sw=software(commit),
                    started=times[i])
    by_commit = history(tmp_path / "suite", repo=repo)
    assert [p.commit for p in by_commit.series[0].points] == commits
    elsewhere = history(tmp_path / "suite", repo=tmp_path / "suite")
    assert elsewhere.order == "time"
    assert [p.commit for p in elsewhere.series[0].points] == [
        commits[i] for i in (0, 1, 2, 4, 5, 6, 7, 3)
    ]
    assert any("not in a git repository" in n for n in elsewhere.notes)


def test_changes_are_newest_first_by_the_commit_graph_not_by_time(
    tmp_path: Path, repo: Path
) -> None:
    commits = commit_all(repo, 10)
    for i, commit in enumerate(commits):  # the last five commits measured first
        write_point(tmp_path / "s" / f"{i}",
                    {"load": [s * (1.5 if i >= 3 else 1) for s in SEEDS],
                     "train": [s * (1.5 if i >= 7 else 1) for s in SEEDS]},
                    sw=software(commit), started=minute(i - 5 if i >= 5 else i + 5))
    found = history(tmp_path / "s", repo=repo)
    assert [(s.stage, c.after.commit) for s, c in found.changes()] == [
        ("train", commits[7]), ("load", commits[3])]


def test_a_package_upgrade_on_one_commit_is_its_own_point_and_named(
    tmp_path: Path, repo: Path
) -> None:
    commits = commit_all(repo, 5)
    suite = tmp_path / "suite"
    for i, commit in enumerate(commits):
        write_point(suite / f"a{i}", {"train": SEEDS}, sw=software(commit), started=minute(i))
    newer = {"torch": "2.5.0", "numpy": "2.1.0"}
    for i in range(5, 9):  # the last commit again, after an upgrade of torch
        write_point(suite / f"b{i}", {"train": [s * 1.5 for s in SEEDS]},
                    sw=software(commits[-1], newer), started=minute(i))
    [series] = history(suite, repo=repo).series
    assert len(series.points) == 6  # four points of the upgraded software are one
    [change] = series.changes
    assert change.before.commit == change.after.commit == commits[-1]
    fields = {(d.field, d.base, d.new) for d in change.differences.software}
    assert fields == {("packages.torch", "2.4.1", "2.5.0"), ("packages.numpy", None, "2.1.0")}
    assert change.differences.commits == ()


def test_a_metadata_key_that_changed_is_named(tmp_path: Path, repo: Path) -> None:
    commits = commit_all(repo, 8)
    for i, commit in enumerate(commits):
        write_point(tmp_path / "s" / f"{i}", {"train": [s * (2 if i >= 4 else 1) for s in SEEDS]},
                    sw=software(commit), started=minute(i),
                    metadata={"batch": 128 if i >= 4 else 64})
    [change] = history(tmp_path / "s", repo=repo).series[0].changes
    [difference] = change.differences.metadata
    assert (difference.key, difference.base, difference.new) == ("batch", (64,), (128,))


def test_another_machine_is_another_series_not_a_change(tmp_path: Path, repo: Path) -> None:
    commits = commit_all(repo, 10)
    for i, commit in enumerate(commits):  # node1 for 5 commits, then node2, twice as slow
        machine, factor = (MACHINE, 1.0) if i < 5 else (OTHER_MACHINE, 2.0)
        write_point(tmp_path / "s" / f"{i}", {"train": [s * factor for s in SEEDS]},
                    sw=software(commit), started=minute(i), machine=machine)
    found = history(tmp_path / "s", repo=repo)
    assert [(s.hardware_id, len(s.points), s.changes) for s in found.series] == sorted(
        [(hardware_id(MACHINE), 5, ()), (hardware_id(OTHER_MACHINE), 5, ())])
    assert {s.hardware_name for s in found.series} == {"node1, AMD EPYC", "node2, Intel Xeon"}
    assert any("2 hardware descriptions" in n for n in found.notes)


def test_fewer_than_four_points_are_not_tested_and_say_so(tmp_path: Path, repo: Path) -> None:
    commits = commit_all(repo, 3)
    slow_suite(tmp_path / "s", commits, 2)
    found = history(tmp_path / "s", repo=repo, stage="train")
    [series] = found.series
    assert series.changes == ()
    assert series.note == "3 points: fewer than 4, no change is looked for"


def test_runs_without_a_software_id_are_a_point_per_directory_in_time_order(
    tmp_path: Path, repo: Path
) -> None:
    for i in range(6):
        write_point(tmp_path / "s" / f"{5 - i}", {"train": [s * (1.3 if i >= 3 else 1)
                                                         for s in SEEDS]},
                    sw=None, started=minute(i))
    found = history(tmp_path / "s", repo=repo)
    [series] = found.series
    assert [p.directories for p in series.points] == [
        (str(tmp_path / "s" / f"{5 - i}"),) for i in range(6)
    ]
    assert [c.index for c in series.changes] == [3]
    assert any("name no software id" in n for n in found.notes)


def test_points_without_a_commit_among_others_give_the_time_order(
    tmp_path: Path, repo: Path
) -> None:
    commits = commit_all(repo, 4)
    for i, commit in enumerate(commits):
        write_point(tmp_path / "s" / f"{i}", {"train": SEEDS}, sw=software(commit),
                    started=minute(10 - i))
    write_point(tmp_path / "s" / "x", {"train": SEEDS}, sw=software(None), started=minute(20))
    found = history(tmp_path / "s", repo=repo)
    assert found.order == "time"
    assert [p.commit for p in found.series[0].points] == [*reversed(commits), None]
    assert any(n.endswith("some points have no recorded commit") for n in found.notes)


def test_by_time_makes_a_point_of_each_directory(tmp_path: Path, repo: Path) -> None:
    commits = commit_all(repo, 2)
    for i in range(8):  # two software ids, four directories each
        write_point(tmp_path / "s" / f"{i}", {"train": SEEDS}, sw=software(commits[i // 4]),
                    started=minute(i))
    assert len(history(tmp_path / "s", repo=repo).series[0].points) == 2
    by_time = history(tmp_path / "s", repo=repo, by="time")
    assert by_time.order == "time"
    assert len(by_time.series[0].points) == 8


def test_since_keeps_the_points_that_started_after_it(tmp_path: Path, repo: Path) -> None:
    commits = commit_all(repo, 8)
    slow_suite(tmp_path / "s", commits, 4)
    found = history(tmp_path / "s", repo=repo, stage="train", since="2026-03-01T10:03")
    assert [p.commit for p in found.series[0].points] == commits[3:]


def test_an_unknown_stage_is_refused_naming_it(tmp_path: Path, repo: Path) -> None:
    slow_suite(tmp_path / "s", commit_all(repo, 4), 2)
    with pytest.raises(InvalidSettingError, match="no run of stage 'trian' was found "
                       r"\(stages: eval, train\)"):
        history(tmp_path / "s", stage="trian", repo=repo)


@pytest.mark.parametrize(("setting", "message"), [
    ({"by": "day"}, "by must be 'commit' or 'time', not 'day'"),
    ({"since": "yesterday"}, "since must be a date or time"),
    ({"threshold": -0.1}, "threshold must be a finite fraction >= 0"),
])
def test_bad_settings_are_refused_before_reading(
    tmp_path: Path, setting: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidSettingError, match=message):
        history(tmp_path / "missing", **setting)


def test_a_repository_another_user_owns_is_not_entered(tmp_path: Path, repo: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to give the repository to another user")
    commits = commit_all(repo, 5)
    slow_suite(tmp_path / "s", commits, 3)
    hook = repo / ".git" / "hooks" / "fsmonitor"
    hook.write_text(f"#!/bin/sh\ntouch {tmp_path / 'ran'}\n")
    hook.chmod(0o755)
    git(repo, "config", "core.fsmonitor", str(hook))
    for path in [repo, *repo.rglob("*")]:
        os.lchown(path, 65534, 65534)
    found = history(tmp_path / "s", repo=repo)
    assert found.order == "time"
    assert any("belongs to another user (uid 65534)" in n for n in found.notes)
    assert not (tmp_path / "ran").exists()


def test_a_slow_git_gives_the_time_order_and_says_so(
    tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    commits = commit_all(repo, 5)
    slow_suite(tmp_path / "s", commits, 3)
    slow = tmp_path / "bin"
    slow.mkdir()
    real = git(repo, "--exec-path")  # a git that answers after 30 s
    (slow / "git").write_text(f"#!/bin/sh\nsleep 30\nexec {real}/git \"$@\"\n")
    (slow / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{slow}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(history_git, "HISTORY_GIT_TIMEOUT", 0.5)
    found = history(tmp_path / "s", repo=repo)
    assert found.order == "time"
    assert any("git did not answer within 0.5 s" in n for n in found.notes)


def test_a_missing_repository_gives_the_time_order(tmp_path: Path) -> None:
    write_point(tmp_path / "s" / "0", {"train": SEEDS}, sw=software("a" * 40), started=minute(0))
    found = history(tmp_path / "s", repo=tmp_path / "nowhere")
    assert found.order == "time"
    assert any("nowhere is not a directory" in n for n in found.notes)


def _snapshot(root: Path) -> dict[str, tuple[int, str]]:
    return {
        str(p): (p.stat().st_mode, hashlib.sha256(p.read_bytes()).hexdigest()
                 if p.is_file() else "")
        for p in sorted(root.rglob("*"))
    } | {"mtimes": (0, repr(sorted((str(p), p.stat().st_mtime_ns) for p in root.rglob("*"))))}


def test_nothing_is_written_beside_the_files_read_nor_in_the_repository(
    tmp_path: Path, repo: Path
) -> None:
    commits = commit_all(repo, 8)
    slow_suite(tmp_path / "s", commits, 4)
    for path in (tmp_path / "s").rglob("*"):
        if path.is_dir():
            path.chmod(stat.S_IRUSR | stat.S_IXUSR)
    before = (_snapshot(tmp_path / "s"), _snapshot(repo))
    found = history(tmp_path / "s", repo=repo)
    assert found.series[-1].changes  # read, ordered, detected, and git asked
    assert (_snapshot(tmp_path / "s"), _snapshot(repo)) == before


def test_history_is_public_and_its_json_keys_are_the_documented_ones(
    tmp_path: Path, repo: Path
) -> None:
    slow_suite(tmp_path / "s", commit_all(repo, 8), 4)
    data = stagetimer.history(tmp_path / "s", repo=repo).to_dict()
    series = data["series"][1]
    assert list(series) == ["stage", "hardware_id", "points", "changes"]
    assert list(series["points"][0]) == ["software_id", "commit", "first_started_at", "seeds",
                                         "median_seconds"]
    assert list(series["changes"][0]) == ["before", "after", "median_before", "median_after",
                                          "ratio", "ratio_interval", "q_value", "differences"]
    assert isinstance(stagetimer.history(tmp_path / "s", repo=repo), stagetimer.History)
