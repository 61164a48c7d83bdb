"""Benchmark: ``stagetimer report`` and ``stagetimer table`` on a 1,000-directory suite.

Run:  python benchmarks/bench_suite.py            (or through benchmarks/run.py)

The suite is 1,000 artifact directories, 10 stages x 10 runs each, with a real
hardware description of this machine. The floor, measured in the same run, is what
any reader must do: walk the tree and ``json.load`` both sidecars of every
directory, refusing a key twice in one object as the file format requires (a
``json`` hook, the standard library's one way to see it). The ratio to the bare
``json.load`` is printed beside it. Each command runs in this process
(``stagetimer._cli.main``, output to /dev/null), so that interpreter start-up, the
same for both, is left out; the figure is the median over turns of command seconds /
floor seconds.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

__all__ = ["DIRECTORIES", "GOAL", "figures", "floor", "main", "make_suite", "reader_cell"]

DIRECTORIES = 1000
STAGES = 10
RUNS = 10
#: the most a command may cost, as a multiple of the floor
GOAL = 3.0


def make_suite(root: str, directories: int = DIRECTORIES) -> None:
    """Write ``directories`` artifact directories (``env<k>/algo<j>``) as the library writes
    them: indented ``timings.json`` with every run's fields, and this machine's hardware."""
    from stagetimer._store.sidecar import dumps_timings
    from stagetimer.hardware import capture_hardware, description, hardware_id

    hw = capture_hardware()
    hw_id = hardware_id(hw)
    hardware = json.dumps(
        {"schema_version": 1, "hardware": {hw_id: description(hw)}}, indent=2
    ) + "\n"
    for d in range(directories):
        directory = os.path.join(root, f"env{d // 50:02d}", f"algo{d % 50:02d}")
        os.makedirs(directory)
        data = {}
        for s in range(STAGES):
            runs = [
                {
                    "seconds": 1.0 + s + 0.01 * r + 0.001 * d,
                    "hardware_id": hw_id,
                    "run_idx": r,
                    "started_at": f"2026-11-29T12:{s:02d}:{r:02d}.000Z",
                    "steps": 10000,
                }
                for r in range(RUNS)
            ]
            data[f"stage{s}_train" if s == 0 else f"stage{s}"] = {
                "total_seconds": sum(r["seconds"] for r in runs),  # type: ignore[misc]
                "runs": runs,
            }
        with open(os.path.join(directory, "timings.json"), "w", encoding="utf-8") as f:
            f.write(dumps_timings(data))
        with open(os.path.join(directory, "timings_hardware.json"), "w", encoding="utf-8") as f:
            f.write(hardware)


def _unique(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """One JSON object, refused when it holds a key twice (the format's rule). Written
    here rather than imported from the parser: a floor must not move with the library."""
    mapping = dict(pairs)
    if len(mapping) != len(pairs):
        raise ValueError("a key twice in one object")
    return mapping


def floor(*roots: str, unique: bool = True) -> int:
    """Walk ``roots`` and ``json.load`` both sidecars of every artifact directory, refusing
    duplicate keys (``unique=False``: the bare ``json.load``, which keeps the last)."""
    hook = _unique if unique else None
    count = 0
    for root in roots:
        for directory, dirnames, filenames in os.walk(root):
            dirnames.sort()
            if "timings.json" in filenames:
                for name in ("timings.json", "timings_hardware.json"):
                    with open(os.path.join(directory, name), "rb") as f:
                        json.load(f, object_pairs_hook=hook)
                count += 1
    return count


def _command(argv: list[str]) -> Callable[[], object]:
    from stagetimer._cli import main as cli

    def run() -> object:
        with open(os.devnull, "w", encoding="utf-8") as sink, contextlib.redirect_stdout(sink):
            status = cli(argv)
        if status != 0:
            raise RuntimeError(f"stagetimer {' '.join(argv)} exited with {status}")
        return status

    return run


def _seconds(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _ratio(
    fn: Callable[[], object], *roots: str, turns: int
) -> tuple[float, float, float, float]:
    """Median seconds of ``fn`` and of the floor on ``roots``, and the medians per turn of
    ``fn`` / floor and of ``fn`` / the bare ``json.load`` floor."""
    fn(), floor(*roots)  # warm the caches (page cache, imports) for both
    ours, theirs, ratios, bare_ratios = [], [], [], []
    for _ in range(turns):
        b = _seconds(lambda: floor(*roots))
        bare = _seconds(lambda: floor(*roots, unique=False))
        o = _seconds(fn)
        ours.append(o)
        theirs.append(b)
        ratios.append(o / b)
        bare_ratios.append(o / bare)
    return (statistics.median(ours), statistics.median(theirs), statistics.median(ratios),
            statistics.median(bare_ratios))


def reader_cell(ours: float, base: float, ratio: float, bare: float) -> str:
    """A reader's row: its ratio to the floor, the times, and its ratio to ``json.load``."""
    return f"{ratio:.2f}x floor ({ours:.2f} s vs {base:.2f} s; {bare:.2f}x bare json.load)"


def figures(turns: int = 5) -> list[tuple[str, str, str, bool | None]]:
    """``(figure, measured, goal, ok)`` for ``report`` and ``table`` on the suite."""
    rows: list[tuple[str, str, str, bool | None]] = []
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as root:
        make_suite(root)
        for name, argv in (
            ("report", ["report", root]),
            ("table", ["table", root]),
        ):
            ours, base, ratio, bare = _ratio(_command(argv), root, turns=turns)
            rows.append((
                f"stagetimer {name}, {DIRECTORIES} dirs x {STAGES} stages x {RUNS} runs",
                reader_cell(ours, base, ratio, bare),
                f"<= {GOAL:g}x",
                ratio <= GOAL,
            ))
    return rows


def main() -> int:
    """Print the figures, one a line; exit 1 when a goal is missed."""
    rows = figures()
    for figure, measured, goal, ok in rows:
        mark = "ok" if ok else "MISSED"
        print(f"{figure:55}  {measured:35}  {goal:8}  {mark}")
    return 0 if all(ok is not False for _, _, _, ok in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
