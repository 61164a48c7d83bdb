"""``Recorder.record`` refuses exactly what ``record_timing`` refuses, with the same message.

Each bad input goes through both, against a directory that already holds a record:
both raise ``InvalidRecordError`` with the same text and no file changes.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from stagetimer import InvalidRecordError, Recorder, record_timing

GOOD: dict[str, Any] = {"name": "ippo_train", "seconds": 1.5, "run_idx": 1, "label": None}

BAD_INPUTS: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("escape character in the name", {"name": "ippo\x1b[31m_train"}, {}),
    ("newline in the name", {"name": "ippo\n_train"}, {}),
    ("empty name", {"name": ""}, {}),
    ("name not a string", {"name": 42}, {}),
    ("lone surrogate in the name", {"name": "ippo\udcff"}, {}),
    ("negative seconds", {"seconds": -1}, {}),
    ("NaN seconds", {"seconds": math.nan}, {}),
    ("infinite seconds", {"seconds": math.inf}, {}),
    ("bool seconds", {"seconds": True}, {}),
    ("string seconds", {"seconds": "1.5"}, {}),
    ("seconds beyond a float", {"seconds": 10**400}, {}),
    ("negative run_idx", {"run_idx": -5}, {}),
    ("bool run_idx", {"run_idx": True}, {}),
    ("float run_idx", {"run_idx": 1.0}, {}),
    ("run_idx beyond int64", {"run_idx": 2**63}, {}),
    ("label not a string", {"label": 7}, {}),
    # (seconds, run_idx and label are record_timing's own parameters: Python routes them)
    ("reserved metadata key hardware_id", {}, {"hardware_id": "x"}),
    ("reserved metadata key started_at", {}, {"started_at": "2026-01-01"}),
    ("reserved metadata key job", {}, {"job": {}}),
    *((f"reserved metadata key {key}", {}, {key: 1})
      for key in ("software_id", "rank", "world_size", "cpus")),
    ("reserved metadata key total_seconds", {}, {"total_seconds": 3}),
    ("reserved metadata key runs", {}, {"runs": []}),
    ("NaN metadata", {}, {"lr": math.nan}),
    ("metadata not JSON", {}, {"model": object()}),
    ("metadata keys colliding in JSON", {}, {"m": {1: "a", "1": "b"}}),
]


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def _refusal(call: Any) -> str:
    with pytest.raises(InvalidRecordError) as info:
        call()
    return str(info.value)


@pytest.mark.parametrize(
    ("bad", "metadata"), [(b, m) for _, b, m in BAD_INPUTS], ids=[i for i, _, _ in BAD_INPUTS]
)
def test_recorder_record_refuses_what_record_timing_refuses(
    rec: Recorder, bad: dict[str, Any], metadata: dict[str, Any]
) -> None:
    rec.record("ippo_train", 2.0, run_idx=0, metadata={"lr": 0.1})
    before = _snapshot(Path(rec.directory))
    args = {**GOOD, **bad}

    via_function = _refusal(
        lambda: record_timing(
            args["name"], args["seconds"], run_idx=args["run_idx"], label=args["label"],
            recorder=rec, **metadata,
        )
    )
    via_method = _refusal(
        lambda: rec.record(
            args["name"], args["seconds"], run_idx=args["run_idx"], label=args["label"],
            metadata=metadata,
        )
    )

    assert via_method == via_function
    assert _snapshot(Path(rec.directory)) == before
    assert rec.pending == 0


@pytest.mark.parametrize(
    ("started_at", "metadata"),
    [(-1.0, None), (math.nan, None), (math.inf, None), (True, None), ("2026-01-01", None),
     (1e18, None), (None, [("lr", 0.1)]), (None, "lr=0.1")],
)
def test_recorder_record_refuses_a_bad_start_time_or_metadata_that_is_no_mapping(
    rec: Recorder, started_at: Any, metadata: Any
) -> None:
    rec.record("ippo_train", 2.0, run_idx=0)
    before = _snapshot(Path(rec.directory))
    message = _refusal(
        lambda: rec.record("ippo_train", 1.0, run_idx=1, started_at=started_at, metadata=metadata)
    )
    assert ("started_at" if metadata is None else "metadata") in message
    assert _snapshot(Path(rec.directory)) == before


def test_recorder_record_stores_what_it_accepts_as_record_timing_does(tmp_path: Path) -> None:
    by_method, by_function = Recorder(tmp_path / "a"), Recorder(tmp_path / "b")
    by_method.record("ippo_train", 3, run_idx=2, label="x", metadata={"lr": (1, 2)})
    record_timing("ippo_train", 3, run_idx=2, label="x", recorder=by_function, lr=(1, 2))
    run_a = _only_run(by_method)
    run_b = _only_run(by_function)
    assert run_a == run_b
    assert run_a["seconds"] == 3.0 and isinstance(run_a["seconds"], float)
    assert run_a["lr"] == [1, 2]


def _only_run(rec: Recorder) -> dict[str, Any]:
    import json

    with open(rec.timings_path, encoding="utf-8") as f:
        runs: list[dict[str, Any]] = json.load(f)["ippo_train"]["runs"]
    assert len(runs) == 1
    return {k: v for k, v in runs[0].items() if k != "job"}
