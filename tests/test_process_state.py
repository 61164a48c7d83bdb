"""The one home of per-process state: one fork hook and one exit hook, whose work runs in
the order written in ``stagetimer._system.process_state``.

Forks and exits happen in interpreters of their own (a hang is a timeout).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.process_life import run_script

from stagetimer._system import process_state

needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

# Uses every module with a reset or exit work (a stage, a failed save, the captures, a
# heartbeat), then registers every reset and exit work again, wrapped to say when it
# runs, in the reverse of the written order.
SPIED = """
import json, os, sys, warnings
from stagetimer import Recorder, capture_hardware, capture_software, record_timing, stage
from stagetimer._system import process_state

directory = sys.argv[1]
os.makedirs(directory)
with open(os.path.join(directory, "timings.json"), "w") as f:
    f.write("{broken")  # every save fails: the record stays pending until exit
warnings.simplefilter("ignore")
rec = Recorder(directory, heartbeat=60)
with stage("train", recorder=rec):
    pass
capture_hardware()
capture_software()

ran = []

def spy(name, reset):
    def spied():
        ran.append(name)
        reset()
    return spied

def spy_exit(name, work):
    def spied():
        print("exit", name, flush=True)
        return work()
    return spied

resets = dict(process_state._fork_resets)
works = dict(process_state._exit_work)
process_state._fork_resets.clear()
process_state._exit_work.clear()
for name, reset in reversed(resets.items()):
    process_state.register_at_fork(name, after_in_child=spy(name, reset))
for name, work in reversed(works.items()):
    process_state.register_at_exit(name, spy_exit(name, work))
warnings.resetwarnings()  # the exit work's warnings are shown
"""

FORK_ORDER = SPIED + """
pid = os.fork()
if pid == 0:
    os.write(1, (json.dumps({"child": ran}) + "\\n").encode())
    os._exit(0)
_, status = os.waitpid(pid, 0)
print(json.dumps({"parent": ran, "status": status}), flush=True)
"""


@needs_fork
def test_the_resets_run_in_the_written_order_whatever_the_registration_order(
    tmp_path: Path,
) -> None:
    done = run_script(FORK_ORDER, tmp_path / "artifact", timeout=120)
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]

    assert [{"child": list(process_state.FORK_RESETS)}, {"parent": [], "status": 0}] == lines


def test_the_exit_work_runs_in_the_written_order(tmp_path: Path) -> None:
    done = run_script(SPIED, tmp_path / "artifact", timeout=120)

    expected = [f"exit {name}" for name in process_state.EXIT_WORK]
    assert expected == [line for line in done.stdout.splitlines() if line.startswith("exit")]
    assert "could not be saved at close" in done.stderr  # the recorder's exit work ran


FAILING_RESET = """
import os
import stagetimer
from stagetimer._system import process_state

ran = []

def fails():
    raise RuntimeError("this reset failed")

process_state.register_at_fork("store.claims", after_in_child=fails)
process_state.register_at_fork("hardware.capture", after_in_child=lambda: ran.append("last"))
pid = os.fork()
if pid == 0:
    os.write(1, repr(ran).encode())
    os._exit(0)
os.waitpid(pid, 0)
"""


@needs_fork
def test_a_failing_reset_is_reported_and_the_later_ones_still_run(tmp_path: Path) -> None:
    done = run_script(FAILING_RESET, timeout=60)

    assert "['last']" == done.stdout
    assert "this reset failed" in done.stderr


FRESH_IN_CHILD = """
import os, sys, warnings
from stagetimer import Recorder, record_timing
from stagetimer._record import heartbeat
from stagetimer._store import leftovers
from stagetimer._store.locking import claims as claim_info
from stagetimer._system import process_state

directory = sys.argv[1]
os.makedirs(directory)
with open(os.path.join(directory, "timings.json"), "w") as f:
    f.write("{broken")
warnings.simplefilter("ignore")
rec = Recorder(directory)
record_timing("train", 1.0, recorder=rec)  # fails: pending, in the rescue file
heartbeat.start("0123456789abcdef0123456789abcdef", directory, 60.0)

def state():
    return [
        rec.pending,
        len(process_state.with_pending),
        sorted(heartbeat.beating()),
        sorted(claim_info.held),
        sorted(leftovers.unclean),
    ]

claim_info.held.add(os.path.join(directory, "timings.json.claim"))
leftovers.unclean.add(os.path.join(directory, "timings.json"))
before = state()
pid = os.fork()
if pid == 0:
    os.write(1, (repr(state()) + "\\n").encode())
    os._exit(0)
os.waitpid(pid, 0)
print(repr(before == state()))
heartbeat.stop("0123456789abcdef0123456789abcdef")
"""


@needs_fork
def test_a_forked_child_starts_with_none_of_its_parents_state(tmp_path: Path) -> None:
    done = run_script(FRESH_IN_CHILD, tmp_path / "artifact", timeout=60)

    # the child: nothing pending, no beats, no claims, no unfinished writes;
    # the parent: all of it unchanged
    assert ["[0, 0, [], [], []]", "True"] == done.stdout.splitlines()


@pytest.mark.parametrize(
    "register",
    [
        lambda: process_state.register_at_fork("record.nowhere", after_in_child=lambda: None),
        lambda: process_state.register_at_exit("record.nowhere", lambda: []),
    ],
    ids=["fork", "exit"],
)
def test_a_name_without_a_place_in_the_order_is_refused(register: Callable[[], None]) -> None:
    with pytest.raises(ValueError, match=r"record\.nowhere"):
        register()
    assert "record.nowhere" not in process_state._fork_resets
    assert "record.nowhere" not in process_state._exit_work
