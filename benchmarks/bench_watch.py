"""The cost of a ``watch`` refresh on an unchanged suite, against a full ``report`` of it.

Run:  python benchmarks/bench_watch.py [--directories N]

10,000 artifact directories, each one stage of 4 finished runs (expected_runs 4: every
stage done, nothing running). The watcher refreshes once (it reads everything), then
the refreshes measured: each stats every directory's ``timings.json`` and
``timings.attempts/`` and reads nothing whose (inode, size, mtime) did not change. The
floor is ``stagetimer report`` on the same tree in the same run (it reads every file).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

from bench_suite import _command

__all__ = ["GOAL", "figures", "main", "make_dirs"]

DIRECTORIES = 10_000
#: a refresh may cost at most this fraction of a full report
GOAL = 0.1


def make_dirs(root: str, directories: int) -> None:
    """``directories`` artifact directories ``g<k>/d<j>``, one finished stage each."""
    from stagetimer._store.sidecar import dumps_timings

    for d in range(directories):
        directory = os.path.join(root, f"g{d // 100:03d}", f"d{d % 100:02d}")
        os.makedirs(directory)
        runs = [{"seconds": 60.0 + r, "run_idx": r,
                 "started_at": f"2026-11-29T12:0{r}:00.000Z"} for r in range(4)]
        data = {"train": {"total_seconds": sum(r["seconds"] for r in runs),  # type: ignore[misc]
                          "expected_runs": 4, "runs": runs}}
        with open(os.path.join(directory, "timings.json"), "w", encoding="utf-8") as f:
            f.write(dumps_timings(data))


def refresh_cost(directories: int, turns: int) -> tuple[float, float, float]:
    """Median seconds of a refresh and of a report, and the median of their ratio."""
    from stagetimer._analysis.watch import Watcher

    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as root:
        make_dirs(root, directories)
        watcher = Watcher([root])
        first = watcher.refresh()
        assert first.complete and len(first.directories) == directories
        report = _command(["report", root])
        report()
        refreshes, reports, ratios = [], [], []
        for _ in range(turns):
            start = time.perf_counter()
            watcher.refresh()
            middle = time.perf_counter()
            report()
            end = time.perf_counter()
            assert watcher.reread == 0
            refreshes.append(middle - start)
            reports.append(end - middle)
            ratios.append((middle - start) / (end - middle))
    return statistics.median(refreshes), statistics.median(reports), statistics.median(ratios)


def figures(turns: int = 3, directories: int = DIRECTORIES) -> list[tuple[str, str, str, bool]]:
    refresh, report, ratio = refresh_cost(directories, turns)
    return [(f"watch refresh, {directories:,} unchanged dirs",
             f"{refresh:.2f} s vs report {report:.2f} s = {ratio:.3f}x",
             f"<= {GOAL:g}x", ratio <= GOAL)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--directories", type=int, default=DIRECTORIES)
    parser.add_argument("--turns", type=int, default=3)
    args = parser.parse_args()
    ok = True
    for figure, value, goal, met in figures(args.turns, args.directories):
        print(f"{figure}: {value} (goal {goal}) {'ok' if met else 'MISSED'}")
        ok &= met
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
