"""An interrupt at every bytecode of a recorded stage's entry and exit: its marker's
creation, the hand-over, the finish save and the marker's removal.

At the n-th bytecode of stagetimer's recording code (``_record/``: the stage, the
recorder, the saver) and of its storage (``_store/``: the markers, the sidecar's lock
and claim, the atomic write) a trace function raises ``KeyboardInterrupt`` or
``SystemExit``, as a signal handler does between two bytecodes. Each trial starts from
a fresh directory and recorder in a child interpreter with a timeout. Afterwards, in
every trial (and ``rec.close()`` returns: no lock was left held):

- the stage's run is in ``timings.json`` at most once, and once when ``.seconds`` said
  the stage finished;
- an attempt whose block ran and whose run is not stored has exactly one marker, which
  says it was interrupted; an entry interrupted before its block ran leaves none;
- no attempt is both finished (its id in ``timings.json``) and failed (a marker with
  an outcome), no marker is left saying it still runs, and no temporary file is left.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.process_life import run_script

INTERRUPT_SWEEP = """
import json, os, sys, warnings
import stagetimer
from stagetimer import Recorder, stage
warnings.simplefilter("ignore")
PKG = os.path.dirname(stagetimer.__file__)
TRACED = (os.path.join(PKG, "_record") + os.sep, os.path.join(PKG, "_store") + os.sep)
base, kind, first = sys.argv[1], sys.argv[2], int(sys.argv[3])
Interrupt = KeyboardInterrupt if kind == "KeyboardInterrupt" else SystemExit


def trial(n):
    directory = os.path.join(base, str(n))
    rec = Recorder(directory, policy="upsert")
    with stage("warm", recorder=rec):
        pass
    state = {"events": 0, "at": None, "entry_of_exit": False}

    def local(frame, event, arg):
        if event == "opcode":
            state["events"] += 1
            if state["events"] == n:
                state["at"] = f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"
                # The first instruction of the stage's __exit__, before its try: no code
                # of the exit can see an interrupt there (a known window, said below).
                state["entry_of_exit"] = frame.f_code.co_name == "__exit__" and frame.f_lasti < 4
                raise Interrupt
        return local

    def tracer(frame, event, arg):
        if frame.f_code.co_filename.startswith(TRACED):
            frame.f_trace_opcodes = True
            return local
        return None

    timing = stage("main", run_idx=0, recorder=rec)
    entered = False
    sys.settrace(tracer)
    try:
        with timing:
            entered = True
    except Interrupt:
        pass
    finally:
        sys.settrace(None)
    rec.close()
    with open(os.path.join(directory, "timings.json")) as f:
        runs = json.load(f).get("main", {}).get("runs", [])
    folder = os.path.join(directory, "timings.attempts")
    names = os.listdir(folder) if os.path.isdir(folder) else []
    markers = [json.load(open(os.path.join(folder, m))) for m in names if m.endswith(".json")]
    markers = [m for m in markers if m["stage"] == "main"]
    failed = [m for m in markers if "outcome" in m]
    problems = []
    if len(runs) > 1:
        problems.append("stored twice")
    if timing.seconds is not None and not runs:
        problems.append("lost: .seconds said it finished")
    if {m["attempt_id"] for m in failed} & {r.get("attempt_id") for r in runs}:
        problems.append("both finished and failed")
    if len(failed) != len(markers):
        problems.append("a marker left saying it runs")
    if entered and not runs and [m.get("outcome") for m in failed] != ["interrupted"]:
        problems.append(f"ran, not stored, markers {markers}")
    if not entered and (runs or markers):
        problems.append("an entry that never ran left a trace")
    temps = [p for p in names if not p.endswith(".json")]
    temps += [p for p in os.listdir(directory) if ".tmp" in p or p.startswith("timings.rescue")]
    if temps:
        problems.append(f"left {temps}")
    return state["events"], problems, state["at"], state["entry_of_exit"]


trial(0)  # first uses (caches of this process's identity) are not counted below
points = trial(-1)[0]  # never fires; a fresh directory, as each trial below has
bad, fired, windows = {}, 0, 0
for n in range(first, points + 1, 2):
    events, problems, at, exit_entry = trial(n)
    fired += at is not None
    # A marker left as written at entry, and nothing else wrong: a known window (below).
    left_only = set(problems) <= {"a marker left saying it runs",
                                  "an entry that never ran left a trace"}
    if problems and not (left_only or exit_entry):
        bad[n] = [at, problems]
    windows += bool(problems)
# Counted again: a count that met a slower path (a retry under load) would leave its
# last trials unfired; the fewer of the two is the run's length.
points = min(points, trial(-2)[0])
print(json.dumps({"points": points, "fired": fired, "bad": bad, "windows": windows}))
"""


# The two together interrupt every bytecode: one the odd ones, the other the even ones.
@pytest.mark.slow
@pytest.mark.parametrize(("kind", "first"), [("KeyboardInterrupt", 1), ("SystemExit", 2)])
def test_an_interrupt_at_any_bytecode_of_a_stage_loses_doubles_and_leaves_nothing(
    tmp_path: Path, kind: str, first: int
) -> None:
    done = run_script(INTERRUPT_SWEEP, tmp_path, kind, first, timeout=500)
    result = json.loads(done.stdout)

    assert {} == result["bad"], result["bad"]
    # Known gap: an interrupt at the very first instruction of Stage.__exit__ (before any
    # of its code runs), or of __enter__'s handler, leaves the marker as written at entry,
    # as a kill would; readers then decide from the evidence (the writer's pid).
    assert result["windows"] <= 2, result
    assert result["points"] > 2000  # _record and _store: about 4000
    assert result["fired"] >= (result["points"] - 50) // 2, result
