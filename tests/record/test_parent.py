"""A stage entered while another stage of the same recorder is open in the same thread or
asyncio task records ``parent``: the innermost such stage's name and attempt id, in its
run and in its started marker.

Each scenario runs in its own interpreter (``run_script``) with a timeout.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.process_life import run_script, stage_runs

from stagetimer import InvalidRecordError, stage
from stagetimer._format import ATTEMPTS_DIR, RESERVED_KEYS


def parent_of(run: dict[str, Any]) -> dict[str, str] | None:
    return run.get("parent")


def only_run(directory: Path, name: str) -> dict[str, Any]:
    (run,) = stage_runs(directory, name)
    return run


def link(directory: Path, name: str) -> dict[str, str]:
    """What a nested run of ``name`` must name: ``name``'s only run."""
    return {"stage": name, "attempt_id": only_run(directory, name)["attempt_id"]}


NESTED = """
import json, os, sys
from stagetimer import Recorder, stage
directory = sys.argv[1]
rec = Recorder(directory, policy="upsert")
markers = os.path.join(directory, "timings.attempts")

def seen():
    return sorted((json.load(open(os.path.join(markers, n))) for n in os.listdir(markers)),
                  key=lambda m: m["started_at"] + m["stage"])

with stage("fit_train", run_idx=0, recorder=rec):
    with stage("train_epoch", run_idx=0, label="epoch0", recorder=rec):
        with stage("validate", run_idx=0, label="epoch0", recorder=rec):
            inside = seen()
    with stage("train_epoch", run_idx=0, label="epoch1", recorder=rec):
        pass
with stage("evaluate", run_idx=0, recorder=rec):
    pass
print(json.dumps(inside))
"""


def test_each_nested_stage_names_the_innermost_open_stage_in_its_run(tmp_path: Path) -> None:
    art = tmp_path / "art"
    run_script(NESTED, art)
    epochs = stage_runs(art, "train_epoch")

    assert [link(art, "fit_train")] * 2 == [parent_of(r) for r in epochs]
    assert {"stage": "train_epoch", "attempt_id": epochs[0]["attempt_id"]} == parent_of(
        only_run(art, "validate")
    )
    # the outermost stage, and a stage entered after the fit closed, have none
    assert [None, None] == [parent_of(only_run(art, n)) for n in ("fit_train", "evaluate")]


def test_the_started_marker_names_the_parent_before_the_block_runs(tmp_path: Path) -> None:
    art = tmp_path / "art"
    inside = json.loads(run_script(NESTED, art).stdout)
    by_stage = {m["stage"]: m for m in inside}

    assert None is by_stage["fit_train"]["parent"]
    assert {"stage": "fit_train", "attempt_id": by_stage["fit_train"]["attempt_id"]} == (
        by_stage["train_epoch"]["parent"]
    )
    assert {"stage": "train_epoch", "attempt_id": by_stage["train_epoch"]["attempt_id"]} == (
        by_stage["validate"]["parent"]
    )


RAISED = """
import sys
from stagetimer import Recorder, stage
rec = Recorder(sys.argv[1], policy="upsert")
with stage("fit_train", run_idx=0, recorder=rec):
    try:
        with stage("train_epoch", run_idx=0, label="epoch0", recorder=rec):
            raise ValueError("diverged")
    except ValueError:
        pass
    with stage("train_epoch", run_idx=0, label="epoch1", recorder=rec):
        pass
"""


def test_a_stage_that_raised_is_no_longer_a_parent_and_its_failed_marker_keeps_its_own(
    tmp_path: Path,
) -> None:
    art = tmp_path / "art"
    run_script(RAISED, art)
    (failed,) = [
        json.loads(p.read_text(encoding="utf-8")) for p in (art / ATTEMPTS_DIR).iterdir()
    ]

    assert link(art, "fit_train") == parent_of(only_run(art, "train_epoch"))
    assert ("raised", link(art, "fit_train")) == (failed["outcome"], failed["parent"])


OTHER_RECORDER = """
import sys
from stagetimer import Recorder, stage
one, other = Recorder(sys.argv[1]), Recorder(sys.argv[2])
with stage("outer", recorder=one):
    with stage("elsewhere", recorder=other):
        with stage("inner", recorder=one):
            pass
"""


def test_the_parent_is_the_innermost_stage_of_the_same_recorder(tmp_path: Path) -> None:
    one, other = tmp_path / "one", tmp_path / "other"
    run_script(OTHER_RECORDER, one, other)

    assert link(one, "outer") == parent_of(only_run(one, "inner"))
    assert None is parent_of(only_run(other, "elsewhere"))


