"""``stagetimer lost`` and ``compute``'s "of which N lost": productive and lost time per
hardware description and stage, by cause, the effective-time ratio and GPU-hours.

The tree: on a node with 4 GPUs, ``train`` run 0 finished (1 h) after an earlier
attempt of it whose heartbeats stopped 1 h after it started (lost: 1 h counted, 1 h
01 min at most), run 1 raised after 10 min; ``prepare`` finished in 1 min.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest
from helpers.attempt_markers import iso, marker, plant, write_timings
from helpers.cli import run_cli
from helpers.compute_trees import GPU_NODE

from stagetimer._analysis.attempts.lost import lost_summary
from stagetimer._analysis.attempts.scan import scan_attempts

T0 = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0) - datetime.timedelta(
    hours=5)
HOUR = datetime.timedelta(hours=1)
JOB = {"scheduler": "pbs", "job_id": "77"}
ELSEWHERE = {"host": "node-elsewhere", "boot_id": "b" * 36}


def tree(tmp_path: Path) -> Path:
    art = tmp_path / "gpu" / "ippo"
    write_timings(art, {
        "prepare": [{"seconds": 60.0, "hardware_id": "hw-gpu", "run_idx": 0,
                     "started_at": iso(T0 - HOUR), "job": JOB}],
        "train": [{"seconds": 3600.0, "hardware_id": "hw-gpu", "run_idx": 0,
                   "started_at": iso(T0 + 2 * HOUR), "job": JOB}],
    })
    (art / "timings_hardware.json").write_text(
        json.dumps({"schema_version": 1, "hardware": {"hw-gpu": GPU_NODE}}))
    # No hardware_id (its process had not captured it yet): its job's runs give it.
    plant(art, marker("train", started_at=iso(T0), heartbeat=60, job=JOB, writer=ELSEWHERE),
          mtime=(T0 + HOUR).timestamp())
    plant(art, marker("train", run_idx=1, started_at=iso(T0 + 3 * HOUR), hardware_id="hw-gpu",
                      # another process than the killed one (which wrote nothing later)
                      writer={**ELSEWHERE, "pid": 4321}, outcome="raised",
                      exception="ValueError",
                      seconds=600.0, ended_at=iso(T0 + 3 * HOUR + HOUR / 6)))
    return art


GROUP_KEYS = ["hardware_id", "stage", "productive_seconds", "lost_seconds",
              "lost_seconds_upper", "effective_ratio", "attempts"]


def test_lost_json_has_the_contracts_shape_and_figures(tmp_path: Path) -> None:
    tree(tmp_path)

    done = run_cli("lost", tmp_path, "--json")

    assert (0, "") == (done.returncode, done.stderr)
    data = json.loads(done.stdout)
    assert ["groups", "total"] == list(data)
    prepare, train = data["groups"]
    assert [GROUP_KEYS, GROUP_KEYS] == [list(prepare), list(train)]
    assert GROUP_KEYS[2:] == list(data["total"])
    assert {"hardware_id": "hw-gpu", "stage": "train", "productive_seconds": 3600.0,
            "lost_seconds": {"killed": 3600.0, "raised": 600.0},
            "lost_seconds_upper": pytest.approx(4260.0),
            "effective_ratio": pytest.approx(3600 / 7800),
            "attempts": {"finished": 1, "failed": 1, "killed": 1}} == train
    assert {"productive_seconds": 3660.0, "lost_seconds": {"killed": 3600.0, "raised": 600.0},
            "lost_seconds_upper": pytest.approx(4260.0),
            "effective_ratio": pytest.approx(3660 / 7860),
            "attempts": {"finished": 2, "failed": 1, "killed": 1}} == data["total"]


def test_lost_text_shows_gpu_hours_and_each_lost_attempt_with_its_evidence(
    tmp_path: Path,
) -> None:
    tree(tmp_path)

    done = run_cli("lost", tmp_path)

    # 4 GPUs x 4200 s = 4.67 GPU-hours counted, 4 x 4260 s = 4.73 at the upper ends.
    assert "GPU-hours lost: 4.67 (up to 4.73)" in done.stdout
    assert "train run 0 killed (killed), ended between" in done.stdout
    assert "no heartbeat since" in done.stdout
    assert "train run 1 failed (raised) after 10 min 00 s" in done.stdout


def test_lost_markdown_is_a_table(tmp_path: Path) -> None:
    tree(tmp_path)

    done = run_cli("lost", tmp_path, "--markdown")

    lines = done.stdout.splitlines()
    assert lines[0].startswith("| hardware | stage | productive | lost |")
    # Text from the files is escaped as the other Markdown outputs escape it.
    assert any(line.startswith(r"| hw\-gpu \(4 GPUs\) | train |") for line in lines)


def test_an_unknown_attempt_is_counted_and_never_summed(tmp_path: Path) -> None:
    art = tmp_path / "art"
    write_timings(art, {})
    plant(art, marker(writer=ELSEWHERE))
    found, _ = scan_attempts([art])

    summary = lost_summary(found)

    assert ["unknown"] == [a.state for a in found]
    assert {"unknown": 1} == summary.total.attempts
    assert ({}, 0.0) == (summary.total.lost_seconds, summary.total.lost_seconds_upper)
    assert (0.0, None) == (summary.total.productive_seconds, summary.total.effective_ratio)


def test_compute_says_of_which_n_lost(tmp_path: Path) -> None:
    tree(tmp_path)

    done = run_cli("compute", tmp_path, "--json")

    (hardware,) = json.loads(done.stdout)["hardware"]
    assert {"attempts": 2, "wall_seconds": 4200.0,
            "gpu_hours": pytest.approx(4 * 4200 / 3600)} == hardware["lost"]
    text = run_cli("compute", tmp_path).stdout
    # (3660 + 4200) s x 4 GPUs = 8.73 GPU-hours, of which 4.67 lost.
    assert "with 2 failed or killed attempts, 8.73 GPU-hours, of which 4.67 lost" in text


def test_an_unreadable_hardware_sidecar_is_named_and_the_rest_still_summed(
    tmp_path: Path,
) -> None:
    art = tree(tmp_path)
    (art / "timings_hardware.json").write_text("{")

    done = run_cli("lost", tmp_path)

    assert 1 == done.returncode
    assert f"{art / 'timings_hardware.json'}: does not parse as JSON" in done.stderr
    assert "GPU-hours lost" not in done.stdout  # no description says how many GPUs
    assert "train run 1 failed (raised)" in done.stdout
