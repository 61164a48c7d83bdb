"""The last resorts cannot fail the experiment: a record neither the sidecar nor a rescue
file can take goes to standard error exactly once, and a closed or broken standard error,
interpreter shutdown or two recorders under a frozen clock never lose or fail a stage.

Each scenario runs its subject in a child interpreter with a timeout.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.process_life import stage_runs
from helpers.reliability import (
    fill_filesystem,
    is_root,
    spawn_python,
    stderr_payloads,
    tmpfs,
)

from stagetimer import Recorder, StageTimerWarning, record_timing
from stagetimer._format import RESCUE_FORMAT, RESCUE_PREFIX, RESCUE_SUFFIX


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    if not is_root():
        pytest.skip("mounting a tmpfs needs root")
    with tmpfs(tmp_path / "mnt", size="256k") as mnt:
        yield mnt


FULL_DISK_WRITER = """
import errno, os, signal, sys, warnings
from stagetimer import Recorder, record_timing
warnings.simplefilter("ignore")
directory, count, pad = sys.argv[1], int(sys.argv[2]), sys.argv[3]

def fill():
    fd = os.open(pad, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        for size in (1 << 16, 1 << 12, 64, 1):
            while True:
                try:
                    os.write(fd, b"\\0" * size)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    break
    finally:
        os.close(fd)

rec = Recorder(directory, lock_timeout=5)
for k in range(count):
    if k % 4 == 0:
        os.unlink(pad)  # space comes back: this save stores every pending record
    else:
        fill()  # full again: neither the save nor a rescue file can be written
    record_timing("train", 1.0 + k, run_idx=k + 1, recorder=rec)
print("pending", rec.pending, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.root
def test_a_disk_that_fills_up_puts_each_unsaved_record_on_stderr_exactly_once(
    small_fs: Path,
) -> None:
    art = small_fs / "art"
    record_timing("train", 0.5, run_idx=0, recorder=Recorder(art, strict=True))
    pad = fill_filesystem(small_fs)
    count = 31

    writer = spawn_python(FULL_DISK_WRITER, art, count, pad)
    _, err = writer.communicate(timeout=120)

    assert -signal.SIGKILL == writer.returncode, err
    printed = Counter(
        r["run"]["run_idx"] for p in stderr_payloads(err) for r in p["records"]
    )
    stored = Counter(r["run_idx"] for r in stage_runs(art, "train"))
    failed = {k + 1 for k in range(count) if k % 4 != 0}  # saved on a full disk
    lost = failed - set(printed)
    doubled = [k for k, n in printed.items() if n > 1]
    print(json.dumps({"failed": len(failed), "printed": len(printed), "lost": len(lost),
                      "printed_twice": len(doubled), "stored": len(stored) - 1}))
    assert (sorted(failed), [], []) == (sorted(printed), sorted(lost), doubled), err[-2000:]
    assert set(range(count + 1)) - failed <= set(stored)  # the others were saved
    assert [] == list(art.glob("timings.rescue-*.json"))


# Both the save and the rescue file fail: the directory lies under a regular file.
BROKEN_STDERR = """
import os, sys
from stagetimer import Recorder, record_timing
how = sys.argv[2]
rec = Recorder(sys.argv[1])
if how == "none":
    sys.stderr = None
elif how == "closed":
    sys.stderr.close()
elif how == "closed descriptor":
    sys.stderr.close()
    os.close(2)
elif how == "broken pipe":
    sys.stdin.readline()  # the parent closed the reading end of our stderr meanwhile
for k in range(3):
    record_timing("train", 1.0, run_idx=k, recorder=rec)
sys.stdout.write("returned\\n")
"""


@pytest.mark.parametrize("how", ["none", "closed", "closed descriptor", "broken pipe"])
def test_a_closed_or_broken_stderr_never_fails_a_stage(tmp_path: Path, how: str) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(BROKEN_STDERR), str(blocker / "art"), how],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    if how == "broken pipe":
        proc.stderr.close()  # the reader left, like `... 2>&1 | head -1` after one line
    proc.stdin.write("go\n")
    proc.stdin.close()
    out = proc.stdout.read()
    proc.wait(timeout=60)
    err = "" if how == "broken pipe" else proc.stderr.read()

    assert ("returned\n", 0) == (out, proc.returncode), err[-2000:]
    assert "Traceback" not in err


SHUTDOWN_WRITER = """
import sys
from stagetimer import Recorder, record_timing

class Late:
    def __del__(self):
        record_timing("late", 1.5, recorder=REC)

REC = Recorder(sys.argv[1])
if sys.argv[2] == "after a save":
    record_timing("early", 1.0, recorder=REC)
keep = Late()  # finalised while the interpreter shuts down, after the exit handlers
"""


@pytest.mark.parametrize("sidecar", ["missing", "corrupt"])
def test_a_first_save_from_del_at_interpreter_shutdown_lands_somewhere(
    tmp_path: Path, sidecar: str
) -> None:
    art = tmp_path / "art"
    art.mkdir()
    if sidecar == "corrupt":
        (art / "timings.json").write_bytes(b"{broken")
    writer = spawn_python(SHUTDOWN_WRITER, art, "first save")
    _, err = writer.communicate(timeout=60)

    saved = [r["seconds"] for r in stage_runs(art, "late")] if sidecar == "missing" else []
    rescued = [
        r["run"]["seconds"]
        for path in art.glob("timings.rescue-*.json")
        for r in json.loads(path.read_text())["records"]
    ]
    printed = [r["run"]["seconds"] for p in stderr_payloads(err) for r in p["records"]]
    assert 0 == writer.returncode, err
    assert [1.5] == saved + rescued + printed, err
    assert "Traceback" not in err and "ImportError" not in err


def test_a_save_from_del_at_interpreter_shutdown_after_a_save_reaches_the_sidecar(
    tmp_path: Path,
) -> None:
    """After a save, the process's hardware, software and job are known: a record made while
    the interpreter shuts down imports nothing and is saved whole, not rescued bare."""
    art = tmp_path / "art"
    writer = spawn_python(SHUTDOWN_WRITER, art, "after a save", env={"SLURM_JOB_ID": "4711"})
    _, err = writer.communicate(timeout=60)

    assert 0 == writer.returncode, err
    assert [] == list(art.glob("timings.rescue-*.json")), err
    early, late = stage_runs(art, "early")[0], stage_runs(art, "late")[0]
    assert 1.5 == late["seconds"], err
    keys = ("hardware_id", "job", "software_id", "cpus")
    assert {k: early.get(k) for k in keys} == {k: late.get(k) for k in keys}, err
    assert late["hardware_id"] and late["job"]["job_id"] == "4711", late
    assert "Traceback" not in err and "ImportError" not in err


def test_two_recorders_of_one_process_under_a_frozen_clock_keep_two_rescue_files(
    art: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    art.mkdir(parents=True)
    (art / "timings.json").write_bytes(b"{broken")
    monkeypatch.setattr(time, "time", lambda: 1_800_000_000.0)
    first, second = Recorder(art), Recorder(art)
    with pytest.warns(StageTimerWarning):
        record_timing("train", 1.0, run_idx=1, recorder=first)
    with pytest.warns(StageTimerWarning):
        record_timing("train", 2.0, run_idx=2, recorder=second)

    files = sorted(art.glob("timings.rescue-*.json"))
    assert 2 == len(files)
    assert [[1.0], [2.0]] == sorted(
        [r["run"]["seconds"] for r in json.loads(p.read_text())["records"]] for p in files
    )
    # The name _format.py gives: timings.rescue-<UTC time>Z-<pid>-<random>.json
    name = rf"{RESCUE_PREFIX}20270115T080000000000Z-{os.getpid()}-[0-9a-f]{{8}}{RESCUE_SUFFIX}"
    assert all(re.fullmatch(name, p.name) for p in files), files
    assert {RESCUE_FORMAT} == {json.loads(p.read_text())["format"] for p in files}
