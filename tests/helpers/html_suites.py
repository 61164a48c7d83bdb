"""Suites for the tests of the HTML pages: the README's example, names a page could choke
on, and attempts that failed and were killed (by a real exception and a real SIGKILL)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import attrs

from helpers.trees import MACHINE
from stagetimer.hardware import description, hardware_id

__all__ = ["HOSTILE", "attempts_suite", "example_suite", "hostile_suite"]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "train_loop.py"

#: names that would be markup, script, an SVG or comment's end, an attribute's end, a
#: terminal's control or a bidi override if a page wrote them raw
HOSTILE = [
    "<script>alert(1)</script>",
    "</svg><script>alert(2)</script><svg>",
    "<img src=x onerror=alert(3)>",
    "\"' onmouseover=alert(4) x='",
    "</title></desc></text><script>alert(5)</script>",
    "<!-- &amp; ]]> -->",
    "<style>*{display:none}</style>",
    "<a href=\"https://example.com/x\">link</a>",
    "\N{RIGHT-TO-LEFT OVERRIDE}gnp.exe\N{POP DIRECTIONAL FORMATTING}",
    "\x1b[2Jcleared \u2028line",
    "caf\N{LATIN SMALL LETTER E WITH ACUTE} \N{SNOWMAN}",
]


def example_suite(out: Path, *extra: str) -> Path:
    """Run the README's example (``examples/train_loop.py --out OUT``); the directory it
    writes (``OUT/mlp``)."""
    done = subprocess.run([sys.executable, str(EXAMPLE), "--out", str(out), *extra],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return out / "mlp"


def _run(seconds: float, i: int, hw: str, name: str) -> dict[str, object]:
    return {
        "seconds": seconds, "hardware_id": hw, "run_idx": i, "label": name,
        "started_at": f"2026-11-29T12:00:{i:02d}.000Z", "rank": i % 2, "world_size": 2,
        "resources": {"cpu_seconds": seconds * 1.5, "memory_peak_bytes": 2**30 + i},
        "note": name,
    }


def hostile_suite(root: Path, scale: float = 1.0) -> Path:
    """One directory per hostile name (and one whose name is not UTF-8), each with a stage
    of that name, labels, metadata and a host of that name too; ``scale`` multiplies
    every duration (two suites to compare)."""
    machine = attrs.evolve(MACHINE, host=HOSTILE[0])
    hw = hardware_id(machine)
    sidecar = {"schema_version": 1, "hardware": {hw: description(machine)}}
    names = [*HOSTILE, "bytes"]
    for k, name in enumerate(names):
        folder = f"{k:02d}-" + "".join(c if c.isalnum() else "_" for c in name)[:20]
        directory = os.fsencode(root / folder)
        if name == "bytes":
            directory = os.fsencode(root) + b"/caf\xe9-\xff"
        os.makedirs(directory)
        stages = {}
        for stage in (name, "train"):
            runs = [_run(scale * (1.0 + 0.1 * i + 0.01 * k), i, hw, name) for i in range(4)]
            stages[stage] = {"total_seconds": sum(r["seconds"] for r in runs),  # type: ignore[misc]
                             "runs": runs}
        with open(os.path.join(directory, b"timings.json"), "w", encoding="utf-8") as f:
            json.dump(stages, f)
        with open(os.path.join(directory, b"timings_hardware.json"), "w", encoding="utf-8") as f:
            json.dump(sidecar, f)
    return root


_ATTEMPT = """
import os, signal, sys, time
from stagetimer import Recorder, stage
directory, what = sys.argv[1], sys.argv[2]
with Recorder(directory):
    if what == "finish":
        for seed in range(3):
            with stage("train", run_idx=seed):
                time.sleep(0.02)
    elif what == "fail":
        try:
            with stage("evaluate", run_idx=0):
                raise ValueError("a failed evaluation")
        except ValueError:
            pass
    else:
        with stage("train", run_idx=3):
            os.kill(os.getpid(), signal.SIGKILL)
"""


def attempts_suite(directory: Path) -> Path:
    """Three finished attempts, one failed (its block raised) and one killed (SIGKILL in
    the block), each by a real process recording into ``directory``."""
    for what in ("finish", "fail", "kill"):
        done = subprocess.run([sys.executable, "-c", _ATTEMPT, str(directory), what],
                              capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == (-9 if what == "kill" else 0), done.stderr
    return directory
