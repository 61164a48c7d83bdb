"""Benchmark: the size of ``stagetimer report --html``'s page.

Run:  python benchmarks/bench_html.py            (or through benchmarks/run.py)

Two pages: the README example's (``examples/train_loop.py``: one directory, three
stages, three seeds), whose budget is 100 KB, and the 1,000-directory benchmark
suite's (``bench_suite.make_suite``: 10 stages x 10 runs each, 100,000 runs), whose
budget is 2 MB: past a number of marks its charts draw histograms and busy spans, and
its table holds every directory's stages. Beside each size, the seconds the page took
against the plain text report of the same files (the same process, median over turns).
"""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["EXAMPLE_BUDGET", "SUITE_BUDGET", "figures", "main"]

EXAMPLE_BUDGET = 100 * 1000
SUITE_BUDGET = 2 * 1000 * 1000
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "train_loop.py"


def _seconds(argv: list[str], turns: int) -> float:
    from bench_suite import _command

    run = _command(argv)
    times = []
    for _ in range(turns):
        start = time.perf_counter()
        with open(os.devnull, "w", encoding="utf-8") as sink, contextlib.redirect_stderr(sink):
            run()  # "page written to ..." on standard error
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _row(what: str, root: str, budget: int, turns: int) -> tuple[str, str, str, bool]:
    page = os.path.join(root, "page.html")
    html = _seconds(["report", root, "--html", page], turns)
    text = _seconds(["report", root], turns)
    size = os.path.getsize(page)
    return (
        f"report --html page, {what}",
        f"{size / 1000:.1f} KB ({html:.2f} s; text report {text:.2f} s)",
        f"<= {budget // 1000} KB",
        size <= budget,
    )


def figures(turns: int = 3) -> list[tuple[str, str, str, bool | None]]:
    """``(figure, measured, goal, ok)`` for the two pages."""
    from bench_suite import DIRECTORIES, RUNS, STAGES, make_suite

    rows: list[tuple[str, str, str, bool | None]] = []
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as root:
        example = os.path.join(root, "example")
        subprocess.run([sys.executable, str(EXAMPLE), "--out", example], check=True,
                       capture_output=True, timeout=300)
        rows.append(_row("README example", example, EXAMPLE_BUDGET, turns))
        suite = os.path.join(root, "suite")
        make_suite(suite)
        rows.append(_row(f"{DIRECTORIES} dirs x {STAGES} stages x {RUNS} runs", suite,
                         SUITE_BUDGET, turns))
    return rows


def main() -> int:
    """Print the figures, one a line; exit 1 when a budget is missed."""
    rows = figures()
    for figure, measured, goal, ok in rows:
        print(f"{figure:55}  {measured:35}  {goal:8}  {'ok' if ok else 'MISSED'}")
    return 0 if all(ok is not False for _, _, _, ok in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
