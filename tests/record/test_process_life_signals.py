"""Interrupts, signal handlers that record, and the order of exit handlers.

Real signals (``setitimer``, ``os.kill``) in child interpreters with timeouts.
"""

from __future__ import annotations

import collections
import json
import signal
from pathlib import Path

import pytest
from helpers.process_life import rescued_records, run_script, stage_runs, temp_files

pytestmark = pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs setitimer")

INTERRUPTED_SAVES = """
import json, os, random, signal, subprocess, sys, time, traceback, warnings
import stagetimer
from stagetimer import Recorder, record_timing

directory, n, storm = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "storm"
package = os.path.dirname(stagetimer.__file__)
warnings.simplefilter("ignore")

budget = [0]  # interrupts left for this save: a storm raises at most three per save

def on_alarm(signum, frame):
    if budget[0] > 0:
        budget[0] -= 1
        raise KeyboardInterrupt

signal.signal(signal.SIGALRM, on_alarm)
rec = Recorder(directory, lock_timeout=5)
record_timing("s", 0.001, run_idx=0, recorder=rec)
t0 = time.perf_counter()
for i in range(20):
    record_timing("warm", 0.0, recorder=rec)
save = (time.perf_counter() - t0) / 20
rng = random.Random(20261201)
outcome = {}

def one(i, delay):
    try:
        if delay:
            signal.setitimer(signal.ITIMER_REAL, delay, max(delay / 4, 5e-5) if storm else 0)
        record_timing("s", 0.001, run_idx=i, recorder=rec)
        return "returned"
    except KeyboardInterrupt as exc:
        # Inside: once Recorder.record registered the run (its save section or deeper).
        # An interrupt before that (argument checks) means the stage was never recorded.
        frames = traceback.extract_tb(exc.__traceback__)
        return "inside" if any(f.name == "section" for f in frames) else "outside"

for i in range(1, n + 1):
    # A quarter of the saves run undisturbed, so that what is pending drains. Otherwise
    # one interrupt per save; in a storm, up to three, a quarter of the delay apart,
    # which also interrupt the handling of the first (then the outcome is unknown).
    delay = 0.0
    if rng.random() < 0.75:
        delay = rng.uniform(1e-6, 1.3 * save)
        budget[0] = 3 if storm else 1
    try:
        try:
            outcome[i] = one(i, delay)
        except KeyboardInterrupt:
            outcome[i] = "outside"
    except KeyboardInterrupt:
        outcome[i] = "outside"
    budget[0] = 0
    signal.setitimer(signal.ITIMER_REAL, 0)

temps = sorted(p for p in os.listdir(directory) if ".tmp" in p)
pending = [p.finished.run_idx for p in rec._saver.pending]  # their run_idx
# This process and another one each save at once: no lock is left held.
t0 = time.monotonic()
record_timing("after_same", 1.0, recorder=Recorder(directory, lock_timeout=1, strict=True))
same_s = time.monotonic() - t0
other = subprocess.run([sys.executable, "-c",
    "import sys; from stagetimer import Recorder, record_timing; "
    "record_timing('after_other', 1.0, recorder=Recorder(sys.argv[1], lock_timeout=1, "
    "strict=True))", directory], capture_output=True, text=True, timeout=60)
rescued = [r["run"]["run_idx"] for name in sorted(os.listdir(directory))
           if name.startswith("timings.rescue-")
           for r in json.load(open(os.path.join(directory, name)))["records"]]
rec.close()
print(json.dumps({"outcome": outcome, "temps": temps, "pending": pending,
                  "rescued": rescued, "same_s": same_s, "other_rc": other.returncode,
                  "other_err": other.stderr}))
"""


