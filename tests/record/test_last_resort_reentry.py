"""A handler that records while its own thread is inside stagetimer neither deadlocks nor
loses its record: a sweep that fires it at every point.

The subject runs in a child interpreter with a watchdog (``faulthandler`` ends it after
a few seconds stuck) and a timeout. A trace function picks the point: at the n-th
bytecode of the code under test it either calls the handler directly (as a signal
handler runs, between two bytecodes) or sends a real SIGUSR1 to the main thread, whose
Python handler runs at the next check of the interpreter.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.process_life import run_script

# The sweep of _settle's class of bug: every bytecode of the save path (_record/ and
# _store/: the markers, the sidecar's lock, claim and write) with a handler recording
# at that point;
# afterwards both records are in timings.json once and no started marker is left.
SETTLE_SWEEP = """
import json, os, sys, warnings
import stagetimer
from stagetimer import Recorder, record_timing, stage
warnings.simplefilter("ignore")
PKG = os.path.dirname(stagetimer.__file__)
TRACED = (os.path.join(PKG, "_record") + os.sep, os.path.join(PKG, "_store") + os.sep)
base, how = sys.argv[1], sys.argv[2]

def record(name, seconds, rec):
    if how == "stage":
        with stage(name, recorder=rec):
            pass
    else:
        record_timing(name, seconds, recorder=rec)

def trial(n):
    directory = os.path.join(base, str(n))
    rec = Recorder(directory)
    state = {"events": 0}

    def local(frame, event, arg):
        if event == "opcode":
            state["events"] += 1
            if state["events"] == n:
                record("handler", 2.0, rec)
        return local

    def tracer(frame, event, arg):
        if frame.f_code.co_filename.startswith(TRACED):
            frame.f_trace_opcodes = True
            return local
        return None

    record("warm", 0.5, rec)
    sys.settrace(tracer)
    try:
        record("main", 1.0, rec)
    finally:
        sys.settrace(None)
    rec.close()
    with open(os.path.join(directory, "timings.json")) as f:
        data = json.load(f)
    markers = os.path.join(directory, "timings.attempts")
    left = os.listdir(markers) if os.path.isdir(markers) else []
    runs = [len(data.get(k, {}).get("runs", [])) for k in ("main", "handler")]
    return state["events"], runs + [len(left)]

trial(0)  # first uses (caches of this process's identity) are not counted below
points, _ = trial(-1)  # never fires; a fresh directory, as each trial below has
lost, fired = [], 0
for n in range(1, points + 1):
    events, found = trial(n)
    # A run may take a few bytecodes fewer than the counted one: then no handler ran.
    ran = events >= n
    fired += ran
    if found != ([1, 1, 0] if ran else [1, 0, 0]):
        lost.append(n)
points = min(points, trial(-2)[0])  # counted again: one count may meet a slower path
print(json.dumps({"points": points, "lost": lost, "fired": fired}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("how", ["record_timing", "stage"])
def test_a_handler_recording_at_any_point_of_a_save_loses_nothing(
    tmp_path: Path, how: str
) -> None:
    done = run_script(SETTLE_SWEEP, tmp_path, how, timeout=170)
    result = json.loads(done.stdout)

    assert ([], True) == (result["lost"], result["points"] > 100), result
    assert result["fired"] >= result["points"] - 50, result


# Real SIGUSR1 at the n-th bytecode of the code under test, each trial from a fresh state.
SIGNAL_SWEEP = """
import faulthandler, json, os, signal, sys, threading, warnings
import stagetimer
warnings.simplefilter("ignore")
what, base, trials = sys.argv[1], sys.argv[2], int(sys.argv[3])
PKG = os.path.dirname(stagetimer.__file__) + os.sep
from stagetimer import Recorder, capture_hardware, record_timing, stage
from stagetimer._record import active, pending
from stagetimer.hardware import _capture

handled = []
sent = []  # trials whose code reached the n-th bytecode: the others send no signal
target = [None]

def handler(signum, frame):
    if what == "first stage":
        with stage("handler"):  # the STAGETIMER_DIR recorder, maybe being built
            pass
    else:
        record_timing("handler", 1.0, recorder=target[0])
    handled.append(1)

signal.signal(signal.SIGUSR1, handler)
main = threading.main_thread().ident

def run(n, directory):
    os.environ["STAGETIMER_DIR"] = directory
    active._env_recorders.clear()
    target[0] = Recorder(directory)
    _capture.clear_cache()
    pending._live.pop("hardware", None)
    state = {"events": 0}

    def local(frame, event, arg):
        if event == "opcode":
            state["events"] += 1
            if state["events"] == n:
                sent.append(n)
                signal.pthread_kill(main, signal.SIGUSR1)
        return local

    def tracer(frame, event, arg):
        if frame.f_code.co_filename.startswith(PKG):
            frame.f_trace_opcodes = True
            return local
        return None

    sys.settrace(tracer)
    try:
        if what == "first stage":
            with stage("main"):
                pass
        else:
            capture_hardware()
    finally:
        sys.settrace(None)
    target[0].close()
    return state["events"]

run(0, os.path.join(base, "warm"))  # modules imported on first use: not counted below
points = run(0, os.path.join(base, "count"))
step = max(1, points // trials)
faulthandler.dump_traceback_later(20, exit=True)  # stuck: a deadlock, say where
done = 0
for n in range(1, points + 1, step):
    run(n, os.path.join(base, str(n)))
    faulthandler.dump_traceback_later(20, exit=True)
    done += 1
faulthandler.cancel_dump_traceback_later()
print(json.dumps({"points": points, "trials": done, "sent": len(sent), "handled": len(handled)}))
"""


@pytest.mark.slow
@pytest.mark.parametrize(("what", "trials"), [("first stage", 150), ("capture", 40)])
def test_a_recording_sigusr1_handler_never_deadlocks(
    tmp_path: Path, what: str, trials: int
) -> None:
    done = run_script(SIGNAL_SWEEP, what, tmp_path, trials, timeout=170, check=False)

    assert 0 == done.returncode, done.stderr[-3000:]
    result = json.loads(done.stdout)
    # A run may take a few bytecodes fewer than the counted one (a cache warmed since):
    # a trial past its end sends nothing.
    assert result["sent"] >= min(trials, result["points"]) // 2, result
    assert result["handled"] == result["sent"], result
