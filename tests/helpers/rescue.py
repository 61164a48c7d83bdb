"""Helpers of the recovery tests: rescue files as a dead writer leaves them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from stagetimer._format import RESCUE_FORMAT

__all__ = ["dead_owner", "dead_pid", "orphan", "write_rescue"]


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


def dead_owner() -> dict[str, object]:
    """An ``owner`` record of this host naming a process that has ended."""
    from stagetimer._store.owner import this_process

    return {**this_process(), "pid": dead_pid(), "start_time": 1}


def write_rescue(
    directory: Path,
    records: list[dict[str, object]],
    *,
    name: str = "timings.rescue-20261201T000000000000Z-1-00000000.json",
    policy: str = "sequential",
    hardware: dict[str, object] | None = None,
    owner: dict[str, object] | None = None,
    raw: str | None = None,
) -> Path:
    """A rescue file as a writer that has ended left it (``raw``: the exact text)."""
    directory.mkdir(parents=True, exist_ok=True)
    payload = {
        "format": RESCUE_FORMAT,
        "directory": str(directory),
        "owner": owner if owner is not None else dead_owner(),
        "policy": policy,
        "hardware": hardware or {},
        "records": records,
    }
    path = directory / name
    path.write_text(raw if raw is not None else json.dumps(payload), encoding="utf-8")
    return path
