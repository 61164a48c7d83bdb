"""The report names the directories holding rescue files and says how to fold them in."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest
from helpers.cli import Ran, run_cli
from helpers.rescue import orphan

from stagetimer import Recorder, StageTimerWarning, load_timings, stage


def _report(*paths: Path) -> Ran:
    return run_cli("report", *paths)


def _rescue_while_the_lock_is_held(art: Path) -> None:
    """A first save that times out: the run is only in a rescue file."""
    art.mkdir(parents=True)
    fd = os.open(art / "timings.json.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        rec = Recorder(art, lock_timeout=0.2)
        timed = stage("ippo_train", run_idx=0, recorder=rec)
        with pytest.warns(StageTimerWarning, match="rescue"), timed:
            pass
    finally:
        os.close(fd)


def test_a_directory_holding_only_a_rescue_file_is_named_with_the_recover_command(
    art: Path, tmp_path: Path
) -> None:
    _rescue_while_the_lock_is_held(art)
    assert not (art / "timings.json").exists()
    done = _report(tmp_path)
    assert 0 == done.returncode, done.stderr
    [line] = done.stderr.splitlines()
    assert f"stagetimer recover {art}" in line
    assert "rescue" in line


def test_after_recover_the_report_no_longer_mentions_rescue_files(
    art: Path, tmp_path: Path
) -> None:
    _rescue_while_the_lock_is_held(art)
    orphan(art)  # its writer has ended (a live writer's file is left alone)
    recovered = run_cli("recover", art)
    assert 0 == recovered.returncode, recovered.stderr
    assert [0] == [run.run_idx for run in load_timings(art).stages["ippo_train"].runs]
    done = _report(tmp_path)
    assert 0 == done.returncode, done.stderr
    assert "rescue" not in done.stderr
    assert "ippo_train" in done.stdout


def test_rescue_files_beside_a_corrupt_sidecar_are_named_too(art: Path) -> None:
    art.mkdir(parents=True)
    (art / "timings.json").write_bytes(b"{not json")
    with pytest.warns(StageTimerWarning), Recorder(art), stage("ippo_train", run_idx=0):
        pass
    done = _report(art)
    assert 1 == done.returncode  # the corrupt file is a problem
    assert any(f"stagetimer recover {art}" in line for line in done.stderr.splitlines())
