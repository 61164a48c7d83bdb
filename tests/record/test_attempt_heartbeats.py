"""Heartbeats: a running stage's marker is touched every S seconds when asked, by one
daemon thread that a forked child does not inherit, and never otherwise.

Each scenario runs in its own interpreter with a timeout; the fork and the kill are
real.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.process_life import run_script

from stagetimer import Recorder
from stagetimer._errors import InvalidSettingError
from stagetimer._format import ATTEMPTS_DIR

BEATING = """
import json, os, sys, threading, time
from stagetimer import Recorder, stage
directory, setting = sys.argv[1], sys.argv[2]
rec = Recorder(directory, heartbeat=None if setting == "env" else float(setting) or None)
names = lambda: sorted(t.name for t in threading.enumerate())
with stage("train", run_idx=0, recorder=rec):
    (path,) = [os.path.join(directory, "timings.attempts", n)
               for n in os.listdir(os.path.join(directory, "timings.attempts"))]
    marker = json.load(open(path))
    first = os.stat(path).st_mtime_ns
    time.sleep(1.0)
    last = os.stat(path).st_mtime_ns
    inside = names()
time.sleep(0.3)
print(json.dumps({"marker": marker, "moved": (last - first) / 1e9, "inside": inside,
                  "after": names()}))
"""


@pytest.mark.parametrize("setting", ["0.2", "env", "0"])
def test_a_running_stages_marker_beats_every_s_seconds_only_when_asked(
    tmp_path: Path, setting: str
) -> None:
    env = {"STAGETIMER_HEARTBEAT": "0.2"} if setting == "env" else {}
    done = json.loads(run_script(BEATING, tmp_path / "art", setting, env=env).stdout)

    if setting == "0":
        assert done["marker"]["heartbeat"] is None
        assert 0 == done["moved"]
        assert ["MainThread"] == done["inside"]  # no thread of its own unless asked
        return
    assert 0.2 == done["marker"]["heartbeat"]
    assert 0.5 <= done["moved"] <= 1.3  # about four beats in the second
    assert ["MainThread", "stagetimer-heartbeat"] == done["inside"]
    assert ["MainThread"] == done["after"]  # no beating thread once no stage runs


FORKED = """
import json, os, sys, threading, time
from stagetimer import Recorder, stage
from stagetimer._record import heartbeat
directory = sys.argv[1]
rec = Recorder(directory, heartbeat=0.2)
marker_dir = os.path.join(directory, "timings.attempts")
with stage("train", run_idx=0, recorder=rec):
    (name,) = os.listdir(marker_dir)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        # The child leaves its parent's block too, after a while: what does it beat?
        threads = sorted(t.name for t in threading.enumerate())
        beats = sorted(heartbeat.beating())
        os.write(w, json.dumps({"threads": threads, "beats": beats}).encode())
        os.close(w)
        time.sleep(0.2)
        child_leaves = True
    else:
        os.close(w)
        child = json.loads(os.read(r, 4096))
        os.waitpid(pid, 0)
        before = os.stat(os.path.join(marker_dir, name)).st_mtime_ns
        time.sleep(0.7)
        after = os.stat(os.path.join(marker_dir, name)).st_mtime_ns
if pid == 0:
    os._exit(0)
print(json.dumps({"child": child, "moved": (after - before) / 1e9, "name": name,
                  "left": os.listdir(marker_dir)}))
"""


def test_a_forked_child_inherits_no_beating_thread_and_leaves_the_parents_marker(
    tmp_path: Path,
) -> None:
    art = tmp_path / "art"
    done = json.loads(run_script(FORKED, art).stdout)
    runs = json.loads((art / "timings.json").read_text())["train"]["runs"]

    assert {"threads": ["MainThread"], "beats": []} == done["child"]
    assert done["moved"] >= 0.3  # the parent's marker beat on after the child left
    assert [] == done["left"]  # and was removed by the parent's save only
    # The child recorded its own run, without the parent's attempt.
    assert [done["name"][:32]] == [r["attempt_id"] for r in runs if "attempt_id" in r]


KILLED = """
import sys, time
from stagetimer import Recorder, stage
with stage("train", run_idx=0, recorder=Recorder(sys.argv[1], heartbeat=0.1)):
    print("started", flush=True)
    time.sleep(60)