THREAD = """
import sys, threading
from stagetimer import Recorder, stage
rec = Recorder(sys.argv[1])
def work():
    with stage("in_thread", recorder=rec):
        pass
with stage("outer", recorder=rec):
    t = threading.Thread(target=work)
    t.start()
    t.join()
    with stage("inner", recorder=rec):
        pass
"""


def test_a_stage_in_another_thread_has_no_parent(tmp_path: Path) -> None:
    art = tmp_path / "art"
    run_script(THREAD, art)

    assert None is parent_of(only_run(art, "in_thread"))
    assert link(art, "outer") == parent_of(only_run(art, "inner"))  # this thread's


TASKS = """
import asyncio, sys
from stagetimer import Recorder, stage
rec = Recorder(sys.argv[1], policy="upsert")
async def fit(seed, first, second):
    async with stage("fit_train", run_idx=seed, recorder=rec):
        await first.wait()
        async with stage("train_epoch", run_idx=seed, label="epoch0", recorder=rec):
            second.set()
            await asyncio.sleep(0.05)
async def main():
    a, b = asyncio.Event(), asyncio.Event()
    # fit 1 opens its epoch while fit 0 is open in the other task, and the other way round
    await asyncio.gather(fit(0, a, b), fit(1, b, a), set_first(a))
async def set_first(event):
    await asyncio.sleep(0.05)
    event.set()
asyncio.run(main())
"""


def test_interleaved_asyncio_tasks_each_name_their_own_stage(tmp_path: Path) -> None:
    art = tmp_path / "art"
    run_script(TASKS, art)
    fits = {r["run_idx"]: r["attempt_id"] for r in stage_runs(art, "fit_train")}
    epochs = {r["run_idx"]: parent_of(r) for r in stage_runs(art, "train_epoch")}

    assert {
        0: {"stage": "fit_train", "attempt_id": fits[0]},
        1: {"stage": "fit_train", "attempt_id": fits[1]},
    } == epochs


GENERATOR = """
import sys
from stagetimer import Recorder, stage, timed_stage
rec = Recorder(sys.argv[1])
@timed_stage("rollout", recorder=rec)
def rollout():
    yield 1
    yield 2
for _ in rollout():
    with stage("consume", recorder=rec):
        pass
with stage("after", recorder=rec):
    pass
"""


def test_a_generators_stage_is_the_parent_of_what_its_consumer_times_until_it_ends(
    tmp_path: Path,
) -> None:
    art = tmp_path / "art"
    run_script(GENERATOR, art)

    assert link(art, "rollout") == parent_of(only_run(art, "consume"))
    assert None is parent_of(only_run(art, "after"))


FORK = """
import os, sys
from stagetimer import Recorder, stage
rec = Recorder(sys.argv[1], policy="upsert")
with stage("outer", recorder=rec):
    pid = os.fork()
    if pid == 0:
        with stage("child", recorder=rec):
            pass
        rec.close()
        os._exit(0)
    os.waitpid(pid, 0)
    with stage("inner", recorder=rec):
        pass
"""


def test_a_forked_childs_stage_has_no_parent_in_its_parents_process(tmp_path: Path) -> None:
    art = tmp_path / "art"
    run_script(FORK, art)

    assert None is parent_of(only_run(art, "child"))
    assert link(art, "outer") == parent_of(only_run(art, "inner"))  # the parent process's


MARKERS = """
import sys
from stagetimer import Recorder, stage
rec = Recorder(sys.argv[1], attempts=sys.argv[2] == "on")
with stage("outer", recorder=rec):
    with stage("inner", recorder=rec):
        pass
"""


def test_a_parent_is_recorded_only_where_it_has_a_started_marker(tmp_path: Path) -> None:
    on, off = tmp_path / "on", tmp_path / "off"
    run_script(MARKERS, on, "on")
    run_script(MARKERS, off, "off")

    # without markers the outer stage has no attempt id to name: the inner one counts on
    # its own in every total
    assert (link(on, "outer"), None) == (
        parent_of(only_run(on, "inner")), parent_of(only_run(off, "inner"))
    )


def test_parent_is_a_reserved_key_metadata_may_not_use() -> None:
    with pytest.raises(InvalidRecordError, match="'parent' is reserved"):
        stage("train", parent="fit").__enter__()
    assert "parent" in RESERVED_KEYS
