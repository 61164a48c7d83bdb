"""Artifact trees recorded by a real Recorder, for the exports' tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from stagetimer import Recorder

#: 2026-11-30T12:00:00Z, the first run's start
T0 = 1796040000.0


def record_suite(root: Path) -> list[Path]:
    """Two directories: ``mlp`` (seeds 0 and 1, a fit and two labelled epochs each) and
    ``cnn`` (seed 0 on ranks 0 and 1). Returns them."""
    mlp, cnn = root / "suite" / "mlp", root / "suite" / "cnn"
    rec = Recorder(mlp, policy="upsert")
    for seed in (0, 1):
        start = T0 + 100 * seed
        rec.record("fit_train", 10.0 + seed, run_idx=seed, started_at=start)
        for epoch in (0, 1):
            rec.record("train_epoch", 4.0 + epoch, run_idx=seed, label=f"epoch{epoch}",
                       started_at=start + 5 * epoch)
    for rank in (0, 1):
        record_ranked(cnn, rank, 7.25 + rank, T0 + 1000)
    return [mlp, cnn]


def record_ranked(directory: Path, rank: int, seconds: float, started: float) -> None:
    """One run of ``fit_train`` seed 0 as rank ``rank`` of 2 (a child process's rank)."""

    code = (
        "import sys, stagetimer\n"
        "stagetimer.Recorder(sys.argv[1], policy='upsert').record("
        "'fit_train', float(sys.argv[2]), run_idx=0, started_at=float(sys.argv[3]))\n"
    )
    env = {"RANK": str(rank), "WORLD_SIZE": "2"}
    subprocess.run(
        [sys.executable, "-c", code, str(directory), str(seconds), str(started)],
        check=True, timeout=60, env={**os.environ, **env},
    )
