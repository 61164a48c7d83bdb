"""A FIFO, a device or a directory in place of a sidecar: refused at once, never a hang.

Reading a FIFO blocks until a writer comes and ``/dev/zero`` never ends, so each case
runs in a subprocess with a timeout: a hang is a failure, not a stuck test run.
"""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.cli import run_process

TIMEOUT = 60

LOAD = """
import sys
from stagetimer import SidecarCorruptError, load_hardware, load_timings
try:
    (load_timings if sys.argv[2] == "timings.json" else load_hardware)(sys.argv[1])
except SidecarCorruptError as exc:
    print("corrupt", exc.path)
else:
    print("loaded")
"""

SAVE = """
import sys, warnings
from stagetimer import Recorder, StageTimerWarning, stage
rec = Recorder(sys.argv[1])
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    with stage("alpharank", recorder=rec):
        pass
print("pending", rec.pending, sum(issubclass(w.category, StageTimerWarning) for w in caught))
"""


def fifo(path: Path) -> None:
    os.mkfifo(path)


def dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def directory(path: Path) -> None:
    path.mkdir()


def unix_socket(path: Path) -> None:
    # Bound in a short directory (AF_UNIX paths hold 108 bytes), then moved in place.
    short = Path(tempfile.mkdtemp(prefix="st-"))
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(short / "s"))
        (short / "s").rename(path)
    finally:
        server.close()
        short.rmdir()


def symlink_loop(path: Path) -> None:
    path.symlink_to(path.name)


SPECIAL: dict[str, tuple[Callable[[Path], None], str]] = {
    "fifo": (fifo, "is a FIFO (named pipe), not a regular file"),
    # Sidecars are opened with O_NOFOLLOW: a link is refused as such, never read through.
    "symlink to /dev/zero": (dev_zero, "is a symbolic link, not a regular file"),
    "directory": (directory, "is a directory, not a regular file"),
    "socket": (unix_socket, "is a socket, not a regular file"),
    "symlink loop": (symlink_loop, "is a symbolic link, not a regular file"),
}
SIDECARS = ["timings.json", "timings_hardware.json"]


@pytest.fixture(params=list(SPECIAL), ids=list(SPECIAL))
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def place(art: Path, name: str, kind: str) -> Path:
    art.mkdir(parents=True)
    path = art / name
    SPECIAL[kind][0](path)
    return path


def python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=TIMEOUT
    )


def file_type(path: Path) -> int:
    return stat.S_IFMT(path.lstat().st_mode)


@pytest.mark.parametrize("name", SIDECARS)
def test_loader_refuses_a_special_file_at_once(art: Path, kind: str, name: str) -> None:
    path = place(art, name, kind)

    result = python(LOAD, str(art), name)

    assert f"corrupt {path}\n" == result.stdout, result.stderr


def test_report_refuses_a_special_timings_file_with_one_line(art: Path, kind: str) -> None:
    path = place(art, "timings.json", kind)

    result = run_process("report", str(art), timeout=TIMEOUT)  # a hang fails, not sticks

    lines = result.stderr.splitlines()
    assert (1, 1) == (result.returncode, len(lines)), result.stderr
    assert f"{path}: {SPECIAL[kind][1]}" in lines[0]


@pytest.mark.parametrize("name", SIDECARS)
def test_lenient_save_keeps_the_record_pending_and_the_special_file(
    art: Path, kind: str, name: str
) -> None:
    path = place(art, name, kind)
    before = file_type(path)

    result = python(SAVE, str(art))

    assert ("pending 1 1\n", before) == (result.stdout, file_type(path)), result.stderr
