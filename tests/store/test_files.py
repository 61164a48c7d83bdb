"""The two sidecars on disk: format, legacy and unknown keys, corrupt files, the save protocol."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import read_json

from stagetimer import (
    Recorder,
    SchemaVersionError,
    SidecarCorruptError,
    StageTimerWarning,
    capture_hardware,
    capture_software,
    hardware_id,
    load_hardware,
    load_timings,
    record_timing,
    software_id,
)
from stagetimer._record.placement import format_cpu_list
from stagetimer.hardware import description
from stagetimer.software import software_description

LEGACY = {
    "system_ram_gb": 251.5,
    "gpu_ram_gb": 79.6,
    "ippo_train": {
        "total_seconds": 30.0,
        "runs": [
            {"seconds": 10.0, "run_idx": 0, "system_ram_gb": 251.5, "gpu_ram_gb": 79.6},
            {"seconds": 20.0, "run_idx": 1, "system_ram_gb": 251.5},
        ],
    },
    "alpharank": {"total_seconds": 4.0, "runs": [{"seconds": 4.0}]},
}


def test_timings_file_layout_is_indented_with_one_run_per_line(rec: Recorder, art: Path) -> None:
    record_timing("ippo_train", 1.5, run_idx=0, recorder=rec)
    record_timing("ippo_train", 2.5, run_idx=1, recorder=rec, lr=0.1)
    hw = hardware_id(capture_hardware())
    sw = software_id(capture_software())
    cpus = format_cpu_list(os.sched_getaffinity(0))
    who = f'"software_id": "{sw}", "cpus": "{cpus}"'
    assert (art / "timings.json").read_text() == (
        "{\n"
        '  "ippo_train": {\n'
        '    "total_seconds": 4.0,\n'
        '    "runs": [\n'
        f'      {{"seconds": 1.5, "hardware_id": "{hw}", "run_idx": 0, {who}}},\n'
        f'      {{"seconds": 2.5, "hardware_id": "{hw}", "run_idx": 1, {who}, "lr": 0.1}}\n'
        "    ]\n"
        "  }\n"
        "}\n"
    )


def test_hardware_sidecar_stores_each_description_once(rec: Recorder, art: Path) -> None:
    for i in range(3):
        record_timing("ippo_train", 1.0, run_idx=i, recorder=rec)
    hw = capture_hardware()
    sw = capture_software()
    assert read_json(art / "timings_hardware.json") == {
        "schema_version": 1,
        "hardware": {hardware_id(hw): description(hw)},
        "software": {software_id(sw): software_description(sw)},
    }
    assert load_hardware(art).hardware[hardware_id(hw)] == hw


def test_hardware_id_is_the_hash_of_the_canonical_description() -> None:
    import hashlib

    desc = description(capture_hardware())
    canonical = json.dumps(desc, sort_keys=True, separators=(",", ":")).encode()
    assert hardware_id(desc) == "hw-" + hashlib.sha256(canonical).hexdigest()[:16]


def test_missing_files_load_empty(tmp_path: Path) -> None:
    assert load_timings(tmp_path).stages == {}
    assert load_hardware(tmp_path).hardware == {}


def test_legacy_file_is_readable_and_exposes_legacy_metadata(art: Path) -> None:
    art.mkdir(parents=True)
    (art / "timings.json").write_text(json.dumps(LEGACY))
    timings = load_timings(art)
    assert timings.legacy_metadata == {"system_ram_gb": 251.5, "gpu_ram_gb": 79.6}
    first, second = timings.stages["ippo_train"].runs
    assert first.legacy_metadata == {"system_ram_gb": 251.5, "gpu_ram_gb": 79.6}
    assert (first.hardware_id, first.metadata) == (None, {})
    assert second.legacy_metadata == {"system_ram_gb": 251.5}
    assert timings.stages["alpharank"].total_seconds == 4.0


def test_legacy_metadata_is_kept_verbatim_on_rewrite(rec: Recorder, art: Path) -> None:
    art.mkdir(parents=True)
    (art / "timings.json").write_text(json.dumps(LEGACY))
    record_timing("ippo_train", 5.0, run_idx=2, recorder=rec)
    data = read_json(art / "timings.json")
    assert (data["system_ram_gb"], data["gpu_ram_gb"]) == (251.5, 79.6)
    assert data["ippo_train"]["runs"][:2] == LEGACY["ippo_train"]["runs"]  # type: ignore[index]
    assert data["ippo_train"]["total_seconds"] == 35.0
    assert data["alpharank"] == LEGACY["alpharank"]


def test_unknown_keys_survive_every_rewrite(rec: Recorder, art: Path) -> None:
    art.mkdir(parents=True)
    original = {
        "notes": {"owner": "lab", "tags": ["a", "b"]},
        "ippo_train": {
            "total_seconds": 1.0,
            "runs": [{"seconds": 1.0, "run_idx": 0, "hardware_id": "hw-0", "future": [1]}],
            "stage_comment": "kept",
        },
        "version_string": "x",
    }
    (art / "timings.json").write_text(json.dumps(original))
    record_timing("ippo_train", 2.0, run_idx=1, recorder=rec)
    record_timing("alpharank", 2.0, recorder=rec)
    data = read_json(art / "timings.json")
    assert data["notes"] == original["notes"]
    assert data["version_string"] == "x"
    assert data["ippo_train"]["stage_comment"] == "kept"
    assert data["ippo_train"]["runs"][0] == original["ippo_train"]["runs"][0]  # type: ignore[index]
    assert list(data) == ["notes", "ippo_train", "version_string", "alpharank"]
    loaded = load_timings(art)
    assert loaded.other == {"notes": original["notes"], "version_string": "x"}
    assert loaded.stages["ippo_train"].extra == {"stage_comment": "kept"}
    assert loaded.stages["ippo_train"].runs[0].metadata == {"future": [1]}


def test_unknown_hardware_entries_are_kept(rec: Recorder, art: Path) -> None:
    art.mkdir(parents=True)
    foreign = {"host": "old-node", "future_field": {"x": 1}}
    (art / "timings_hardware.json").write_text(
        json.dumps({"schema_version": 1, "hardware": {"hw-foreign": foreign}})
    )
    record_timing("alpharank", 1.0, recorder=rec)
    assert read_json(art / "timings_hardware.json")["hardware"]["hw-foreign"] == foreign


@pytest.mark.parametrize(
    "content", [b"{not json", b"", b"[1, 2]", b"\xff\xfe", b'{"a": 1'], ids=repr
)
def test_corrupt_timings_strict_raises_naming_the_file(art: Path, content: bytes) -> None:
    art.mkdir(parents=True)
    (art / "timings.json").write_bytes(content)
    with pytest.raises(SidecarCorruptError) as info:
        record_timing("alpharank", 1.0, recorder=Recorder(art, strict=True))
    assert info.value.path == str(art / "timings.json")
    assert str(art / "timings.json") in str(info.value)
    assert (art / "timings.json").read_bytes() == content


def test_corrupt_timings_lenient_warns_keeps_and_saves_once_moved_aside(art: Path) -> None:
    art.mkdir(parents=True)
    (art / "timings.json").write_text("{truncated")
    rec = Recorder(art)
    with pytest.warns(StageTimerWarning, match=r"timings\.json.*kept pending"):
        record_timing("ippo_train", 1.0, run_idx=0, recorder=rec)
    assert rec.pending == 1
    assert (art / "timings.json").read_text() == "{truncated"
    (art / "timings.json").rename(art / "timings.json.broken")
    record_timing("ippo_train", 2.0, run_idx=1, recorder=rec)
    assert rec.pending == 0
    assert [r.seconds for r in load_timings(art).stages["ippo_train"].runs] == [1.0, 2.0]


def test_load_of_corrupt_timings_names_the_file(art: Path) -> None:
    art.mkdir(parents=True)
    (art / "timings.json").write_text("{truncated")
    with pytest.raises(SidecarCorruptError, match=r"timings\.json: does not parse"):
        load_timings(art)


def test_newer_hardware_schema_is_never_overwritten(art: Path) -> None:
    art.mkdir(parents=True)
    newer = b'{"schema_version": 2, "hardware": {}, "machines": []}\n'
    (art / "timings_hardware.json").write_bytes(newer)
    with pytest.raises(SchemaVersionError, match="schema_version 2 is newer than 1"):
        record_timing("alpharank", 1.0, recorder=Recorder(art, strict=True))
    with pytest.warns(StageTimerWarning):
        record_timing("alpharank", 1.0, recorder=Recorder(art))
    assert (art / "timings_hardware.json").read_bytes() == newer
    assert not (art / "timings.json").exists()  # no run may point at an unresolvable id
    with pytest.raises(SchemaVersionError):
        load_hardware(art)


def test_close_writes_a_rescue_file_when_the_save_keeps_failing(art: Path) -> None:
    art.mkdir(parents=True)
    (art / "timings.json").write_text("{truncated")
    rec = Recorder(art)
    with pytest.warns(StageTimerWarning):
        record_timing("ippo_train", 1.25, run_idx=0, recorder=rec, lr=0.5)
    with pytest.warns(StageTimerWarning, match="rescue"):
        rec.close()
    (rescue,) = art.glob("timings.rescue-*.json")
    payload = read_json(rescue)
    assert payload["records"] == [
        {
            "id": payload["records"][0]["id"],
            "stage": "ippo_train",
            "run": {**payload["records"][0]["run"], "seconds": 1.25},
        }
    ]
    run = payload["records"][0]["run"]
    assert (run["run_idx"], run["lr"]) == (0, 0.5)
    assert run["hardware_id"] in payload["hardware"]
    assert rec.pending == 0
    assert (art / "timings.json").read_text() == "{truncated"


def test_with_block_exit_flushes_pending_records(art: Path) -> None:
    art.mkdir(parents=True)
    (art / "timings.json").write_text("{truncated")
    with pytest.warns(StageTimerWarning), Recorder(art) as rec:
        record_timing("ippo_train", 1.0, run_idx=0)
        (art / "timings.json").unlink()
    assert rec.pending == 0
    assert list(load_timings(art).stages) == ["ippo_train"]


@pytest.mark.filterwarnings("ignore:.*recorded again without run_idx:stagetimer.StageTimerWarning")
def test_existing_file_mode_is_kept(rec: Recorder, art: Path) -> None:
    record_timing("alpharank", 1.0, recorder=rec)
    os.chmod(art / "timings.json", 0o640)
    os.chmod(art / "timings_hardware.json", 0o604)
    (art / "timings_hardware.json").write_text('{"schema_version": 1, "hardware": {}}')
    record_timing("alpharank", 2.0, recorder=rec)
    assert (art / "timings.json").stat().st_mode & 0o777 == 0o640
    assert (art / "timings_hardware.json").stat().st_mode & 0o777 == 0o604


def test_new_files_follow_the_umask(rec: Recorder, art: Path) -> None:
    old = os.umask(0o027)
    try:
        record_timing("alpharank", 1.0, recorder=rec)
    finally:
        os.umask(old)
    assert (art / "timings.json").stat().st_mode & 0o777 == 0o640


def test_no_temporary_file_is_left_after_success_or_failure(art: Path) -> None:
    rec = Recorder(art)
    record_timing("alpharank", 1.0, recorder=rec)
    (art / "timings.json").write_text("{bad")
    with pytest.warns(StageTimerWarning):
        record_timing("alpharank", 1.0, recorder=rec)
    # The pending record is also kept in a rescue file; no temporary file is left.
    assert sorted(p.name for p in art.iterdir() if not p.name.startswith("timings.rescue-")) == [
        "timings.json",
        "timings.json.lock",
        "timings_hardware.json",
        "timings_hardware.json.lock",
    ]


def test_leftover_temp_file_of_a_killed_writer_is_replaced(rec: Recorder, art: Path) -> None:
    art.mkdir(parents=True)
    (art / ".timings.json.tmp").write_text('{"half": ')
    record_timing("alpharank", 1.0, recorder=rec)
    assert not (art / ".timings.json.tmp").exists()
    assert list(load_timings(art).stages) == ["alpharank"]


@pytest.mark.filterwarnings("ignore:.*recorded again without run_idx:stagetimer.StageTimerWarning")
def test_hardware_sidecar_removed_between_saves_is_written_again(rec: Recorder, art: Path) -> None:
    record_timing("alpharank", 1.0, recorder=rec)
    (art / "timings_hardware.json").unlink()
    record_timing("alpharank", 2.0, recorder=rec)
    run = load_timings(art).stages["alpharank"].runs[0]
    assert run.hardware_id in load_hardware(art).hardware


def test_a_stale_hardware_temp_file_is_cleared_even_when_nothing_is_written(art: Path) -> None:
    record_timing("alpharank", 1.0, recorder=Recorder(art))
    (art / ".timings_hardware.json.tmp").write_text('{"half": ')
    record_timing("alpharank", 2.0, recorder=Recorder(art))
    assert not (art / ".timings_hardware.json.tmp").exists()
