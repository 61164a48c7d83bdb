"""Benchmark: ``stagetimer compare`` on two trees of 1,000 artifact directories each.

Run:  python benchmarks/bench_compare.py          (or through benchmarks/run.py)

Each tree holds 1,000 artifact directories, 10 stages x 10 runs each, with a real
hardware description of this machine (the new tree's runs about 5 % faster, with
noise, so the verdicts vary). The floor, measured in the same run, is what any
reader must do: walk both trees and ``json.load`` both sidecars of every directory,
refusing a key twice in one object (``bench_suite.floor``); the ratio to the bare
``json.load`` is printed beside it. The command runs in this process
(``stagetimer._cli.main``, output to /dev/null), so that interpreter start-up, the
same for both, is left out; the figure is the median over turns of command seconds /
floor seconds.
"""

from __future__ import annotations

import json
import os
import random
import sys
import tempfile

from bench_suite import _command, _ratio, floor, reader_cell

__all__ = ["DIRECTORIES", "GOAL", "figures", "floor", "main", "make_tree"]

DIRECTORIES = 1000
STAGES = 10
RUNS = 10
#: the most the command may cost, as a multiple of the floor
GOAL = 3.0


def make_tree(root: str, scale: float, seed: int, directories: int = DIRECTORIES) -> None:
    """Write ``directories`` artifact directories (``env<k>/algo<j>``) as the library writes
    them, each run's seconds ``scale`` times a per-stage base with 3 % noise."""
    from stagetimer._store.sidecar import dumps_timings
    from stagetimer.hardware import capture_hardware, description, hardware_id

    rng = random.Random(seed)
    hw = capture_hardware()
    hw_id = hardware_id(hw)
    hardware = (
        json.dumps({"schema_version": 1, "hardware": {hw_id: description(hw)}}, indent=2) + "\n"
    )
    for d in range(directories):
        directory = os.path.join(root, f"env{d // 50:02d}", f"algo{d % 50:02d}")
        os.makedirs(directory)
        data = {}
        for s in range(STAGES):
            runs = [
                {
                    "seconds": scale * (1.0 + s) * rng.lognormvariate(0.0, 0.03),
                    "hardware_id": hw_id,
                    "run_idx": r,
                    "started_at": f"2026-11-29T12:{s:02d}:{r:02d}.000Z",
                    "job": {"scheduler": "slurm", "job_id": str(1000 + d), "node_name": "n1"},
                }
                for r in range(RUNS)
            ]
            data[f"stage{s}_train" if s == 0 else f"stage{s}"] = {
                "total_seconds": sum(float(run["seconds"]) for run in runs),  # type: ignore[arg-type]
                "runs": runs,
            }
        with open(os.path.join(directory, "timings.json"), "w", encoding="utf-8") as f:
            f.write(dumps_timings(data))
        with open(os.path.join(directory, "timings_hardware.json"), "w", encoding="utf-8") as f:
            f.write(hardware)


def figures(turns: int = 5) -> list[tuple[str, str, str, bool | None]]:
    """``(figure, measured, goal, ok)`` for ``compare`` and ``compare --json`` on two trees,
    and for reference both trees read and held at once (``load_tree`` of both)."""
    rows: list[tuple[str, str, str, bool | None]] = []
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as top:
        base, new = os.path.join(top, "base"), os.path.join(top, "new")
        make_tree(base, 1.0, seed=1)
        make_tree(new, 0.95, seed=2)
        from stagetimer._analysis.tree import load_tree

        def walk() -> object:
            return load_tree(base), load_tree(new)

        # For reference, no goal of its own: both trees read and held at once, as compare
        # did before it read one pair of directories at a time.
        ours, floor_s, ratio, bare = _ratio(walk, base, new, turns=turns)
        rows.append(
            (
                f"load_tree of both trees, held at once, 2 x {DIRECTORIES} dirs",
                reader_cell(ours, floor_s, ratio, bare),
                "-",
                None,
            )
        )
        for name, argv in (
            ("compare", ["compare", base, new]),
            ("compare --json", ["compare", "--json", base, new]),
        ):
            ours, floor_s, ratio, bare = _ratio(_command(argv), base, new, turns=turns)
            rows.append(
                (
                    f"stagetimer {name}, 2 x {DIRECTORIES} dirs x {STAGES} stages x {RUNS} runs",
                    reader_cell(ours, floor_s, ratio, bare),
                    f"<= {GOAL:g}x",
                    ratio <= GOAL,
                )
            )
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
