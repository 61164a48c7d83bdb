"""Every attempt of the save path ends in one named outcome (``_record/saver.py``).

Each outcome is made by a real condition: a fresh directory, a stage name that holds
other data in ``timings.json``, another process holding the sidecar's lock.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.reliability import call_with_guard, spawn_python

from stagetimer import LockTimeoutError
from stagetimer._record.outcomes import (
    AppendedAgain,
    HandedBack,
    KeptPending,
    Refused,
    Saved,
)
from stagetimer._record.pending import Finished, Pending
from stagetimer._record.saver import Saver, SaverSettings

HOLDER = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(600)
"""


def _saver(directory: Path, *, strict: bool = False) -> Saver:
    return Saver(SaverSettings(str(directory), "sequential", strict, 0.2, None, None))


def _add(saver: Saver, name: str, run_idx: int | None = 0) -> Pending:
    pending = Pending(Finished(name, 1.25, run_idx, None, None, None))
    saver.pending.append(pending)
    return pending


def _rescue_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("timings.rescue-*.json"))


@pytest.fixture
def held(tmp_path: Path) -> Iterator[Path]:
    """``tmp_path`` with its hardware sidecar's lock held by another process."""
    holder = spawn_python(HOLDER, tmp_path / "timings_hardware.json.lock")
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "held\n"
        yield tmp_path
    finally:
        holder.kill()
        holder.wait(timeout=10)


def test_saved_stores_every_record_and_leaves_no_rescue_file(tmp_path: Path) -> None:
    saver = _saver(tmp_path)
    _add(saver, "ippo_train")
    _add(saver, "nashconv")
    assert saver.save() == Saved()
    assert saver.pending == []
    stored = json.loads((tmp_path / "timings.json").read_text(encoding="utf-8"))
    assert list(stored) == ["ippo_train", "nashconv"]
    assert _rescue_files(tmp_path) == []


def test_saved_names_a_run_appended_beside_the_same_run_on_disk(tmp_path: Path) -> None:
    saver = _saver(tmp_path)
    _add(saver, "ippo_train", 0)
    _add(saver, "ippo_train", 1)
    assert saver.save() == Saved()
    _add(saver, "ippo_train", 1)
    assert saver.save() == Saved((AppendedAgain("ippo_train", 1),))


@pytest.mark.parametrize("strict", [False, True])
def test_refused_stores_the_others_and_keeps_the_refused_one_unless_strict(
    tmp_path: Path, strict: bool
) -> None:
    (tmp_path / "timings.json").write_text('{"evaluate": 5}', encoding="utf-8")
    saver = _saver(tmp_path, strict=strict)
    _add(saver, "ippo_train")
    _add(saver, "evaluate")
    outcome = saver.save()
    assert isinstance(outcome, Refused)
    assert "holds other data" in str(outcome.error)
    assert saver.pending == []
    stored = json.loads((tmp_path / "timings.json").read_text(encoding="utf-8"))
    assert stored["evaluate"] == 5 and "ippo_train" in stored
    if strict:
        assert outcome.rescued is None
        assert _rescue_files(tmp_path) == []
    else:
        (rescue,) = _rescue_files(tmp_path)
        assert outcome.rescued is not None and str(rescue) in outcome.rescued
        records = json.loads(rescue.read_text(encoding="utf-8"))["records"]
        assert [r["stage"] for r in records] == ["evaluate"]


def test_kept_pending_keeps_every_record_in_the_rescue_file(held: Path) -> None:
    saver = _saver(held)
    _add(saver, "ippo_train")
    newest = _add(saver, "nashconv")
    outcome = call_with_guard(saver.save, 15)
    assert isinstance(outcome, KeptPending)
    assert isinstance(outcome.error, LockTimeoutError)
    assert (outcome.count, outcome.newest) == (2, newest.finished)
    (rescue,) = _rescue_files(held)
    assert str(rescue) in outcome.where
    assert len(saver.pending) == 2


def test_a_strict_save_hands_the_waiting_record_back(held: Path) -> None:
    saver = _saver(held, strict=True)
    other = _add(saver, "ippo_train")
    waiting = _add(saver, "nashconv")
    outcome = call_with_guard(lambda: saver.save(waiting=waiting), 15)
    assert isinstance(outcome, HandedBack)
    assert isinstance(outcome.error, LockTimeoutError)
    assert saver.pending == [other]  # the other record is kept, and rescued
    (rescue,) = _rescue_files(held)
    records = json.loads(rescue.read_text(encoding="utf-8"))["records"]
    assert [r["stage"] for r in records] == ["ippo_train"]


def test_a_save_with_nothing_pending_is_saved(tmp_path: Path) -> None:
    assert _saver(tmp_path).save() == Saved()
    assert not (tmp_path / "timings.json").exists()

