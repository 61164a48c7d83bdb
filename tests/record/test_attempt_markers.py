"""Started markers: written before the block runs, removed once its run is saved, kept
and replaced when the block raised or was interrupted, and leftovers cleaned.

Each scenario runs in its own interpreter (``run_script``) with a timeout; signals are
real.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path
from typing import Any

import pytest
from helpers.process_life import run_script, stage_runs

from stagetimer._format import ATTEMPTS_DIR, MARKER_FIELDS

ENTRY_KEYS = list(MARKER_FIELDS[: MARKER_FIELDS.index("parent") + 1])
FAILED_KEYS = list(MARKER_FIELDS)


def markers(directory: Path) -> list[dict[str, Any]]:
    """The markers in ``directory``, parsed, in name order."""
    found = directory / ATTEMPTS_DIR
    if not found.exists():
        return []
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(found.iterdir())]


INSIDE = """
import json, os, sys
from stagetimer import Recorder, stage
directory = sys.argv[1]
rec = Recorder(directory)
with stage("train", run_idx=3, label="a", recorder=rec) as timing:
    seen = [json.load(open(os.path.join(directory, "timings.attempts", n)))
            for n in os.listdir(os.path.join(directory, "timings.attempts"))]
print(json.dumps({"seen": seen, "pid": os.getpid(), "seconds": timing.seconds}))
"""


def test_a_finished_stage_has_its_marker_while_it_runs_and_its_run_holds_the_id(
    tmp_path: Path,
) -> None:
    art = tmp_path / "art"
    done = json.loads(run_script(INSIDE, art).stdout)
    (seen,) = done["seen"]
    (run,) = stage_runs(art, "train")

    assert ENTRY_KEYS == list(seen)
    assert (1, "train", 3, "a") == (seen["format"], seen["stage"], seen["run_idx"], seen["label"])
    assert run["attempt_id"] == seen["attempt_id"] and len(seen["attempt_id"]) == 32
    assert int(seen["attempt_id"], 16) >= 0
    assert seen["started_at"] == run["started_at"]
    assert done["pid"] == seen["writer"]["pid"] and seen["writer"]["uid"] == os.geteuid()
    assert seen["heartbeat"] is None
    assert [] == markers(art)  # removed once the run was saved


FAILS = """
import os, signal, sys
from stagetimer import Recorder, stage
directory, how = sys.argv[1], sys.argv[2]

class Preempted(Exception):
    pass

def on_usr1(signum, frame):
    raise Preempted("from the handler")

signal.signal(signal.SIGUSR1, on_usr1)
rec = Recorder(directory)
error = None
try:
    with stage("train", run_idx=0, recorder=rec):
        if how == "raise":
            error = ValueError("secret data 1234")
            raise error
        if how == "interrupt":
            raise KeyboardInterrupt
        if how == "exit":
            sys.exit(3)
        if how == "signal":
            os.kill(os.getpid(), signal.SIGUSR1)
            signal.pause()
except BaseException as caught:
    print(type(caught).__name__, caught is error or error is None, caught.args)
"""


@pytest.mark.parametrize(
    ("how", "outcome", "exception"),
    [
        ("raise", "raised", "ValueError"),
        ("interrupt", "interrupted", "KeyboardInterrupt"),
        ("exit", "interrupted", "SystemExit"),
        ("signal", "interrupted", "__main__.Preempted"),
    ],
)
def test_a_failed_block_keeps_its_marker_saying_how_it_ended_and_nothing_else(
    tmp_path: Path, how: str, outcome: str, exception: str
) -> None:
    art = tmp_path / "art"
    out = run_script(FAILS, art, how).stdout.split(maxsplit=2)
    (marker,) = markers(art)

    assert out[0] == exception.rsplit(".")[-1] and out[1] == "True"  # propagated unchanged
    assert FAILED_KEYS == list(marker)
    assert (outcome, exception) == (marker["outcome"], marker["exception"])
    assert 0 <= marker["seconds"] < 10 and marker["ended_at"] >= marker["started_at"]
    assert "secret" not in json.dumps(marker)  # the type name, never the message
    assert not (art / "timings.json").exists()  # nothing recorded
    assert [] == [p for p in (art / ATTEMPTS_DIR).iterdir() if not p.name.endswith(".json")]


OFF = """
import os, sys
from stagetimer import Recorder, stage
directory, how = sys.argv[1], sys.argv[2]
with stage("s", recorder=Recorder(directory, attempts=how != "setting")):
    print(os.path.exists(os.path.join(directory, "timings.attempts")))
