"""A killed attempt's end: from its writer's last sign of life (the latest thing the same
process is known to have written in the directories read) to the earliest evidence of
its end, with no upper end where the only bound would be the moment of reading.

Real processes are killed with SIGKILL; what a process of this machine cannot leave
(another host's writer) is planted in the writers' format."""

from __future__ import annotations

import datetime
import json
import os
import signal
from pathlib import Path

from helpers.attempt_markers import iso, marker, plant, utc, write_timings
from helpers.cli import run_cli
from helpers.process_life import run_script

from stagetimer import attempts

#: A fit holding epochs, killed in its second epoch: epoch 0 finished (its run), epoch
#: 1 started (its marker) 1.5 s after the fit, then SIGKILL.
NESTED_KILL = """
import os, signal, sys, time
from stagetimer import Recorder, stage
rec = Recorder(sys.argv[1], policy="upsert")
inner = Recorder(sys.argv[2], policy="upsert") if len(sys.argv) > 2 else rec
with stage("fit", run_idx=0, recorder=rec):
    with stage("epoch", run_idx=0, label="0", recorder=inner):
        time.sleep(1.0)
    time.sleep(0.5)
    with stage("epoch", run_idx=0, label="1", recorder=inner):
        time.sleep(0.2)
        os.kill(os.getpid(), signal.SIGKILL)
"""

ELSEWHERE = {"host": "node-elsewhere", "boot_id": "b" * 36, "pid": 4242, "start_time": 99}


def _killed(found: list, stage: str):  # type: ignore[no-untyped-def]
    (one,) = [a for a in found if a.stage == stage and a.state == "killed"]
    return one


def test_a_killed_fit_is_lost_up_to_the_last_marker_its_process_wrote(tmp_path: Path) -> None:
    done = run_script(NESTED_KILL, tmp_path, check=False)
    assert -signal.SIGKILL == done.returncode, done.stderr

    fit = _killed(attempts(tmp_path), "fit")

    assert fit.ended_between is not None and fit.started_at is not None
    low, high = fit.ended_between
    assert high is None  # no evidence of when it ended: never the moment of reading
    assert low is not None and (low - fit.started_at).total_seconds() >= 1.5
    assert "its process was alive at" in fit.evidence


def test_lost_counts_the_killed_fit_from_its_start_to_its_last_sign_of_life(
    tmp_path: Path,
) -> None:
    run_script(NESTED_KILL, tmp_path, check=False)

    done = run_cli("lost", tmp_path, "--json")

    groups = {g["stage"]: g for g in json.loads(done.stdout)["groups"]}
    assert groups["fit"]["lost_seconds"]["killed"] >= 1.5
    assert groups["fit"]["lost_seconds_upper"] is None
    text = run_cli("lost", tmp_path).stdout
    assert "fit run 0 killed (killed), ended after" in text


def test_the_last_sign_of_life_is_found_in_another_directory_read(tmp_path: Path) -> None:
    outer, inner = tmp_path / "suite" / "fit", tmp_path / "suite" / "epochs"
    run_script(NESTED_KILL, outer, inner, check=False)

    alone = _killed(attempts(outer), "fit")
    together = _killed(attempts(tmp_path / "suite"), "fit")

    assert alone.ended_between is not None and together.ended_between is not None
    assert alone.started_at is not None and together.ended_between[0] is not None
    assert (together.ended_between[0] - together.started_at).total_seconds() >= 1.5
    assert alone.ended_between[0] == alone.started_at  # nothing else read says more


def test_the_killed_attempt_reads_the_same_each_time(tmp_path: Path) -> None:
    run_script(NESTED_KILL, tmp_path, check=False)
    later = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=3)

    first = _killed(attempts(tmp_path), "fit")
    second = _killed(attempts(tmp_path, now=later), "fit")

    assert first.ended_between == second.ended_between


def test_only_the_same_process_gives_signs_of_life(tmp_path: Path) -> None:
    start = utc(2026, 3, 1, 10, 0, 0)
    plant(tmp_path, marker("fit", started_at=iso(start), writer=ELSEWHERE))
    own = start + datetime.timedelta(minutes=20)
    plant(tmp_path, marker("eval", started_at=iso(own), writer=ELSEWHERE))
    # Later still, but by another process of the same node: says nothing of the fit.
    other = {**ELSEWHERE, "pid": 4243}
    plant(tmp_path, marker("eval", run_idx=1, started_at=iso(start + datetime.timedelta(hours=1)),
                           writer=other, outcome="raised", exception="ValueError",
                           seconds=1.0, ended_at=iso(start + datetime.timedelta(hours=1))))
    # Later still, naming the same process, but a file of another user: a claim only.
    claimed = plant(tmp_path, marker("eval", run_idx=2, writer=ELSEWHERE,
                                     started_at=iso(start + datetime.timedelta(minutes=90))))
    os.chown(claimed, 12345, 12345)
    # A later attempt of the fit's run, by a new process: the fit ended by then.
    upper = start + datetime.timedelta(hours=2)
    plant(tmp_path, marker("fit", started_at=iso(upper), writer={**ELSEWHERE, "pid": 5}))

    found = attempts(tmp_path, now=start + datetime.timedelta(hours=5))

    (fit,) = [a for a in found if a.stage == "fit" and a.started_at == start]
    assert ("killed", (own, upper)) == (fit.state, fit.ended_between)


def test_the_same_writer_alive_past_the_evidence_of_the_end_keeps_within_it(
    tmp_path: Path,
) -> None:
    start = utc(2026, 3, 1, 10, 0, 0)
    plant(tmp_path, marker("train", started_at=iso(start), writer=ELSEWHERE))
    # The same process wrote a marker an hour later; a later attempt of the same run
    # began 10 min after the first: the first ended by then.
    plant(tmp_path, marker("prepare", started_at=iso(start + datetime.timedelta(hours=1)),
                           writer=ELSEWHERE))
    later = iso(start + datetime.timedelta(minutes=10))
    write_timings(tmp_path, {"train": [{"seconds": 1.0, "run_idx": 0, "started_at": later}]})

    train = _killed(attempts(tmp_path, now=start + datetime.timedelta(hours=5)), "train")

    end = start + datetime.timedelta(minutes=10)
    assert (end, end) == train.ended_between


def test_a_run_that_names_the_attempt_it_ran_inside_is_a_sign_of_its_life(
    tmp_path: Path,
) -> None:
    start = utc(2026, 3, 1, 10, 0, 0)
    fit = marker("fit", started_at=iso(start), writer={"host": "node-x", "boot_id": "c" * 36})
    fit["writer"].pop("pid")  # no full identity: only the parent link can tell
    plant(tmp_path, fit)
    write_timings(tmp_path, {"epoch": [{
        "seconds": 30.0, "run_idx": 0, "started_at": iso(start + datetime.timedelta(minutes=5)),
        "parent": {"stage": "fit", "attempt_id": fit["attempt_id"]}}]})
    later = marker("fit", run_idx=0, started_at=iso(start + datetime.timedelta(hours=1)),
                   writer=ELSEWHERE)
    plant(tmp_path, later)

    found = attempts(tmp_path, now=start + datetime.timedelta(hours=5))

    (killed,) = [a for a in found if a.attempt_id == fit["attempt_id"]]
    assert killed.ended_between == (start + datetime.timedelta(minutes=5, seconds=30),
                                    start + datetime.timedelta(hours=1))
