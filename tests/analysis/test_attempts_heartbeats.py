"""Heartbeats decide for a writer on another host: a real writer beating every 0.3 s in
a UTS namespace of its own (another host name), read from here while it beats and after
it was killed."""

from __future__ import annotations

import datetime
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from stagetimer import attempts

pytestmark = [pytest.mark.root, pytest.mark.slow]

BEAT = 0.3
WRITER = f"""
import sys, time
from stagetimer import Recorder, stage
with stage("train", run_idx=0, recorder=Recorder(sys.argv[1], heartbeat={BEAT})):
    print("in", flush=True)
    time.sleep(120)
"""


def test_a_writer_on_another_host_is_running_while_it_beats_and_killed_after(
    tmp_path: Path,
) -> None:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare(1) for a host name of its own")
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    command = f"hostname writer-elsewhere && exec {sys.executable} {script} {tmp_path / 'art'}"
    child = subprocess.Popen(["unshare", "--uts", "sh", "-c", command], stdout=subprocess.PIPE,
                             text=True, cwd=tempfile.gettempdir())
    try:
        assert child.stdout is not None and "in\n" == child.stdout.readline()
        time.sleep(4 * BEAT)
        (running,) = attempts(tmp_path / "art")
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    died = datetime.datetime.now(datetime.timezone.utc)
    time.sleep(4 * BEAT)

    (killed,) = attempts(tmp_path / "art")

    assert ("running", "writer-elsewhere") == (running.state, running.host)
    assert "last heartbeat" in running.evidence
    assert ("killed", "killed") == (killed.state, killed.cause)
    assert killed.ended_between is not None and killed.started_at is not None
    low, high = killed.ended_between
    assert low is not None and high is not None
    # Ended between its last beat and one beat later; it beat until it died.
    assert datetime.timedelta(seconds=BEAT) == high - low
    assert killed.started_at + datetime.timedelta(seconds=3 * BEAT) <= low <= died
    assert "no heartbeat since" in killed.evidence
