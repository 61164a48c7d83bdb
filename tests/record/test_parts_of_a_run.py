"""A run's labelled parts (a callback's epochs) under any policy: each replaces only the
part of the same run index, label and rank, and a rescued part is put back the same way."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from stagetimer import Recorder, load_timings, recover, stage
from stagetimer._record.stage import part_stage


def _runs(directory: Path, name: str) -> list[tuple[object, object]]:
    return [(r.run_idx, r.label) for r in load_timings(directory).stages[name].runs]


@pytest.mark.parametrize("policy", ["sequential", "upsert"])
def test_parts_of_one_run_are_all_kept_and_a_part_again_replaces_only_itself(
    tmp_path: Path, policy: str
) -> None:
    with Recorder(tmp_path, policy=policy):
        with stage("train_epoch", run_idx=0, label="epoch0"):  # the fit's first: the policy's
            pass
        for label in ("epoch1", "epoch2", "epoch1"):
            with part_stage("train_epoch", run_idx=0, label=label, recorder=None):
                pass
        with stage("train_epoch", run_idx=1, label="epoch0"):
            pass
        with part_stage("train_epoch", run_idx=1, label="epoch1", recorder=None):
            pass
    assert {(0, "epoch0"), (0, "epoch1"), (0, "epoch2"), (1, "epoch0"), (1, "epoch1")} == set(
        _runs(tmp_path, "train_epoch")
    )
    assert 5 == len(_runs(tmp_path, "train_epoch"))


#: Parts saved while timings.json cannot be written (a FIFO in its place): they live on
#: in the rescue file when the writer exits.
RESCUED = """
import sys
from stagetimer import Recorder
from stagetimer._record.stage import part_stage
rec = Recorder(sys.argv[1])  # "sequential"
for label in ("epoch0", "epoch1", "epoch2"):
    with part_stage("train_epoch", run_idx=0, label=label, recorder=rec):
        pass
"""


def test_rescued_parts_are_put_back_as_parts_under_sequential(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "timings.json")
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(RESCUED), str(tmp_path)],
        capture_output=True, text=True, timeout=120,
    )
    assert 0 == done.returncode, done.stderr
    [rescue] = tmp_path.glob("timings.rescue-*.json")
    payload = json.loads(rescue.read_text(encoding="utf-8"))
    assert "sequential" == payload["policy"]
    assert ["upsert"] * 3 == [entry["policy"] for entry in payload["records"]]
    os.unlink(tmp_path / "timings.json")
    recover(tmp_path)
    assert [(0, "epoch0"), (0, "epoch1"), (0, "epoch2")] == _runs(tmp_path, "train_epoch")


def test_a_rescued_record_with_a_policy_that_is_none_is_refused_alone(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "timings.json")
    subprocess.run(
        [sys.executable, "-c", textwrap.dedent(RESCUED), str(tmp_path)],
        capture_output=True, text=True, timeout=120, check=True,
    )
    [rescue] = tmp_path.glob("timings.rescue-*.json")
    payload = json.loads(rescue.read_text(encoding="utf-8"))
    payload["records"][1]["policy"] = "overwrite"
    rescue.write_text(json.dumps(payload), encoding="utf-8")
    os.unlink(tmp_path / "timings.json")
    result = recover(tmp_path)
    assert [(0, "epoch0"), (0, "epoch2")] == _runs(tmp_path, "train_epoch")
    assert "policy 'overwrite' is not one of" in str(result)
