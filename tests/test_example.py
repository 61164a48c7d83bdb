"""The runnable examples.

``examples/temporal_game_experiment.py`` records the stages of one project's orchestration,
continues when NashConv is too high, and survives a crash followed by ``--resume`` with every
run recorded exactly once. ``examples/train_loop.py``, the generic training loop the README's
first command runs, records one run per seed of each stage, alone or from a fork or spawn
pool, and writes under its clone by default."""

from __future__ import annotations

import json
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.cli import run_cli, run_process, stagetimer_script

from stagetimer import load_hardware, load_timings

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "temporal_game_experiment.py"
DIRS = {
    "gridworlds/pursuit/classic_3/ippo": "ippo",
    "gridworlds/pursuit/classic_3/iql_cer": "iql_cer",
    "gridworlds/coins/own_coin_first/2/ippo": "ippo",
    "gridworlds/coins/own_coin_first/2/iql_cer": "iql_cer",
}
FAST = ["--train-steps", "200"]


def experiment(exports: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLE), "--exports", str(exports), *FAST, *args],
        capture_output=True, text=True, timeout=120,
    )


def run_indices(directory: Path) -> dict[str, list[int | None]]:
    return {
        name: [r.run_idx for r in s.runs] for name, s in load_timings(directory).stages.items()
    }


def test_each_algorithm_directory_gets_the_orchestration_stages(tmp_path: Path) -> None:
    result = experiment(tmp_path, "--seeds", "3", "--nashconv-threshold", "inf")

    assert 0 == result.returncode, result.stderr
    for rel, algo in DIRS.items():
        assert {
            f"{algo}_train": [0, 1, 2],
            "checkpoint_save": [0, 1, 2],
            "nashconv": [0, 1, 2],
            "alpharank": [None],
        } == run_indices(tmp_path / rel)


def test_checkpoints_are_real_files_beside_the_sidecars(tmp_path: Path) -> None:
    experiment(tmp_path, "--seeds", "2", "--algorithms", "ippo", "--environments", "pursuit")

    directory = tmp_path / "gridworlds/pursuit/classic_3/ippo"
    for i in range(2):
        checkpoint = json.loads((directory / "checkpoints" / f"run_{i:03d}.json").read_text())
        assert (i, True, "ippo") == (
            checkpoint["run_idx"], checkpoint["complete"], checkpoint["algorithm"]
        )
    assert 2 == json.loads((directory / "alpharank.json").read_text())["runs"]


def test_high_nashconv_adds_the_auto_resume_companions_for_that_run(tmp_path: Path) -> None:
    result = experiment(tmp_path, "--seeds", "2", "--nashconv-threshold", "-1")

    assert 0 == result.returncode, result.stderr
    for rel, algo in DIRS.items():
        indices = run_indices(tmp_path / rel)
        for name in (f"{algo}_train_auto_resume", "checkpoint_save_auto_resume",
                     "nashconv_auto_resume"):
            assert [0, 1] == indices[name]


def test_low_nashconv_adds_no_auto_resume_stage(tmp_path: Path) -> None:
    experiment(tmp_path, "--seeds", "2", "--nashconv-threshold", "inf")

    names = {n for rel in DIRS for n in run_indices(tmp_path / rel)}
    assert not any(n.endswith("_auto_resume") for n in names)


def test_satisfaction_is_timed_when_asked(tmp_path: Path) -> None:
    experiment(tmp_path, "--seeds", "2", "--satisfaction", "--algorithms", "iql_cer",
               "--environments", "coins")

    assert [0, 1] == run_indices(tmp_path / "gridworlds/coins/own_coin_first/2/iql_cer")[
        "satisfaction"
    ]


def test_every_recorded_hardware_id_resolves(tmp_path: Path) -> None:
    experiment(tmp_path, "--seeds", "2")

    for rel in DIRS:
        ids = {r.hardware_id for s in load_timings(tmp_path / rel).stages.values() for r in s.runs}
        assert ids <= set(load_hardware(tmp_path / rel).hardware)


