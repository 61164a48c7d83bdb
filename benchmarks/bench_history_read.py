"""Benchmark: ``stagetimer history`` over 1,000 artifact directories holding 100 software ids.

Run:  python benchmarks/bench_history_read.py          (or through benchmarks/run.py)

A real git repository of 100 commits; a suite of 1,000 artifact directories (10 per
commit, 10 stages x 10 runs each, as ``bench_compare`` writes them), each naming its
commit's software description, ``stage3`` 20 % slower from the 60th commit on. The floor,
measured in the same run, is what any reader must do: walk the tree and ``json.load``
both sidecars of every directory, refusing a key twice in one object
(``bench_suite.floor``). The command runs in this process (``stagetimer._cli.main``,
output to /dev/null) with ``--repo`` the repository, so the figure includes ordering by
the commit graph and ``git log`` at the change. Second figure: the detector alone on a
series of 1,000 points of 5 seeds (two steps), the median of 5 calls.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

from bench_suite import _command, _ratio, reader_cell

__all__ = ["DIRECTORIES", "GOAL", "SOFTWARE_IDS", "figures", "main", "make_history"]

DIRECTORIES = 1000
SOFTWARE_IDS = 100
STAGES = 10
RUNS = 10
#: the most the command may cost, as a multiple of the floor (the readers' bound)
GOAL = 3.0
#: the most detection may take for a series of 1,000 points, in seconds
DETECTION_GOAL = 1.0

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.org",
    "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.org",
    "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
}


def _git(repo: str, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, env={**os.environ, **_GIT_ENV},
                          capture_output=True, text=True, check=True, timeout=60)
    return done.stdout.strip()


def make_history(root: str) -> tuple[str, str]:
    """(repo, suite) under ``root``."""
    from stagetimer._store.sidecar import dumps_timings
    from stagetimer.hardware import capture_hardware, description, hardware_id
    from stagetimer.software import software_id

    repo, suite = os.path.join(root, "repo"), os.path.join(root, "suite")
    os.makedirs(repo)
    _git(repo, "init", "-q", "-b", "main")
    commits = []
    for c in range(SOFTWARE_IDS):
        _git(repo, "commit", "-q", "--allow-empty", "-m", f"change {c}")
        commits.append(_git(repo, "rev-parse", "HEAD"))
    rng = random.Random(1)
    hw = capture_hardware()
    hw_id = hardware_id(hw)
    for d in range(DIRECTORIES):
        c = d // (DIRECTORIES // SOFTWARE_IDS)
        sw = {"python": "CPython 3.11.7",
              "code": {"commit": commits[c], "dirty": False, "diff_sha256": None},
              "packages": {"torch": "2.4.1" if c < 60 else "2.5.0", "numpy": "2.1.0"},
              "accelerators": {}, "sources": {}}
        sw_id = software_id(sw)
        directory = os.path.join(suite, f"c{c:03d}", f"seed{d % 10}")
        os.makedirs(directory)
        data = {}
        for s in range(STAGES):
            slow = 1.2 if s == 3 and c >= 60 else 1.0
            runs = [
                {"seconds": slow * (1.0 + s) * rng.lognormvariate(0.0, 0.03),
                 "hardware_id": hw_id, "software_id": sw_id, "run_idx": r,
                 "started_at": f"2026-11-29T12:{s:02d}:{r:02d}.000Z"}
                for r in range(RUNS)
            ]
            data[f"stage{s}"] = {"total_seconds": sum(float(run["seconds"]) for run in runs),
                                 "runs": runs}
        with open(os.path.join(directory, "timings.json"), "w", encoding="utf-8") as f:
            f.write(dumps_timings(data))
        sidecar = {"schema_version": 1, "hardware": {hw_id: description(hw)},
                   "software": {sw_id: sw}}
        with open(os.path.join(directory, "timings_hardware.json"), "w", encoding="utf-8") as f:
            f.write(json.dumps(sidecar, indent=2) + "\n")
    return repo, suite


def detection_seconds(turns: int = 5) -> float:
    """Median seconds of ``find_changes`` on 1,000 points of 5 seeds, two steps."""
    from stagetimer._analysis.history.changepoints import find_changes

    rng = random.Random(2)
    points = [[(1.0 + 0.2 * (300 <= i < 700)) * rng.lognormvariate(0.0, 0.05)
               for _ in range(5)] for i in range(1000)]
    times = []
    for _ in range(turns):
        start = time.perf_counter()
        found = find_changes(points)
        times.append(time.perf_counter() - start)
    assert [c.index for c in found] == [300, 700], found
    return statistics.median(times)


def figures(turns: int = 5) -> list[tuple[str, str, str, bool | None]]:
    """``(figure, measured, goal, ok)`` for ``history`` on the suite, and for detection."""
    rows: list[tuple[str, str, str, bool | None]] = []
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as top:
        repo, suite = make_history(top)
        ours, floor_s, ratio, bare = _ratio(
            _command(["history", suite, "--repo", repo]), suite, turns=turns)
        rows.append((
            f"stagetimer history, {DIRECTORIES} dirs x {STAGES} stages x {RUNS} runs, "
            f"{SOFTWARE_IDS} software ids",
            reader_cell(ours, floor_s, ratio, bare), f"<= {GOAL:g}x", ratio <= GOAL,
        ))
    seconds = detection_seconds(turns)
    rows.append(("history detection, a series of 1000 points x 5 seeds",
                 f"{seconds * 1e3:.1f} ms", f"<= {DETECTION_GOAL:g} s",
                 seconds <= DETECTION_GOAL))
    return rows


def main() -> int:
    """Print the figures, one a line; exit 1 when a goal is missed."""
    rows = figures()
    for figure, measured, goal, ok in rows:
        mark = "-" if ok is None else "ok" if ok else "MISSED"
        print(f"{figure:62}  {measured:35}  {goal:8}  {mark}")
    return 0 if all(ok is not False for _, _, _, ok in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
