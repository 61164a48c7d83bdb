"""An attempt whose block raised or was interrupted is failed from that moment, in a
process that goes on: read by another process while the writer still runs."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from stagetimer import attempts

#: A process that survives three failed blocks (a real Ctrl-C caught, a raise caught,
#: a cancelled task), says "settled", and goes on (heartbeats on) until told to end.
LIVING = """
import asyncio, os, signal, sys, time
from stagetimer import Recorder, stage, timed_stage

@timed_stage("rollout", run_idx=0)
def rollout():
    raise ValueError("a message the marker must not hold")

async def evaluate():
    async with stage("evaluate", run_idx=0):
        await asyncio.sleep(60)

async def cancelled():
    task = asyncio.ensure_future(evaluate())
    await asyncio.sleep(0.2)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass

with Recorder(sys.argv[1], heartbeat=0.1):
    try:
        with stage("ippo_train", run_idx=0):
            time.sleep(0.3)
            os.kill(os.getpid(), signal.SIGINT)  # Python's own handler: KeyboardInterrupt
            time.sleep(30)
    except KeyboardInterrupt:
        pass
    try:
        rollout()
    except ValueError:
        pass
    asyncio.run(cancelled())
    print("settled", flush=True)
    with stage("nashconv", run_idx=0):  # the program goes on, and is still running
        sys.stdin.readline()
"""


def test_failed_blocks_are_failed_at_once_while_the_process_goes_on(tmp_path: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(LIVING), str(tmp_path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    try:
        assert child.stdout is not None and child.stdin is not None
        assert "settled\n" == child.stdout.readline()
        before = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "timings.attempts").iterdir()}
        time.sleep(0.5)  # five heartbeat periods: a failed attempt's marker is not beaten
        found = {a.stage: a for a in attempts(tmp_path)}
        after = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "timings.attempts").iterdir()}
        assert child.poll() is None  # read while the writer still runs
        child.stdin.write("\n")
        child.stdin.close()
        assert 0 == child.wait(timeout=60), child.stderr.read() if child.stderr else ""
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert ("failed", "interrupted", "KeyboardInterrupt") == (
        found["ippo_train"].state, found["ippo_train"].cause, found["ippo_train"].exception
    )
    seconds = found["ippo_train"].seconds
    assert seconds is not None and 0.3 <= seconds < 5, seconds  # up to the interrupt
    assert ("failed", "raised", "ValueError") == (
        found["rollout"].state, found["rollout"].cause, found["rollout"].exception
    )
    assert ("failed", "interrupted", "asyncio.exceptions.CancelledError") == (
        found["evaluate"].state, found["evaluate"].cause, found["evaluate"].exception
    )
    assert "running" == found["nashconv"].state
    settled = [m for m in before if m in after and before[m] == after[m]]
    assert 3 == len(settled) and 4 == len(after)  # only the running stage's marker beats
