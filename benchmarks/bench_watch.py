"""The cost of a ``watch`` refresh on an unchanged suite, through the command line, against a
bare walk with ``stat`` of the same tree.

Run:  python benchmarks/bench_watch.py [--directories N] [--turns T]

10,000 artifact directories (``g<k>/d<j>``), each one stage of 4 finished runs out of 5
expected: nothing runs, nothing changes, and the suite is not done, so ``stagetimer watch``
keeps refreshing. It runs as a command (``python -m stagetimer watch ROOT --interval S``,
standard output a pipe, as text and with ``--json``); after its first refresh (which reads
everything), each refresh's cost is the time from one printed block to the next, less the
interval slept. It includes everything the command does per refresh: the walk, what it
reads (nothing here), the estimates, drawing the block and writing it. The floor is walking
the same tree (``os.walk``) and ``stat``-ing every file in it, timed in this process while
the command sleeps between its refreshes; the figure is the ratio of the medians.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

__all__ = ["GOAL", "bare_walk", "figures", "main", "make_dirs", "refresh_cost"]

DIRECTORIES = 10_000
#: a refresh may cost at most this multiple of a bare walk with ``stat`` of the tree
GOAL = 1.5
#: seconds the command sleeps between refreshes (the floor is timed meanwhile)
INTERVAL = 2.0


def make_dirs(root: str, directories: int, *, expected: int = 5) -> None:
    """``directories`` artifact directories ``g<k>/d<j>``, one stage of 4 finished runs each
    (``expected`` runs expected: above 4, the stage is not done)."""
    from stagetimer._store.sidecar import dumps_timings

    for d in range(directories):
        directory = os.path.join(root, f"g{d // 100:03d}", f"d{d % 100:02d}")
        os.makedirs(directory)
        runs = [{"seconds": 60.0 + r + d % 7, "run_idx": r,
                 "started_at": f"2026-11-29T12:0{r}:30.000Z"} for r in range(4)]
        data = {"train": {"total_seconds": sum(r["seconds"] for r in runs),  # type: ignore[misc]
                          "expected_runs": expected, "runs": runs}}
        with open(os.path.join(directory, "timings.json"), "w", encoding="utf-8") as f:
            f.write(dumps_timings(data))


def bare_walk(root: str) -> int:
    """The floor: every directory under ``root`` listed, every file in it ``stat``-ed."""
    count = 0
    for directory, _, filenames in os.walk(root):
        for name in filenames:
            os.stat(os.path.join(directory, name))
            count += 1
    return count


def _blocks(process: subprocess.Popen[bytes], end: bytes):  # type: ignore[no-untyped-def]
    """Yield the time at which each block (ending with ``end``) was read whole."""
    assert process.stdout is not None
    fd = process.stdout.fileno()
    pending = b""
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return
        pending += chunk
        while (at := pending.find(end)) >= 0:
            pending = pending[at + len(end):]
            yield time.perf_counter()


def refresh_cost(root: str, turns: int, *, json: bool) -> tuple[float, float]:
    """Median seconds of a refresh through the command line and of the bare walk."""
    argv = [sys.executable, "-m", "stagetimer", "watch", root, "--interval", str(INTERVAL)]
    if json:
        argv.append("--json")
    end = b"\n" if json else b"\n\n"
    refreshes: list[float] = []
    floors: list[float] = []
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        previous = None
        for at in _blocks(process, end):
            if previous is not None:
                refreshes.append(at - previous - INTERVAL)
            if len(refreshes) >= turns:
                break
            # the command sleeps now: the floor has the machine to itself
            start = time.perf_counter()
            bare_walk(root)
            floors.append(time.perf_counter() - start)
            previous = at
    finally:
        process.kill()
        process.wait()
    if len(refreshes) < turns:
        raise RuntimeError(f"stagetimer watch stopped after {len(refreshes) + 1} refreshes")
    return statistics.median(refreshes), statistics.median(floors)


def figures(turns: int = 5, directories: int = DIRECTORIES) -> list[tuple[str, str, str, bool]]:
    rows = []
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as root:
        make_dirs(root, directories)
        for json in (False, True):
            refresh, floor = refresh_cost(root, turns, json=json)
            rows.append((
                f"watch refresh{' --json' if json else ''}, {directories:,} unchanged dirs",
                f"{refresh:.3f} s vs bare walk with stat {floor:.3f} s = {refresh / floor:.2f}x",
                f"<= {GOAL:g}x", refresh / floor <= GOAL,
            ))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--directories", type=int, default=DIRECTORIES)
    parser.add_argument("--turns", type=int, default=5)
    args = parser.parse_args()
    ok = True
    for figure, value, goal, met in figures(args.turns, args.directories):
        print(f"{figure}: {value} (goal {goal}) {'ok' if met else 'MISSED'}")
        ok &= met
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