# With these arguments each run records 7 stages and each directory 22 (alpharank last),
# 88 in all. K=7 kills after run 0's last stage but before its checkpoint is marked
# complete (the run is redone); K=22 after a whole directory; K=88 after everything.
@pytest.mark.parametrize("k", [1, 5, 7, 12, 22, 23, 47, 88])
def test_interrupt_then_resume_records_each_run_exactly_once(tmp_path: Path, k: int) -> None:
    args = ["--seeds", "3", "--nashconv-threshold", "-1", "--satisfaction"]
    crashed = experiment(tmp_path, *args, "--interrupt-after", str(k))
    assert -signal.SIGKILL == crashed.returncode, crashed.stderr

    resumed = experiment(tmp_path, *args, "--resume")

    assert 0 == resumed.returncode, resumed.stderr
    for rel, algo in DIRS.items():
        indexed = [f"{algo}_train", "checkpoint_save", "nashconv",
                   f"{algo}_train_auto_resume", "checkpoint_save_auto_resume",
                   "nashconv_auto_resume", "satisfaction"]
        indices = run_indices(tmp_path / rel)
        assert {**{n: [0, 1, 2] for n in indexed}, "alpharank": [None]} == indices, rel


def test_resume_skips_the_runs_with_complete_checkpoints(tmp_path: Path) -> None:
    args = ["--seeds", "3", "--algorithms", "ippo", "--environments", "pursuit",
            "--nashconv-threshold", "inf"]
    experiment(tmp_path, *args, "--interrupt-after", "7")  # runs 0 and 1 complete, then run 2
    directory = tmp_path / "gridworlds/pursuit/classic_3/ippo"
    before = load_timings(directory).stages["ippo_train"].runs[:2]

    resumed = experiment(tmp_path, *args, "--resume")

    assert f"{directory}: resuming after 2 complete run(s) of 3" in resumed.stdout
    after = load_timings(directory).stages["ippo_train"].runs
    assert before == after[:2]
    assert [0, 1, 2] == [r.run_idx for r in after]


def test_the_experiment_with_its_defaults_runs_and_reports(tmp_path: Path) -> None:
    exports = tmp_path / "stagetimer-demo"
    result = subprocess.run([sys.executable, str(EXAMPLE), "--exports", str(exports)],
                            capture_output=True, text=True, timeout=120)
    assert 0 == result.returncode, result.stderr

    report = run_process("report", str(exports))  # the installed script, as the README says

    assert 0 == report.returncode, report.stderr
    assert sorted(str(exports / rel) for rel in DIRS) == sorted(
        line for line in report.stdout.splitlines() if line.startswith(str(exports))
    )


def test_printed_values_are_labelled_apart_from_durations(tmp_path: Path) -> None:
    result = experiment(tmp_path, "--seeds", "2", "--satisfaction", "--algorithms", "ippo",
                        "--environments", "coins", "--nashconv-threshold", "-1")

    assert 0 == result.returncode, result.stderr
    lines = result.stdout.splitlines()
    nashconv = [line for line in lines if line.split()[2:3] in (["nashconv"],
                                                               ["nashconv_auto_resume"])]
    alpharank = [line for line in lines if line.split()[:1] == ["alpharank"]]
    assert (4, True) == (len(nashconv), all("NashConv value " in line for line in nashconv))
    assert 1 == len(alpharank)
    assert "alpha-Rank mass per seed (0..1) " in alpharank[0]
    assert all("share of best payoff per player" in line
               for line in lines if " satisfaction " in line)


def test_directories_run_in_the_order_the_report_lists_them(tmp_path: Path) -> None:
    result = experiment(tmp_path, "--seeds", "1", "--no-alpharank")
    assert 0 == result.returncode, result.stderr
    ran = [line.split(":")[0] for line in result.stdout.splitlines() if line.endswith("seed(s)")]

    report = run_cli("report", str(tmp_path))

    assert 0 == report.returncode, report.stderr
    listed = [line for line in report.stdout.splitlines() if line.startswith(str(tmp_path))]
    assert ([str(tmp_path / rel) for rel in sorted(DIRS)], ran) == (ran, listed)


# -- examples/train_loop.py: the generic example the README's first command runs ----------

