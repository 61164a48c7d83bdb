"""Helpers of the process-life tests: run a scenario in its own interpreter, read the result.

Every scenario runs in a child interpreter with a timeout, so that a hang fails the
test instead of stalling the suite. The scripts use the public API only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

__all__ = ["REPO", "rescued_records", "run_script", "stage_runs", "temp_files"]

REPO = Path(__file__).resolve().parents[2]


def run_script(
    code: str,
    *args: object,
    timeout: float = 60.0,
    env: dict[str, str] | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` (dedented) in a fresh interpreter with ``args`` as ``sys.argv[1:]``."""
    full_env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **(env or {})}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        check=False,
        cwd=tempfile.gettempdir(),  # a checkout in the cwd would shadow the installed package
    )
    if check and done.returncode != 0:
        raise AssertionError(
            f"script exited {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
        )
    return done


def stage_runs(directory: Path, name: str) -> list[dict[str, Any]]:
    """The runs of stage ``name`` in ``directory/timings.json`` (none when absent)."""
    path = directory / "timings.json"
    if not path.exists():
        return []
    data = json.loads(path.read_text(encoding="utf-8"))
    stage = data.get(name)
    return list(stage["runs"]) if stage else []


def rescued_records(directory: Path) -> list[dict[str, Any]]:
    """Every ``{"stage", "run"}`` in the rescue files of ``directory``."""
    records: list[dict[str, Any]] = []
    for path in sorted(directory.glob("timings.rescue-*.json")):
        records.extend(json.loads(path.read_text(encoding="utf-8"))["records"])
    return records


def temp_files(directory: Path) -> list[str]:
    """Temporary files a save left in ``directory`` (there must be none)."""
    return sorted(p.name for p in directory.iterdir() if ".tmp" in p.name)