"""


@pytest.mark.parametrize("how", ["setting", "environment"])
def test_markers_are_off_when_asked(tmp_path: Path, how: str) -> None:
    env = {"STAGETIMER_ATTEMPTS": "0"} if how == "environment" else {}
    out = run_script(OFF, tmp_path / "art", how, env=env).stdout

    assert "False\n" == out
    assert "attempt_id" not in stage_runs(tmp_path / "art", "s")[0]


#: A save that replaces the run the leftover marker names (a sequential reset).
LEFTOVER = """
import sys
from stagetimer import Recorder, record_timing
record_timing("train", 1.0, run_idx=0, label="a", recorder=Recorder(sys.argv[1]))
"""


def _leftover(art: Path) -> Path:
    """What a writer killed between its publish and its marker's removal leaves: its run
    in timings.json and its marker (written back as it was)."""
    done = json.loads(run_script(INSIDE, art).stdout)
    (seen,) = done["seen"]
    path = art / ATTEMPTS_DIR / f"{seen['attempt_id']}.json"
    path.write_text(json.dumps(seen))
    return path


def test_a_leftover_marker_of_a_saved_run_is_removed_by_the_next_save(tmp_path: Path) -> None:
    art = tmp_path / "art"
    leftover = _leftover(art)
    running = art / ATTEMPTS_DIR / ("ab" * 16 + ".json")  # another attempt, not in the file
    shutil.copy(leftover, running)

    run_script(LEFTOVER, art)

    assert not leftover.exists()
    assert running.exists()


@pytest.mark.root
def test_another_users_leftover_marker_is_never_removed(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to give a file to another user")
    art = tmp_path / "art"
    leftover = _leftover(art)
    os.chown(leftover, 54321, 54321)

    run_script(LEFTOVER, art)

    assert leftover.exists()


DECORATED = """
import asyncio, sys
from stagetimer import Recorder, timed_stage
rec = Recorder(sys.argv[1])

@timed_stage("agen", recorder=rec)
async def agen():
    yield 1
    raise ValueError("secret")

@timed_stage("gen", recorder=rec)
def gen():
    yield 1
    raise KeyError("secret")

async def main():
    try:
        async for _ in agen():
            pass
    except ValueError:
        pass

asyncio.run(main())
try:
    list(gen())
except KeyError:
    pass
"""


def test_a_decorated_generator_that_raises_names_its_exception(tmp_path: Path) -> None:
    art = tmp_path / "art"
    run_script(DECORATED, art)

    assert [("agen", "raised", "ValueError"), ("gen", "raised", "KeyError")] == sorted(
        (m["stage"], m["outcome"], m["exception"]) for m in markers(art)
    )


CHANGED = """
import json, os, sys
from stagetimer import Recorder, stage
directory = sys.argv[1]
folder = os.path.join(directory, "timings.attempts")
rec = Recorder(directory, attempts=False)
refused = {}
for name, value in [("attempts", True), ("heartbeat", 30.0), ("directory", directory + "2"),
                    ("strict", True), ("policy", "upsert")]:
    try:
        setattr(rec, name, value)
    except AttributeError as exc:
        refused[name] = str(exc)
with stage("off", run_idx=0, recorder=rec):
    off = os.path.exists(folder)
print(json.dumps({"off": off, "refused": refused, "attempts": rec.attempts,
                  "elsewhere": os.path.exists(directory + "2")}))
"""


def test_a_recorders_settings_cannot_change_after_it_is_made(tmp_path: Path) -> None:
    """The saver and the markers were made for the settings the recorder was made with: a
    setting assigned later is refused with an error naming it, and nothing follows it
    (before, markers followed a new directory while runs went to the old one)."""
    done = json.loads(run_script(CHANGED, tmp_path / "art").stdout)

    assert done["off"] is False and done["attempts"] is False and done["elsewhere"] is False
    assert sorted(done["refused"]) == ["attempts", "directory", "heartbeat", "policy", "strict"]
    for name, message in done["refused"].items():
        assert f"Recorder.{name} cannot be changed" in message, message
    assert [run["run_idx"] for run in stage_runs(tmp_path / "art", "off")] == [0]


FORKED_HAND_OVER = """
import json, os, sys
from stagetimer import Recorder, stage
directory = sys.argv[1]
folder = os.path.join(directory, "timings.attempts")
rec = Recorder(directory)
with stage("parent", recorder=rec):
    pass
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    def interrupt(frame, event, arg):
        if event == "call" and frame.f_code.co_name == "_save_handed":
            raise KeyboardInterrupt  # after the hand-over, before its save
        return None

    sys.settrace(interrupt)
    try:
        with stage("child", recorder=rec) as timing:
            pass
    except KeyboardInterrupt:
        pass
    finally:
        sys.settrace(None)
    said = []
    for name in os.listdir(folder):
        with open(os.path.join(folder, name)) as f:
            said.append(json.load(f).get("outcome"))
    rec.close()
    os.write(w, json.dumps({"seconds": timing.seconds, "said": said}).encode())
    os._exit(0)
