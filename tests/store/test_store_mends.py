"""Regressions of the store's mends: a rescue file removed meanwhile, sidecars re-read
on shared mounts only when cut short, legacy rescue names, one insertion rule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.rescue import write_rescue

from stagetimer import recover
from stagetimer._errors import SidecarCorruptError
from stagetimer._store import rescue, rescue_content

GOOD = {"stage": "eval", "run": {"seconds": 2.0, "run_idx": 0}}
#: A rescue file from before they named their writer (its pid is in its name).
LEGACY = json.dumps({"policy": "sequential", "records": [GOOD]})


def test_a_rescue_file_removed_between_look_and_read_is_skipped_not_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    art = tmp_path / "art"
    path = write_rescue(art, [GOOD])
    real = rescue_content.read_rescue

    def removed_first(p: str) -> rescue_content.RescueContent:
        path.unlink()  # its live writer saved its records and removed it
        return real(p)

    monkeypatch.setattr(rescue, "read_rescue", removed_first)
    (done,) = recover(art)
    assert done.refused == ()
    assert done.skipped is not None and "removed meanwhile" in done.skipped


def test_reading_a_missing_rescue_file_says_it_is_missing(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        rescue_content.read_rescue(str(tmp_path / "timings.rescue-x-1-0.json"))


def _count_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from stagetimer._store import sidecar

    reads: list[str] = []
    real = sidecar._read_locked

    def counted(*args: Any) -> Any:
        reads.append(args[0])
        return real(*args)

    monkeypatch.setattr(sidecar, "_read_locked", counted)
    monkeypatch.setattr(sidecar, "is_local", lambda path: False)  # a network mount
    monkeypatch.setattr(sidecar, "_SETTLE_WAITS", (0.0, 0.0, 0.0))
    return reads


@pytest.mark.parametrize(
    "text",
    [
        '{"train": {"total_seconds": 1, "runs": 3}}',  # wrong type: corrupt in the file
        '{"train": 1,, }',  # a syntax error inside the text
        '{"train": 1} {}',  # extra data
    ],
)
def test_a_sidecar_corrupt_in_itself_on_a_network_mount_is_not_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    from stagetimer._store.parse import parse_timings
    from stagetimer._store.sidecar import update_file

    path = tmp_path / "timings.json"
    path.write_text(text, encoding="utf-8")
    reads = _count_reads(monkeypatch)
    with pytest.raises(SidecarCorruptError):
        update_file(str(path), parse_timings, lambda data: None, 5.0)
    assert len(reads) == 1


@pytest.mark.parametrize("cut", [0, 1, 9, 18, 25, 31, 40, 70, 72])
def test_a_sidecar_cut_short_on_a_network_mount_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cut: int
) -> None:
    from stagetimer._store.parse import parse_timings
    from stagetimer._store.sidecar import update_file

    text = '{"train": {"total_seconds": 1.5, "runs": [{"seconds": 1.5, "label": "é"}]}}'
    path = tmp_path / "timings.json"
    path.write_bytes(text.encode("utf-8")[:cut])
    reads = _count_reads(monkeypatch)
    with pytest.raises(SidecarCorruptError):
        update_file(str(path), parse_timings, lambda data: None, 5.0)
    assert len(reads) == 4  # the first read and one per wait


def test_a_refused_rescue_record_names_its_problem_without_a_made_up_run_number(
    tmp_path: Path,
) -> None:
    art = tmp_path / "art"
    write_rescue(art, [{"stage": "train", "run": {"seconds": 1.0, "label": 3}}])
    (done,) = recover(art)
    assert done.refused == ("record 0: run has 'label' a number, expected a string",)


@pytest.mark.parametrize("suffix", ["0", "00", "x"])
def test_an_older_rescue_file_whose_name_names_no_pid_is_folded(
    tmp_path: Path, suffix: str
) -> None:
    art = tmp_path / "art"
    name = f"timings.rescue-20261201T000000000000Z-{suffix}.json"
    write_rescue(
        art,
        [GOOD],
        name=name,
        raw=LEGACY,
    )
    (done,) = recover(art)
    assert (done.stored, done.skipped) == (1, None)


def test_an_older_rescue_file_of_a_zombie_is_folded(tmp_path: Path) -> None:
    import subprocess

    child = subprocess.Popen(["true"])
    try:
        import time

        for _ in range(200):  # until it has exited (not reaped: a zombie)
            with open(f"/proc/{child.pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
            time.sleep(0.01)
        art = tmp_path / "art"
        write_rescue(
            art,
            [GOOD],
            name=f"timings.rescue-20261201T000000000000Z-{child.pid}.json",
            raw=LEGACY,
        )
        (done,) = recover(art)
        assert (done.stored, done.skipped) == (1, None)
    finally:
        child.wait()


def test_a_bad_claim_stale_time_is_a_bad_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    from stagetimer._errors import InvalidSettingError
    from stagetimer._settings import CLAIM_STALE_SECONDS, claim_stale_seconds

    monkeypatch.setenv(CLAIM_STALE_SECONDS, "soon")
    with pytest.raises(InvalidSettingError, match="STAGETIMER_CLAIM_STALE_SECONDS='soon'"):
        claim_stale_seconds()


@pytest.mark.parametrize("field", ["hardware", "software"])
def test_a_rescue_file_whose_descriptions_are_not_an_object_is_refused_whole(
    tmp_path: Path, field: str
) -> None:
    art = tmp_path / "art"
    raw = json.dumps({"policy": "sequential", "records": [GOOD], field: [1]})
    write_rescue(art, [GOOD], raw=raw)
    (done,) = recover(art)
    assert done.stored == 0
    assert done.refused == (f"the whole file: {field!r} is an array, expected an object",)


def test_rescue_files_of_one_directory_are_folded_in_one_save_per_sidecar(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    art = tmp_path / "art"
    other = {"stage": "eval", "run": {"seconds": 3.0, "run_idx": 1}}
    write_rescue(art, [GOOD], name="timings.rescue-20261201T000000000000Z-1-00000000.json")
    write_rescue(art, [GOOD, other], name="timings.rescue-20261201T000000000001Z-1-00000000.json")
    saves: list[str] = []
    real = rescue.update_file

    def counted(path: str, *args: Any, **kwargs: Any) -> None:
        saves.append(Path(path).name)
        real(path, *args, **kwargs)

    monkeypatch.setattr(rescue, "update_file", counted)
    first, second = recover(art)
    assert saves == ["timings_hardware.json", "timings.json"]
    assert (first.stored, first.already) == (1, 0)
    assert (second.stored, second.already) == (1, 1)  # the first file's record is there
    assert list(art.glob("timings.rescue-*")) == []
