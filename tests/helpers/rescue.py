"""Helpers of the recovery tests: rescue files as a dead writer leaves them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

__all__ = ["dead_pid", "orphan"]


def dead_pid() -> int:
    """The pid of a process that ran and was reaped (not reused within a test)."""
    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid


def orphan(directory: Path) -> list[Path]:
    """Make the rescue files of ``directory`` look as their writer, this test's process,
    left them when it died: their ``owner`` names a process that has ended. (A real dead
    writer is tested with real processes in test_recover_live_owner.py.)"""
    pid = dead_pid()
    files = sorted(directory.glob("timings.rescue-*.json"))
    for path in files:
        payload = json.loads(path.read_text(encoding="utf-8"))
        payload["owner"]["pid"] = pid
        path.write_text(json.dumps(payload), encoding="utf-8")
    return files
