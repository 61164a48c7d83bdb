"""Saving when the disk is full, read-only or holds a corrupt sidecar (docs/guarantees.md).

A stage that finished is never lost: the old file stays byte-identical, lenient
mode warns and keeps the record pending until a later save or ``close()``
succeeds, and as last resorts a rescue file beside the sidecar or, where nothing
can be written, standard error. Strict mode raises the error.

The full and read-only filesystems are a real tmpfs of 256 KiB (root only).
"""

from __future__ import annotations

import errno
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.reliability import (
    TMP_NAMES,
    assert_sidecars_sound,
    fill_filesystem,
    is_root,
    remount,
    spawn_python,
    stderr_payloads,
    tmpfs,
)

from stagetimer import (
    Recorder,
    StageTimerWarning,
    load_timings,
    record_timing,
    stage,
)

LOCK_TIMEOUT = 2.0


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A real 256 KiB tmpfs, unmounted at teardown (remounted writable first if needed)."""
    if not is_root():
        pytest.skip("mounting a tmpfs needs root")
    with tmpfs(tmp_path / "mnt", size="256k") as mnt:
        try:
            yield mnt
        finally:
            remount(mnt, read_only=False)


def _stage_runs(directory: Path) -> dict[str, list[float]]:
    return {
        name: [run.seconds for run in s.runs] for name, s in load_timings(directory).stages.items()
    }


def _no_temporary_files(directory: Path) -> bool:
    return not any((directory / name).exists() for name in TMP_NAMES)


# -- disk full ------------------------------------------------------------------


@pytest.mark.root
@pytest.mark.parametrize("space_returns_then", ["next_record", "close"])
def test_full_disk_keeps_the_old_file_and_the_record_pending_until_space_returns(
    small_fs: Path, space_returns_then: str
) -> None:
    rec = Recorder(small_fs, lock_timeout=LOCK_TIMEOUT)
    record_timing("before", 1.0, recorder=rec)
    old = (small_fs / "timings.json").read_bytes()
    filler = fill_filesystem(small_fs)

    with pytest.warns(StageTimerWarning, match="during"), stage("during", recorder=rec):
        pass

    assert rec.pending == 1
    assert old == (small_fs / "timings.json").read_bytes()
    assert _no_temporary_files(small_fs)
    filler.unlink()
    if space_returns_then == "next_record":
        record_timing("after", 3.0, recorder=rec)
        assert list(_stage_runs(small_fs)) == ["before", "during", "after"]
    else:
        rec.close()
        assert list(_stage_runs(small_fs)) == ["before", "during"]
    assert rec.pending == 0
    assert_sidecars_sound(small_fs)


@pytest.mark.root
def test_full_disk_strict_raises_enospc_and_leaves_the_file_unchanged(small_fs: Path) -> None:
    rec = Recorder(small_fs, strict=True, lock_timeout=LOCK_TIMEOUT)
    record_timing("before", 1.0, recorder=rec)
    old = (small_fs / "timings.json").read_bytes()
    fill_filesystem(small_fs)

    with pytest.raises(OSError) as info:
        record_timing("during", 2.0, run_idx=0, recorder=rec)

    assert info.value.errno == errno.ENOSPC
    assert old == (small_fs / "timings.json").read_bytes()
    assert rec.pending == 0
    assert _no_temporary_files(small_fs)


@pytest.mark.root
def test_first_record_on_a_full_disk_is_pending_and_saved_at_close(small_fs: Path) -> None:
    # No sidecar yet: the lock files (empty, an inode each) can be created, the
    # hardware sidecar cannot; nothing half-written may appear.
    directory = small_fs / "artifact"
    directory.mkdir()
    filler = fill_filesystem(small_fs)
    rec = Recorder(directory, lock_timeout=LOCK_TIMEOUT)

    with pytest.warns(StageTimerWarning):
        record_timing("first", 1.5, run_idx=0, recorder=rec)

    assert rec.pending == 1
    assert not (directory / "timings.json").exists()
    assert not (directory / "timings_hardware.json").exists()
    assert _no_temporary_files(directory)
    filler.unlink()
    rec.close()
    assert _stage_runs(directory) == {"first": [1.5]}
    assert_sidecars_sound(directory)


@pytest.mark.root
def test_full_disk_forever_close_puts_the_record_on_stderr_as_json(
    small_fs: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    # Neither the sidecar nor a rescue file fits: standard error is the last resort, before
    # the stage returns (a record is never only in memory), and only once.
    rec = Recorder(small_fs, lock_timeout=LOCK_TIMEOUT)
    record_timing("before", 1.0, recorder=rec)
    old = (small_fs / "timings.json").read_bytes()
    fill_filesystem(small_fs)
    capfd.readouterr()
    with pytest.warns(StageTimerWarning, match="standard error"):
        record_timing("lost", 2.0, run_idx=0, recorder=rec)
    payloads = stderr_payloads(capfd.readouterr().err)
    assert [[("lost", 2.0)]] == [
        [(r["stage"], r["run"]["seconds"]) for r in p["records"]] for p in payloads
    ]

    with pytest.warns(StageTimerWarning, match="at close"):
        rec.close()

    assert [] == stderr_payloads(capfd.readouterr().err)  # not printed a second time
    assert rec.pending == 0
    assert old == (small_fs / "timings.json").read_bytes()
    leftovers = sorted(p.name for p in small_fs.iterdir() if p.name.startswith("."))
    assert leftovers == []  # no half-written rescue file either
    assert list(small_fs.glob("timings.rescue-*")) == []


# -- read-only filesystem -----------------------------------------------------------


@pytest.mark.root
def test_read_only_record_is_pending_and_close_saves_it_once_writable(small_fs: Path) -> None:
    rec = Recorder(small_fs, lock_timeout=LOCK_TIMEOUT)
    record_timing("before", 1.0, recorder=rec)
    old = (small_fs / "timings.json").read_bytes()
    remount(small_fs, read_only=True)

    t0 = time.monotonic()
    with pytest.warns(StageTimerWarning, match="during"):
        record_timing("during", 2.0, run_idx=0, recorder=rec)
    elapsed = time.monotonic() - t0

    # EROFS is not contention: failing at once, not after spinning for lock_timeout.
    assert elapsed < LOCK_TIMEOUT / 2
    assert rec.pending == 1
    assert old == (small_fs / "timings.json").read_bytes()
    remount(small_fs, read_only=False)
    rec.close()
    assert rec.pending == 0
    assert _stage_runs(small_fs) == {"before": [1.0], "during": [2.0]}
    assert_sidecars_sound(small_fs)


@pytest.mark.root
def test_read_only_strict_raises_erofs_at_once(small_fs: Path) -> None:
    rec = Recorder(small_fs, strict=True, lock_timeout=LOCK_TIMEOUT)
    record_timing("before", 1.0, recorder=rec)
    old = (small_fs / "timings.json").read_bytes()
    remount(small_fs, read_only=True)

    t0 = time.monotonic()
    with pytest.raises(OSError) as info:
        record_timing("during", 2.0, recorder=Recorder(small_fs, strict=True))
    elapsed = time.monotonic() - t0

    assert info.value.errno == errno.EROFS
    assert elapsed < LOCK_TIMEOUT / 2
    assert old == (small_fs / "timings.json").read_bytes()


@pytest.mark.root
@pytest.mark.parametrize("earlier_save", [True, False], ids=["sidecars-exist", "empty-dir"])
def test_read_only_forever_close_puts_the_records_on_stderr_as_json(
    small_fs: Path, capfd: pytest.CaptureFixture[str], earlier_save: bool
) -> None:
    rec = Recorder(small_fs, lock_timeout=LOCK_TIMEOUT)
    if earlier_save:  # else not even the lock files exist
        record_timing("before", 1.0, recorder=rec)
    names_before = sorted(p.name for p in small_fs.iterdir())
    remount(small_fs, read_only=True)
    capfd.readouterr()
    with pytest.warns(StageTimerWarning):
        record_timing("lost_1", 2.0, run_idx=3, label="a", recorder=rec, note="x")
    with pytest.warns(StageTimerWarning):
        record_timing("lost_2", 4.0, recorder=rec)
    assert rec.pending == 2
    # Each record reached standard error before its stage returned, each once.
    err = capfd.readouterr().err
    payloads = stderr_payloads(err)
    assert len(payloads) == 2, err
    entries = [r for payload in payloads for r in payload["records"]]
    records = [(r["stage"], r["run"]["seconds"], r["run"].get("run_idx")) for r in entries]
    assert records == [("lost_1", 2.0, 3), ("lost_2", 4.0, None)]
    assert {k: entries[0]["run"][k] for k in ("label", "note")} == {
        "label": "a",
        "note": "x",
    }
    for payload in payloads:
        hw_ids = {r["run"]["hardware_id"] for r in payload["records"]}
        assert hw_ids <= set(payload["hardware"])

    t0 = time.monotonic()
    with pytest.warns(StageTimerWarning, match="at close"):
        rec.close()
    elapsed = time.monotonic() - t0

    assert [] == stderr_payloads(capfd.readouterr().err)
    assert rec.pending == 0
    assert elapsed < LOCK_TIMEOUT
    assert names_before == sorted(p.name for p in small_fs.iterdir())  # nothing written


# -- corrupt sidecar: the rescue file ---------------------------------------------------


@pytest.mark.parametrize(
    ("file_name", "content"),
    [
        ("timings.json", b'{"ippo_train": {"runs": [{"seconds": 1.0'),
        ("timings.json", b"[1, 2, 3]\n"),
        ("timings_hardware.json", b"\xff\xfe not json"),
        ("timings_hardware.json", b'{"schema_version": 2, "hardware": {}}\n'),
    ],
    ids=["timings-truncated", "timings-not-object", "hardware-garbage", "hardware-newer"],
)
def test_unwritable_sidecar_close_writes_a_rescue_file(
    tmp_path: Path, file_name: str, content: bytes
) -> None:
    (tmp_path / file_name).write_bytes(content)
    rec = Recorder(tmp_path, lock_timeout=LOCK_TIMEOUT)
    with pytest.warns(StageTimerWarning, match="kept pending"):
        record_timing("nashconv", 2.5, run_idx=1, label="seed", recorder=rec, games=4)
    assert rec.pending == 1

    with pytest.warns(StageTimerWarning, match="rescue"):
        rec.close()

    assert rec.pending == 0
    assert content == (tmp_path / file_name).read_bytes()  # never overwritten
    rescues = sorted(tmp_path.glob("timings.rescue-*.json"))
    assert len(rescues) == 1
    payload = json.loads(rescues[0].read_text())
    (record,) = payload["records"]
    assert record["stage"] == "nashconv"
    run = record["run"]
    assert (run["seconds"], run["run_idx"], run["label"], run["games"]) == (2.5, 1, "seed", 4)
    assert run["hardware_id"] in payload["hardware"]
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == []


# Records once into a directory whose sidecar cannot be written, then exits without
# close(): keeping its recorder, or dropping the last reference to it first (as
# ``record_timing(..., recorder=Recorder(path))`` does).
EXITING_WRITER = """
import gc, sys, warnings
warnings.simplefilter("ignore")
from stagetimer import Recorder, record_timing
directory, keep = sys.argv[1], sys.argv[2] == "keep"
rec = Recorder(directory)
record_timing("at_exit", 2.5, run_idx=1, recorder=rec)
print("pending", rec.pending, flush=True)
if not keep:
    del rec
    gc.collect()
"""


@pytest.mark.parametrize("recorder", ["keep", "drop"])
def test_interpreter_exit_rescues_pending_records(tmp_path: Path, recorder: str) -> None:
    (tmp_path / "timings.json").write_bytes(b"{not json")
    writer = spawn_python(EXITING_WRITER, tmp_path, recorder)
    out, err = writer.communicate(timeout=60)
    assert (writer.returncode, out) == (0, "pending 1\n"), err

    rescued = [
        (r["stage"], r["run"]["seconds"], r["run"]["run_idx"])
        for path in tmp_path.glob("timings.rescue-*.json")
        for r in json.loads(path.read_text())["records"]
    ]
    on_stderr = [
        (r["stage"], r["run"]["seconds"]) for p in stderr_payloads(err) for r in p["records"]
    ]
    assert [("at_exit", 2.5, 1)] == rescued, (on_stderr, err)
    assert (tmp_path / "timings.json").read_bytes() == b"{not json"