@pytest.mark.slow
@pytest.mark.parametrize(("mode", "saves"), [("one", 2000), ("storm", 600)])
def test_keyboard_interrupts_at_random_points_of_2000_saves_lose_and_double_nothing(
    tmp_path: Path, mode: str, saves: int
) -> None:
    directory = tmp_path / "artifact"
    done = run_script(INTERRUPTED_SAVES, directory, saves, mode, timeout=300)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    outcome = {int(i): how for i, how in result["outcome"].items()}
    counts = collections.Counter(r["run_idx"] for r in stage_runs(directory, "s"))

    assert [] == [i for i, n in counts.items() if n > 1]  # no run stored twice
    must_be_stored = {i for i, how in outcome.items() if how != "outside"}
    assert [] == sorted(must_be_stored - set(counts))  # nothing silently lost
    if mode == "one":
        assert [] == sorted(set(result["pending"]) - set(result["rescued"]))  # all rescued
        assert [] == result["temps"]  # no temporary file, right after the interrupts
    # (In a storm, an interrupt of the interrupt's own handling -- the rescue write, the
    # removal of a temporary file -- is finished by the recorder's next save or by exit:
    # must_be_stored and the temp_files check after close cover it.)
    assert 0 == result["other_rc"], result["other_err"]  # another process saves at once
    assert [1.0] == [r["seconds"] for r in stage_runs(directory, "after_same")]
    assert [1.0] == [r["seconds"] for r in stage_runs(directory, "after_other")]
    assert [] == rescued_records(directory)  # close stored what was pending
    assert [] == temp_files(directory)
    assert collections.Counter(outcome.values())["inside"] > 30  # the scenario happened


SIGNAL_HANDLER_RECORDS = """
import os, signal, sys, threading, time
import stagetimer
from stagetimer import Recorder, record_timing

directory, n, fresh = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "first-capture"
package = os.path.dirname(stagetimer.__file__)
# strict and a short lock_timeout: a handler waiting on its own process's lock would
# raise LockTimeoutError out of the interrupted code and fail the script.
rec = Recorder(directory, lock_timeout=0.5, strict=True, policy="upsert")
handled, inside = [], []

def on_usr1(signum, frame):
    k = len(handled)
    handled.append(k)
    f = frame
    while f is not None and not f.f_code.co_filename.startswith(package):
        f = f.f_back
    inside.append(f is not None)
    record_timing("preempt", 0.01, run_idx=k, recorder=rec)

signal.signal(signal.SIGUSR1, on_usr1)
stop = threading.Event()

def sender():
    # A fixed number of signals, a little further apart than a save takes.
    for k in range(10 if fresh else 150):
        if stop.is_set():
            break
        os.kill(os.getpid(), signal.SIGUSR1)
        time.sleep(0.001 if fresh else 0.003)

thread = threading.Thread(target=sender)
thread.start()
for i in range(n):  # in first-capture mode, n == 1: signals during the first capture
    record_timing("main", 0.02, run_idx=i, recorder=rec)
stop.set()
thread.join()
time.sleep(0.05)  # let the last signal's handler run
record_timing("end", 0.0, recorder=rec)
print(len(handled), sum(inside))
"""


@pytest.mark.parametrize(
    ("mode", "saves"), [("saves", 300), ("first-capture", 1)], ids=["during-saves", "first-capture"]
)
def test_a_signal_handler_recording_during_a_save_neither_waits_nor_is_lost(
    tmp_path: Path, mode: str, saves: int
) -> None:
    directory = tmp_path / "artifact"
    done = run_script(SIGNAL_HANDLER_RECORDS, directory, saves, mode, timeout=120)
    handled, inside = map(int, done.stdout.split())

    assert list(range(saves)) == [r["run_idx"] for r in stage_runs(directory, "main")]
    assert list(range(handled)) == [r["run_idx"] for r in stage_runs(directory, "preempt")]
    assert inside > 0  # some handlers did run inside a save (or the first capture)
    assert [] == rescued_records(directory)
    assert [] == temp_files(directory)


EXIT_ORDER = """
import atexit, sys, warnings

directory, outcome = sys.argv[1], sys.argv[2]

def late():
    from stagetimer import Recorder, record_timing

    warnings.simplefilter("ignore")
    record_timing("late", 2.5, run_idx=3, recorder=Recorder(directory))

atexit.register(late)  # before stagetimer's own exit hook: it runs after it
import stagetimer  # noqa: E402
"""


def test_a_record_made_in_an_exit_handler_that_runs_after_stagetimers_is_not_lost(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "artifact"
    directory.mkdir()
    (directory / "timings.json").write_text("{broken")
    run_script(EXIT_ORDER, directory, "fails")

    assert [("late", 2.5, 3)] == [
        (r["stage"], r["run"]["seconds"], r["run"]["run_idx"]) for r in rescued_records(directory)
    ]


def test_a_record_made_in_a_late_exit_handler_is_saved(tmp_path: Path) -> None:
    directory = tmp_path / "artifact"
    run_script(EXIT_ORDER, directory, "saves")

    assert [2.5] == [r["seconds"] for r in stage_runs(directory, "late")]
    assert [] == rescued_records(directory)
