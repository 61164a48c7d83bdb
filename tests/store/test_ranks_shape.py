"""The new run keys and the software map have their types checked like every other field:
a file that holds another type is corrupt for readers and writers alike."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stagetimer import (
    Recorder,
    SidecarCorruptError,
    load_hardware,
    load_timings,
    record_timing,
)


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("rank", "3", "'rank' a string, expected an integer"),
        ("world_size", 4.0, "'world_size' a number, expected an integer"),
        ("rank", True, "'rank' a boolean, expected an integer"),
        ("cpus", [0, 1], "'cpus' an array, expected a string"),
        ("software_id", 7, "'software_id' a number, expected a string"),
    ],
)
def test_a_run_key_of_another_type_is_corrupt_for_readers_and_writers(
    tmp_path: Path, key: str, value: Any, words: str
) -> None:
    run = {"seconds": 1.0, "run_idx": 0, key: value}
    (tmp_path / "timings.json").write_text(json.dumps({"ippo_train": {"runs": [run]}}))
    before = (tmp_path / "timings.json").read_bytes()

    with pytest.raises(SidecarCorruptError, match=f"stage 'ippo_train' run 0 has {words}"):
        load_timings(tmp_path)
    with pytest.raises(SidecarCorruptError):
        record_timing("ippo_train", 1.0, run_idx=1, recorder=Recorder(tmp_path, strict=True))
    assert before == (tmp_path / "timings.json").read_bytes()


@pytest.mark.parametrize(
    ("software", "words"),
    [
        ([], "'software' is an array, expected an object"),
        ({"sw-1": {"packages": {"torch": 2}}}, "software 'sw-1'.packages['torch'] is a number"),
        ({"sw-1": {"code": {"dirty": "yes"}}}, "software 'sw-1'.code.dirty is a string"),
        ({"sw-1": "CPython"}, "software 'sw-1' is a string, expected an object"),
    ],
)
def test_a_software_map_of_other_types_is_corrupt(
    tmp_path: Path, software: Any, words: str
) -> None:
    data = {"schema_version": 1, "hardware": {}, "software": software}
    (tmp_path / "timings_hardware.json").write_text(json.dumps(data))

    with pytest.raises(SidecarCorruptError) as raised:
        load_hardware(tmp_path)

    assert words in str(raised.value)


def test_a_file_without_software_reads_as_none_recorded(tmp_path: Path) -> None:
    (tmp_path / "timings_hardware.json").write_text('{"schema_version": 1, "hardware": {}}')

    assert {} == load_hardware(tmp_path).software