"""


def test_a_killed_writers_marker_stops_beating(tmp_path: Path) -> None:
    art = tmp_path / "art"
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED, str(art)], stdout=subprocess.PIPE, text=True,
        cwd=tmp_path,
    )
    try:
        assert proc.stdout is not None and "started\n" == proc.stdout.readline()
        (marker,) = (art / ATTEMPTS_DIR).iterdir()
        time.sleep(0.35)
        beating = marker.stat().st_mtime_ns
        assert beating > marker.stat().st_ctime_ns - 10**9  # beats reached it
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        killed = marker.stat().st_mtime_ns
        time.sleep(0.4)
    finally:
        proc.kill()
        proc.wait(timeout=10)

    assert killed == marker.stat().st_mtime_ns  # no beat after the kill
    assert json.loads(marker.read_text())["heartbeat"] == 0.1


@pytest.mark.parametrize(
    "value", [0, -1, float("nan"), float("inf"), True, "5", 1e-300, 1e-4, 2e9, 10**400]
)
def test_a_heartbeat_that_is_no_positive_number_is_refused(tmp_path: Path, value: object) -> None:
    with pytest.raises(InvalidSettingError, match="heartbeat"):
        Recorder(tmp_path, heartbeat=value)  # type: ignore[arg-type]


BAD_ENV = """
import json, os, sys, warnings
from stagetimer import Recorder, stage
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    for i in range(3):
        with stage("s", run_idx=i, recorder=Recorder(sys.argv[1])):
            marker = os.listdir(os.path.join(sys.argv[1], "timings.attempts"))
print(json.dumps([str(w.message) for w in caught]))
"""


def test_a_bad_heartbeat_in_the_environment_warns_once_and_the_stages_are_recorded(
    tmp_path: Path,
) -> None:
    env = {"STAGETIMER_HEARTBEAT": "soon"}
    warned = json.loads(run_script(BAD_ENV, tmp_path / "art", env=env).stdout)
    runs = json.loads((tmp_path / "art" / "timings.json").read_text())["s"]["runs"]

    assert 3 == len(runs) and all("attempt_id" in r for r in runs)
    assert 1 == len(warned) and "STAGETIMER_HEARTBEAT='soon'" in warned[0], warned
    assert not os.listdir(tmp_path / "art" / ATTEMPTS_DIR)


MANY_THREADS = """
import json, os, sys, threading, time
from stagetimer import Recorder, stage
directory = sys.argv[1]
rec = Recorder(directory, heartbeat=0.05)
beaters = lambda: sum(t.name == "stagetimer-heartbeat" for t in threading.enumerate())
most = [0]

def churn(k):
    for i in range(40):
        with stage(f"s{k}", run_idx=i, recorder=rec):
            most[0] = max(most[0], beaters())

with stage("long", run_idx=0, recorder=rec):
    (path,) = [os.path.join(directory, "timings.attempts", n)
               for n in os.listdir(os.path.join(directory, "timings.attempts"))]
    first = os.stat(path).st_mtime_ns
    workers = [threading.Thread(target=churn, args=(k,)) for k in range(6)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    time.sleep(0.3)
    beats_after = os.stat(path).st_mtime_ns - first
rec.close()
time.sleep(0.3)
print(json.dumps({"most": most[0], "moved": beats_after / 1e9, "after": beaters()}))
"""


@pytest.mark.slow
def test_threads_starting_and_stopping_stages_share_one_beating_thread(tmp_path: Path) -> None:
    done = json.loads(run_script(MANY_THREADS, tmp_path / "art", timeout=120).stdout)

    assert 1 == done["most"]  # one thread beats them all, whatever the churn
    assert done["moved"] > 0.2  # the long stage kept beating through it
    assert 0 == done["after"]  # and it leaves once none beats


def test_stages_without_heartbeats_leave_nothing_queued_for_a_beating_thread(
    tmp_path: Path,
) -> None:
    from stagetimer import stage
    from stagetimer._record import heartbeat

    rec = Recorder(tmp_path / "art", policy="upsert")
    before = heartbeat._beats.wake.qsize()
    for seed in range(200):
        with stage("train", run_idx=seed, recorder=rec):
            pass
    rec.close()

    assert (before, []) == (heartbeat._beats.wake.qsize(), sorted(heartbeat.beating()))