ROOT = EXAMPLE.parent.parent
TRAIN_LOOP = ROOT / "examples" / "train_loop.py"
LOOP_STAGES = ("train", "evaluate", "save_checkpoint")


def train_loop(*args: str, cwd: Path | None = None,
               script: Path = TRAIN_LOOP) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(script), "--epochs", "2", *args],
        capture_output=True, text=True, timeout=120, cwd=cwd,
    )


def test_the_training_loop_records_one_run_per_seed_of_each_stage(tmp_path: Path) -> None:
    result = train_loop("--out", str(tmp_path), "--seeds", "3")

    assert 0 == result.returncode, result.stderr
    directory = tmp_path / "mlp"
    timings = load_timings(directory)
    assert {name: [0, 1, 2] for name in LOOP_STAGES} == run_indices(directory)
    assert {"epochs": 2, "hidden": 16, "lr": 0.01} == timings.stages["train"].runs[0].metadata
    assert 3 == timings.stages["train"].extra["expected_runs"]
    assert 3 == len(list((directory / "checkpoints").glob("seed_*.json")))
    assert "" == result.stderr  # no warning about a likely mistake


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_seeds_in_a_pool_each_keep_their_run(tmp_path: Path, method: str) -> None:
    result = train_loop("--out", str(tmp_path), "--seeds", "4", "--workers", "2",
                        "--start-method", method)

    assert 0 == result.returncode, result.stderr
    assert {name: [0, 1, 2, 3] for name in LOOP_STAGES} == run_indices(tmp_path / "mlp")
    assert "" == result.stderr


def test_the_training_loop_writes_under_its_clone_by_default(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    (clone / "examples").mkdir(parents=True)
    script = shutil.copy(TRAIN_LOOP, clone / "examples" / "train_loop.py")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    result = train_loop("--seeds", "1", cwd=elsewhere, script=Path(script))

    assert 0 == result.returncode, result.stderr
    assert {name: [0] for name in LOOP_STAGES} == run_indices(clone / "examples" / "out" / "mlp")
    assert [] == list(elsewhere.iterdir())


def readme_first_command() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return text.split("```sh\n", 1)[1].split("```", 1)[0].strip()


def test_the_readme_first_command_runs_in_a_clone_and_reports(tmp_path: Path) -> None:
    """The command as printed, in a copy of the examples, with this environment's Python
    and console script in place of the fresh ``.venv`` it creates and installs into."""
    clone = tmp_path / "clone"
    shutil.copytree(ROOT / "examples", clone / "examples",
                    ignore=shutil.ignore_patterns("out", "__pycache__"))
    steps = [s.strip() for s in readme_first_command().split("&&")]
    assert steps[:2] == ["python3 -m venv .venv", ".venv/bin/pip install -q ."]
    run = " && ".join(steps[2:]).replace(".venv/bin/python", shlex.quote(sys.executable))
    run = run.replace(".venv/bin/stagetimer", shlex.quote(stagetimer_script()))

    result = subprocess.run(run, shell=True, cwd=clone, capture_output=True, text=True,
                            timeout=120)

    assert 0 == result.returncode, result.stderr
    lines = result.stdout.splitlines()
    assert "examples/out/mlp" in lines
    assert {name: 3 for name in LOOP_STAGES} == {
        line.split()[0]: int(line.split()[1]) for line in lines
        if line.split()[:1] and line.split()[0] in LOOP_STAGES and line.split()[1].isdigit()
    }


@pytest.mark.slow
def test_the_readme_first_command_works_verbatim_in_a_fresh_copy(tmp_path: Path) -> None:
    """The whole command, virtual environment and install included, in a copy of the files
    a clone has (tracked, or new and not ignored), as a newcomer runs it."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split("\0")
    clone = tmp_path / "clone"
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, clone / name)

    result = subprocess.run(readme_first_command(), shell=True, cwd=clone,
                            capture_output=True, text=True, timeout=600)

    assert 0 == result.returncode, result.stderr
    assert "examples/out/mlp" in result.stdout.splitlines()
    assert {name: [0, 1, 2] for name in LOOP_STAGES} == run_indices(clone / "examples/out/mlp")
