"""Metadata is copied when a stage is entered (or a timing recorded): what the caller
changes afterwards neither changes the record nor can break a later save."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

from stagetimer import Recorder, StageTimerWarning, load_timings, record_timing, stage, timed_stage


def metadata_of(art: Path, name: str) -> list[dict[str, Any]]:
    return [r.metadata for r in load_timings(art).stages[name].runs]


def test_stage_records_the_metadata_as_it_was_on_entry(rec: Recorder, art: Path) -> None:
    config: dict[str, Any] = {"layers": [64, 64]}
    with stage("ippo_train", run_idx=0, recorder=rec, config=config):
        config["layers"].append(object())  # not JSON: must not reach the file
        config["lr"] = 0.1

    assert [{"config": {"layers": [64, 64]}}] == metadata_of(art, "ippo_train")


def test_timed_stage_records_the_metadata_given_at_decoration(rec: Recorder, art: Path) -> None:
    tags = ["baseline"]

    @timed_stage("nashconv", recorder=rec, tags=tags)
    def nashconv() -> None:
        pass

    tags.append("changed later")
    nashconv()

    assert [{"tags": ["baseline"]}] == metadata_of(art, "nashconv")


def test_pending_record_keeps_its_metadata_when_the_caller_changes_it(
    rec: Recorder, art: Path
) -> None:
    art.mkdir(parents=True)
    (art / "timings.json").write_text("{not json")  # the first save fails: the run stays pending
    seeds: list[object] = [1, 2]
    with pytest.warns(StageTimerWarning):
        record_timing("alpharank", 1.0, recorder=rec, seeds=seeds)
    seeds.append(object())  # would make the retried save fail if the record shared it
    (art / "timings.json").unlink()

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        record_timing("satisfaction", 2.0, recorder=rec)

    assert [{"seeds": [1, 2]}] == metadata_of(art, "alpharank")


def test_stage_metadata_given_as_a_tuple_is_recorded_as_a_list(rec: Recorder, art: Path) -> None:
    with stage("ippo_train", run_idx=0, recorder=rec, shape=(2, 3)):
        pass

    assert [{"shape": [2, 3]}] == metadata_of(art, "ippo_train")