os.close(w)
print(os.read(r, 4096).decode())
os.waitpid(pid, 0)
"""


def test_a_forked_childs_run_handed_over_before_an_interrupt_is_not_marked_failed(
    tmp_path: Path,
) -> None:
    # The child's records are its own saver's: its markers look there, not in the
    # pending list the parent had at fork.
    art = tmp_path / "art"
    done = json.loads(run_script(FORKED_HAND_OVER, art).stdout)

    assert done["seconds"] is not None and [None] == done["said"]
    assert 1 == len(stage_runs(art, "child"))
    assert [] == markers(art)


OPEN_AT_EXIT = """
import os, sys, threading
from stagetimer import Recorder, stage
directory, how = sys.argv[1], sys.argv[2]
rec = Recorder(directory)
with stage("done", run_idx=0, recorder=rec):
    pass
if how == "interrupt-at-exit":
    # an interrupt at the first line of Stage.__exit__: no code of its own ever runs
    def interrupt(frame, event, arg):
        if event == "call" and frame.f_code.co_name == "__exit__" \\
                and "stagetimer" in frame.f_code.co_filename:
            sys.settrace(None)
            raise KeyboardInterrupt
        return None
    with stage("fit", run_idx=1, recorder=rec):
        sys.settrace(interrupt)
# a framework's callback entered the stage and saw no end of it
opened = stage("fit", run_idx=1, recorder=rec)
opened.__enter__()
if how == "raise":
    raise ValueError("a secret the marker must not hold")
if how == "fork":
    pid = os.fork()
    if pid == 0:
        sys.exit(0)  # the child's exit runs its atexit hooks: not its attempt
    os.waitpid(pid, 0)
    names = os.listdir(os.path.join(directory, "timings.attempts"))
    print(len(names))
    opened.__exit__(None, None, None)
"""


@pytest.mark.parametrize(
    ("how", "outcome", "exception", "evidence"),
    [
        ("raise", "raised", "ValueError", "its block raised ValueError"),
        ("end", "interrupted", None, "its block was left open when its process exited"),
    ],
)
def test_a_stage_open_when_the_interpreter_exits_reads_as_failed_not_killed(
    tmp_path: Path, how: str, outcome: str, exception: str | None, evidence: str
) -> None:
    """A fit whose callback saw no end (the framework calls no hook when it raises): the
    marker says it failed, with the exception that ended the program where one did,
    instead of waiting for a reader to call it killed."""
    from stagetimer import attempts

    art = tmp_path / "art"
    done = run_script(OPEN_AT_EXIT, art, how, check=False)
    assert done.returncode == (1 if how == "raise" else 0), done.stderr[-2000:]

    (marker,) = markers(art)
    assert (marker["stage"], marker["outcome"], marker["exception"]) == (
        "fit", outcome, exception
    )
    assert marker["seconds"] >= 0 and "secret" not in json.dumps(marker)
    assert list(marker) == FAILED_KEYS
    (fit,) = [a for a in attempts(art) if a.stage == "fit"]
    assert (fit.state, fit.cause) == ("failed", outcome)
    assert fit.evidence.startswith(evidence), fit.evidence


def test_an_interrupt_before_stage_exit_runs_leaves_an_interrupted_marker(
    tmp_path: Path,
) -> None:
    """The one window ``Stage.__exit__`` cannot close itself (an interrupt at its first
    instruction): the exit of the interpreter the interrupt ends says so."""
    art = tmp_path / "art"
    done = run_script(OPEN_AT_EXIT, art, "interrupt-at-exit", check=False)
    # an uncaught KeyboardInterrupt ends the interpreter by SIGINT, after its exit hooks
    assert done.returncode == -signal.SIGINT, done.stderr[-2000:]
    assert "KeyboardInterrupt" in done.stderr

    (marker,) = markers(art)
    assert (marker["stage"], marker["outcome"], marker["exception"]) == (
        "fit", "interrupted", "KeyboardInterrupt"
    )
    assert [run["run_idx"] for run in stage_runs(art, "done")] == [0]
    assert stage_runs(art, "fit") == []


def test_a_forked_child_exiting_leaves_its_parents_open_stage_alone(tmp_path: Path) -> None:
    art = tmp_path / "art"
    done = run_script(OPEN_AT_EXIT, art, "fork")

    assert done.stdout.split() == ["1"]  # the parent's marker, as it was written
    assert markers(art) == []  # the parent then finished the stage: its marker went
    assert [run["run_idx"] for run in stage_runs(art, "fit")] == [1]
