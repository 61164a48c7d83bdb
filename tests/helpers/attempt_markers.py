"""Markers for the readers' tests: real ones written by real processes (``KILLED``,
``RUNNING``), and ones planted by hand in the format writers use, for the evidence a
process of this machine cannot give (another host, another boot, a reused pid, a
heartbeat hours ago, a lie about the writer)."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from stagetimer._format import ATTEMPTS_DIR, MARKER_FORMAT
from stagetimer._store.markers import encode, new_attempt_id
from stagetimer._store.owner import this_process

__all__ = [
    "KILLED", "RUNNING", "iso", "marker", "plant", "start_running", "utc", "write_timings",
]

#: A process killed by SIGKILL inside its stage: argv[1] the directory, argv[2] the stage.
KILLED = """
import os, signal, sys
from stagetimer import Recorder, stage
with stage(sys.argv[2], run_idx=0, recorder=Recorder(sys.argv[1])):
    os.kill(os.getpid(), signal.SIGKILL)
"""

#: A process that stays inside its stage until killed; says "in" once its marker exists.
RUNNING = """
import sys, time
from stagetimer import Recorder, stage
with stage(sys.argv[2], run_idx=0, recorder=Recorder(sys.argv[1])):
    print("in", flush=True)
    time.sleep(120)
"""


def start_running(directory: Path, name: str = "train") -> subprocess.Popen[str]:
    """A child inside stage ``name`` of ``directory``, its marker written (kill it)."""
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(RUNNING), str(directory), name],
        stdout=subprocess.PIPE, text=True, cwd=tempfile.gettempdir(),
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert child.stdout is not None
    deadline = time.monotonic() + 60
    line = child.stdout.readline()  # the child prints once the block runs
    assert line == "in\n" and time.monotonic() < deadline, line
    return child


def utc(*args: int) -> datetime.datetime:
    return datetime.datetime(*args, tzinfo=datetime.timezone.utc)  # type: ignore[misc]


def iso(moment: datetime.datetime) -> str:
    """As markers and runs store times: ``2026-11-29T22:28:02.123Z``."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def marker(stage: str = "train", **fields: Any) -> dict[str, Any]:
    """A marker as a writer of this process would make it, ``fields`` replaced (a
    ``writer`` given as a dict updates this process's record)."""
    writer = {**this_process(), **fields.pop("writer", {})}
    made: dict[str, Any] = {
        "format": MARKER_FORMAT,
        "attempt_id": new_attempt_id(),
        "stage": stage,
        "run_idx": 0,
        "label": None,
        "rank": None,
        "world_size": None,
        "started_at": iso(datetime.datetime.now(datetime.timezone.utc)),
        "writer": writer,
        "job": None,
        "software_id": None,
        "hardware_id": None,
        "heartbeat": None,
    }
    made.update(fields)
    return made


def plant(directory: Path, content: dict[str, Any], mtime: float | None = None) -> Path:
    """Write ``content`` as a marker of ``directory`` (its mtime set when given)."""
    where = directory / ATTEMPTS_DIR
    where.mkdir(parents=True, exist_ok=True)
    path = where / f"{content['attempt_id']}.json"
    path.write_bytes(encode(content))
    path.chmod(0o644)  # as writers make them, whatever the umask (0664 is not trusted)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def write_timings(directory: Path, stages: dict[str, list[dict[str, Any]]]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    data = {name: {"total_seconds": sum(r["seconds"] for r in runs), "runs": runs}
            for name, runs in stages.items()}
    (directory / "timings.json").write_text(json.dumps(data), encoding="utf-8")
