"""Regressions of the store's mends: a rescue file removed meanwhile, sidecars re-read
on shared mounts only when cut short, legacy rescue names, one insertion rule."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.rescue import write_rescue

from stagetimer import recover
from stagetimer._store import rescue, rescue_content

GOOD = {"stage": "eval", "run": {"seconds": 2.0, "run_idx": 0}}


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
