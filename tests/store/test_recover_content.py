"""``recover`` trusts a rescue file no more than a sidecar: one validation for every way
a record reaches ``timings.json``; a bad record or file is named and skipped, the others
are folded in; names are printed escaped."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pytest
from helpers.process_life import stage_runs
from helpers.rescue import write_rescue

from stagetimer import Recorder, load_timings, recover
from stagetimer._cli import main
from stagetimer._errors import InvalidSettingError

GOOD = {"stage": "eval", "run": {"seconds": 2.0, "run_idx": 0}}


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


BAD_RECORDS = {
    "string seconds": {"stage": "train", "run": {"seconds": "soon"}},
    "bool run_idx": {"stage": "train", "run": {"seconds": 1.0, "run_idx": True}},
    "numeric label": {"stage": "train", "run": {"seconds": 1.0, "label": 3}},
    "no seconds": {"stage": "train", "run": {"run_idx": 1}},
    "negative seconds": {"stage": "train", "run": {"seconds": -1.0}},
    "empty name": {"stage": "", "run": {"seconds": 1.0}},
    "control name": {"stage": "tr\x1b[2Jain", "run": {"seconds": 1.0}},
    "reserved metadata": {"stage": "train", "run": {"seconds": 1.0, "total_seconds": 5}},
    "run not an object": {"stage": "train", "run": [1.0]},
    "unknown hardware": {"stage": "train", "run": {"seconds": 1.0, "hardware_id": "hw-nowhere"}},
    "metadata 150 deep": {"stage": "train", "run": {"seconds": 1.0, "deep": _nested(150)}},
}


@pytest.mark.parametrize("bad", BAD_RECORDS.values(), ids=list(BAD_RECORDS))
def test_a_record_no_writer_could_write_is_refused_and_named_and_the_good_one_stored(
    art: Path, bad: dict[str, Any]
) -> None:
    write_rescue(art, [bad, GOOD])

    (done,) = recover(art)

    assert (1, 1) == (done.stored, len(done.refused))
    assert "record 0" in done.refused[0] or "train" in done.refused[0]
    assert [2.0] == [r["seconds"] for r in stage_runs(art, "eval")]
    assert [] == stage_runs(art, "train")
    load_timings(art)  # the sidecar stays sound for every reader


def test_nan_seconds_are_refused_never_stored(art: Path) -> None:
    path = write_rescue(art, [GOOD])
    text = path.read_text().replace('"seconds": 2.0', '"seconds": NaN')
    text = text.replace('"records": [', '"records": [{"stage": "x", "run": {"seconds": 1.0}}, ')
    path.write_text(text)

    (done,) = recover(art)

    assert (1, 1) == (done.stored, len(done.refused))
    assert "nan" in done.refused[0].lower()
    assert [1.0] == [r["seconds"] for r in stage_runs(art, "x")]


def test_a_hardware_description_of_the_wrong_shape_is_refused_with_its_records(art: Path) -> None:
    hw = {"hw-bad": {"host": 42, "cpu": "many"}}
    bad = {"stage": "train", "run": {"seconds": 1.0, "hardware_id": "hw-bad"}}
    write_rescue(art, [bad, GOOD], hardware=hw)

    (done,) = recover(art)

    assert (1, 1) == (done.stored, len(done.refused))
    assert "hw-bad" in done.refused[0]
    assert not (art / "timings_hardware.json").exists() or "hw-bad" not in (
        art / "timings_hardware.json"
    ).read_text()


def test_a_record_for_a_name_holding_other_data_is_skipped_and_the_others_folded(
    art: Path,
) -> None:
    art.mkdir(parents=True)
    (art / "timings.json").write_text(json.dumps({"notes": "hello"}))
    clash = {"stage": "notes", "run": {"seconds": 1.0}}
    path = write_rescue(art, [clash, GOOD])

    (done,) = recover(art)
    again = recover(art)

    assert (1, 0, 1) == (done.stored, done.already, len(done.refused))
    assert "holds other data" in done.refused[0]
    assert path.exists()  # the refused record stays for the user
    assert [(0, 1, 1)] == [(d.stored, d.already, len(d.refused)) for d in again]
    assert [2.0] == [r["seconds"] for r in stage_runs(art, "eval")]


@pytest.mark.parametrize(
    "raw",
    ['{"records": [', "[]", '{"policy": "sequential", "records": [], "records": []}',
     '{"policy": "sequential", "hardware": {}, "records": [{"stage": "a\\ud800", '
     '"run": {"seconds": 1}}]}'],
    ids=["not json", "not an object", "a key twice", "lone surrogate"],
)
def test_one_bad_file_sorted_first_never_stops_the_good_ones(art: Path, raw: str) -> None:
    write_rescue(art, [], name="timings.rescue-00000000T000000000000Z-1-00000000.json", raw=raw)
    write_rescue(art, [GOOD], name="timings.rescue-20270101T000000000000Z-1-00000000.json")

    bad, good = recover(art)

    assert (0, 1) == (bad.stored, len(bad.refused))
    assert (1, ()) == (good.stored, good.refused)
    assert [2.0] == [r["seconds"] for r in stage_runs(art, "eval")]


def test_a_rescue_file_that_is_a_symlink_is_never_read(art: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    write_rescue(tmp_path / "elsewhere", [GOOD])
    secret.write_text((next((tmp_path / "elsewhere").glob("timings.rescue-*"))).read_text())
    art.mkdir(parents=True)
    os.symlink(secret, art / "timings.rescue-20261201T000000000000Z-1-00000000.json")

    (done,) = recover(art)

    assert done.skipped is not None and "symbolic link" in done.skipped
    assert not (art / "timings.json").exists()


def test_two_identical_records_in_one_rescue_file_are_two_records(art: Path) -> None:
    twice = {"stage": "train", "run": {"seconds": 1.0, "run_idx": 1}}
    write_rescue(art, [twice, dict(twice)])

    (done,) = recover(art)

    assert 2 == done.stored
    assert [1, 1] == [r["run_idx"] for r in stage_runs(art, "train")]


def test_the_recover_command_prints_planted_names_escaped(
    art: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    planted = "timings.rescue-\x1b[2J\x1b]0;pwned\x07-1.json"
    write_rescue(art, [], name=planted, raw="{nope")

    assert 1 == main(["recover", str(art)])

    out = capsys.readouterr()
    assert "\x1b" not in out.err + out.out
    assert "\\x1b[2J" in out.err


def test_a_rescue_file_of_an_older_version_is_folded_once_its_pid_has_ended(art: Path) -> None:
    from helpers.rescue import dead_pid

    # Format 1 (stagetimer 0.2) names no owner: the pid in its name is all there is.
    name = f"timings.rescue-20261201T000000000000Z-{dead_pid()}.json"
    payload = {"directory": str(art), "policy": "sequential", "hardware": {}, "records": [GOOD]}
    write_rescue(art, [], name=name, raw=json.dumps(payload))

    (done,) = recover(art)

    assert (1, None) == (done.stored, done.skipped)


def test_a_rescue_file_of_an_older_version_whose_pid_runs_is_left_alone(art: Path) -> None:
    name = f"timings.rescue-20261201T000000000000Z-{os.getpid()}.json"
    payload = {"directory": str(art), "policy": "sequential", "hardware": {}, "records": [GOOD]}
    write_rescue(art, [], name=name, raw=json.dumps(payload))

    (done,) = recover(art)

    assert done.skipped is not None and "still runs" in done.skipped


@pytest.mark.parametrize("bad", [10**400, -1, "x", True, math.nan, None])
def test_recover_refuses_the_lock_timeouts_recorder_refuses_and_changes_nothing(
    tmp_path: Path, bad: Any
) -> None:
    rescue = write_rescue(tmp_path, [GOOD])
    before = rescue.read_bytes()
    with pytest.raises(InvalidSettingError) as recorder_refused:
        Recorder(tmp_path, lock_timeout=bad)

    with pytest.raises(InvalidSettingError) as refused:
        recover(tmp_path, lock_timeout=bad)

    assert str(refused.value) == str(recorder_refused.value)
    assert str(refused.value).startswith("lock_timeout ")
    assert refused.value.value is bad
    assert rescue.read_bytes() == before
    assert not (tmp_path / "timings.json").exists()


@pytest.mark.parametrize("timeout", [0, 2, 0.5, math.inf])
def test_recover_takes_every_lock_timeout_recorder_takes(tmp_path: Path, timeout: float) -> None:
    write_rescue(tmp_path, [GOOD])

    [recovered] = recover(tmp_path, lock_timeout=timeout)

    assert recovered.stored == 1
    assert [r.seconds for r in load_timings(tmp_path).stages["eval"].runs] == [2.0]
