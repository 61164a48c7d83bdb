"""Attempts of unknown hardware (a marker written before its process captured its
hardware: the first stage of a process, failed or killed) are attributed to the
description the same node recorded, where there is exactly one, else to "(not
described)" — the same in ``lost``, ``compute`` and the page, whose totals agree."""

from __future__ import annotations

import json
import signal
from pathlib import Path

from helpers.attempt_markers import iso, marker, plant, utc, write_timings
from helpers.cli import run_cli
from helpers.compute_trees import GPU_NODE
from helpers.process_life import run_script

#: A plain process whose first stage raises after 0.4 s; its next stage finishes.
FIRST_RAISES = """
import sys, time
from stagetimer import Recorder, stage
rec = Recorder(sys.argv[1])
try:
    with stage("prepare", run_idx=0, recorder=rec):
        time.sleep(0.4)
        raise RuntimeError("first stage")
except RuntimeError:
    pass
with stage("train", run_idx=0, recorder=rec):
    time.sleep(0.05)
"""

#: A process killed in its first stage, after another process of this machine recorded.
FIRST_KILLED = """
import os, signal, sys, time
from stagetimer import Recorder, stage
with stage("train", run_idx=1, recorder=Recorder(sys.argv[1], policy="upsert")):
    time.sleep(0.3)
    os.kill(os.getpid(), signal.SIGKILL)
"""


def _lost_total(path: Path) -> float:
    return sum(json.loads(run_cli("lost", path, "--json").stdout)["total"]
               ["lost_seconds"].values())


def _compute_lost(path: Path) -> tuple[int, float]:
    data = json.loads(run_cli("compute", path, "--json").stdout)
    attempts = sum(h["lost"]["attempts"] for h in data["hardware"])
    seconds = sum(h["lost"]["wall_seconds"] for h in data["hardware"])
    apart = data["not_described_lost"]
    return attempts + apart["attempts"], seconds + apart["wall_seconds"]


def test_a_first_stage_that_raises_is_lost_in_lost_and_in_compute(tmp_path: Path) -> None:
    run_script(FIRST_RAISES, tmp_path)

    lost = json.loads(run_cli("lost", tmp_path, "--json").stdout)
    compute = json.loads(run_cli("compute", tmp_path, "--json").stdout)

    (prepare,) = [g for g in lost["groups"] if g["stage"] == "prepare"]
    (hardware,) = compute["hardware"]
    assert prepare["hardware_id"] == hardware["hardware_id"]  # the node's one description
    assert 1 == hardware["lost"]["attempts"]
    assert hardware["lost"]["wall_seconds"] >= 0.4
    assert hardware["lost"]["wall_seconds"] == sum(lost["total"]["lost_seconds"].values())


def test_a_process_killed_in_its_first_stage_is_attributed_to_its_node(tmp_path: Path) -> None:
    run_script(FIRST_RAISES, tmp_path)
    done = run_script(FIRST_KILLED, tmp_path, check=False)
    assert -signal.SIGKILL == done.returncode

    lost = json.loads(run_cli("lost", tmp_path, "--json").stdout)

    assert all(g["hardware_id"] is not None for g in lost["groups"])
    assert (2, _lost_total(tmp_path)) == _compute_lost(tmp_path)


def test_a_node_of_two_descriptions_gives_the_not_described_group_everywhere(
    tmp_path: Path,
) -> None:
    art = tmp_path / "a"
    start = utc(2026, 3, 1, 10, 0, 0)
    node = {"host": "node-7", "boot_id": "d" * 36, "pid": 77, "start_time": 7}
    write_timings(art, {"prepare": [
        {"seconds": 5.0, "hardware_id": "hw-a", "run_idx": 0, "started_at": iso(start)},
        {"seconds": 5.0, "hardware_id": "hw-b", "run_idx": 1, "started_at": iso(start)}]})
    (art / "timings_hardware.json").write_text(json.dumps({"schema_version": 1, "hardware": {
        "hw-a": {**GPU_NODE, "host": "node-7"},
        "hw-b": {**GPU_NODE, "host": "node-7", "os": "another"}}}))
    plant(art, marker("train", started_at=iso(start), writer=node, outcome="raised",
                      exception="ValueError", seconds=60.0, ended_at=iso(start)))

    lost = json.loads(run_cli("lost", art, "--json").stdout)
    text = run_cli("lost", art).stdout
    compute = run_cli("compute", art, "--json")
    run_cli("report", art, "--html", tmp_path / "r.html")

    (train,) = [g for g in lost["groups"] if g["stage"] == "train"]
    assert None is train["hardware_id"]
    assert "(not described)" in text and "1 failed or killed attempt could not be" in text
    assert {"attempts": 1, "wall_seconds": 60.0} == json.loads(compute.stdout)[
        "not_described_lost"]
    assert "could not be attributed" in run_cli("compute", art).stdout
    raw = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "(not described)" in raw and "could not be attributed" in raw


def test_the_same_node_in_another_directory_names_the_description(tmp_path: Path) -> None:
    start = utc(2026, 3, 1, 10, 0, 0)
    node = {"host": "node-9", "boot_id": "e" * 36, "pid": 9, "start_time": 9}
    other = {**node, "pid": 10}
    plant(tmp_path / "a", marker("train", started_at=iso(start), writer=node,
                                 outcome="raised", exception="ValueError", seconds=30.0,
                                 ended_at=iso(start)))
    write_timings(tmp_path / "a", {})
    plant(tmp_path / "b", marker("eval", started_at=iso(start), writer=other,
                                 hardware_id="hw-gpu", outcome="raised",
                                 exception="ValueError", seconds=1.0, ended_at=iso(start)))
    write_timings(tmp_path / "b", {})

    lost = json.loads(run_cli("lost", tmp_path, "--json").stdout)

    assert {"hw-gpu"} == {g["hardware_id"] for g in lost["groups"]}
