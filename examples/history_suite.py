"""A suite run on every commit of a project, and ``stagetimer history`` over it.

Makes, under DIR (default: a new temporary directory):

- ``repo/``: a git repository of twelve commits of a small training script;
- ``site/``: the library it imports, ``fastmath``, installed as a distribution (1.0, then
  1.1 from the seventh commit on, whose kernel is slower);
- ``suite/NN-<commit>/``: at each commit, the script run three times (seeds 0, 1, 2),
  each a real process recording its stages with stagetimer (its software id names the
  commit and the packages it imported);

then prints ``stagetimer history DIR/suite --repo DIR/repo`` (add ``--markdown``,
``--json`` or ``--html FILE`` after DIR to see the other outputs). docs/history.md shows
its output.

    python examples/history_suite.py [DIR] [history options...]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMITS = [
    "first training loop",
    "log the loss every 100 steps",
    "add a learning-rate schedule",
    "save a checkpoint every epoch",
    "document the options",
    "evaluate on the held-out split",
    "bump fastmath to 1.1",
    "rename the output directory",
    "fix a typo in the help text",
    "pin the random seed of the data loader",
    "add a --quiet flag",
    "tidy the imports",
]
#: the commit (1-based) from which the environment has fastmath 1.1
UPGRADE_AT = 7

_SCRIPT = '''\
import argparse, random, time
import fastmath
import stagetimer

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, required=True)
parser.add_argument("--out", required=True)
args = parser.parse_args()
rng = random.Random(args.seed * 7919 + {commit})
recorder = stagetimer.Recorder(args.out)
with stagetimer.stage("load", run_idx=args.seed, recorder=recorder):
    time.sleep(0.030 * (1 + 0.02 * rng.gauss(0, 1)))
with stagetimer.stage("train", run_idx=args.seed, recorder=recorder, batch=64):
    fastmath.kernel(0.060 * (1 + 0.02 * rng.gauss(0, 1)))
with stagetimer.stage("eval", run_idx=args.seed, recorder=recorder):
    time.sleep(0.040 * (1 + 0.02 * rng.gauss(0, 1)))
# {message}
'''

_LIBRARY = '''\
import time

def kernel(seconds):
    """One step of work: 1.1 does it {factor}x slower."""
    time.sleep(seconds * {factor})
'''

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.org",
    "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.org",
    "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
}


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, env={**os.environ, **_GIT_ENV},
                          capture_output=True, text=True, check=True, timeout=60)
    return done.stdout.strip()


def _install_fastmath(site: Path, version: str) -> None:
    """``fastmath`` VERSION as an installed distribution (a dist-info beside the module)."""
    for old in site.glob("fastmath-*.dist-info"):
        for file in old.iterdir():
            file.unlink()
        old.rmdir()
    (site / "fastmath").mkdir(parents=True, exist_ok=True)
    factor = "1.0" if version == "1.0" else "1.3"
    (site / "fastmath" / "__init__.py").write_text(_LIBRARY.format(factor=factor))
    info = site / f"fastmath-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: fastmath\nVersion: {version}\n")
    (info / "top_level.txt").write_text("fastmath\n")


def build_suite(base: Path, seeds: int = 3) -> tuple[Path, Path]:
    """The repository and the suite under ``base``: (repo, suite)."""
    repo, site, suite = base / "repo", base / "site", base / "suite"
    repo.mkdir(parents=True)
    suite.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    for number, message in enumerate(COMMITS, start=1):
        if number == 1 or number == UPGRADE_AT:
            _install_fastmath(site, "1.0" if number < UPGRADE_AT else "1.1")
        (repo / "train.py").write_text(_SCRIPT.format(commit=number, message=message))
        if number == UPGRADE_AT:
            (repo / "requirements.txt").write_text("fastmath==1.1\n")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", message)
        commit = _git(repo, "rev-parse", "--short", "HEAD")
        out = suite / f"{number:02d}-{commit}"
        for seed in range(seeds):
            subprocess.run([sys.executable, str(repo / "train.py"), "--seed", str(seed),
                            "--out", str(out)], env=env, check=True, timeout=120)
    return repo, suite


def main(argv: list[str]) -> int:
    base = Path(argv[0]) if argv and not argv[0].startswith("-") else Path(
        tempfile.mkdtemp(prefix="stagetimer-history-"))
    options = argv[1:] if argv and not argv[0].startswith("-") else argv
    repo, suite = build_suite(base)
    command = [sys.executable, "-m", "stagetimer", "history", str(suite), "--repo", str(repo),
               *options]
    print("$ stagetimer history", *(os.path.relpath(a, base) if a.startswith(str(base)) else a
                                    for a in command[4:]), flush=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(command, env=env, cwd=base, check=False).returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
