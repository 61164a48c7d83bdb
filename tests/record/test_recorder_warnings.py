"""The recorder says so, once per stage, when a record is probably not what the user meant."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from stagetimer import (
    InvalidRecordError,
    Recorder,
    StageTimerWarning,
    load_timings,
    record_timing,
    stage,
    timed_stage,
)


def _run_indices(art: Path, name: str) -> list[int | None]:
    return [run.run_idx for run in load_timings(art).stages[name].runs]


def test_an_unindexed_stage_recorded_per_seed_warns_once_and_suggests_run_idx(art: Path) -> None:
    @timed_stage
    def nashconv(policy: int) -> int:
        return policy

    with pytest.warns(StageTimerWarning, match="without run_idx") as caught, Recorder(art):
        for seed in range(3):
            nashconv(seed)
    assert 1 == len(caught)
    assert "run_idx" in str(caught[0].message)
    assert __file__ == caught[0].filename  # attributed to the user's code
    assert [None] == _run_indices(art, "nashconv")  # the rule itself is unchanged


def test_a_stage_recorded_once_without_run_idx_draws_no_warning(art: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with Recorder(art):
            for seed in range(3):
                with stage("ippo_train", run_idx=seed):
                    pass
            with stage("alpharank"):
                pass


def test_replacing_an_unindexed_stage_another_recorder_wrote_draws_no_warning(art: Path) -> None:
    with Recorder(art), stage("alpharank"):
        pass
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with Recorder(art), stage("alpharank"):  # a rerun of the suite replaces it: intended
            pass


def test_under_upsert_unindexed_runs_with_different_labels_draw_no_warning(art: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with Recorder(art, policy="upsert"):
            for label in ("greedy", "sampled"):
                with stage("nashconv", label=label):
                    pass
    with pytest.warns(StageTimerWarning, match="without run_idx"), Recorder(art, policy="upsert"):
        for _ in range(2):
            with stage("nashconv", label="greedy"):
                pass


def _four_seeds(art: Path) -> None:
    with Recorder(art):
        for seed in range(4):
            with stage("ippo_train", run_idx=seed), stage("nashconv", run_idx=seed):
                pass


def test_restarting_without_resume_warns_once_per_stage_and_names_both_remedies(
    art: Path,
) -> None:
    _four_seeds(art)
    with pytest.warns(StageTimerWarning) as caught, Recorder(art):
        for seed in range(2, 4):
            with stage("ippo_train", run_idx=seed), stage("nashconv", run_idx=seed):
                pass
    messages = [str(w.message) for w in caught]
    assert 2 == len(messages)  # one per stage, not one per duplicated run
    assert {"ippo_train", "nashconv"} == {m.split("'")[1] for m in messages}
    for message in messages:
        assert "resume_partial_runs=True, completed_runs=2" in message
        assert 'policy="upsert"' in message
    assert [0, 1, 2, 3, 2, 3] == _run_indices(art, "ippo_train")  # appended, as the rule says


def test_restarting_with_resume_or_upsert_draws_no_warning(art: Path) -> None:
    _four_seeds(art)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with Recorder(art, resume_partial_runs=True, completed_runs=2):
            for seed in range(2, 4):
                with stage("ippo_train", run_idx=seed):
                    pass
        with Recorder(art, policy="upsert"):
            for seed in range(2, 4):
                with stage("ippo_train", run_idx=seed):
                    pass
    assert [0, 1, 2, 3] == _run_indices(art, "ippo_train")


def test_a_duplicate_behind_later_runs_is_found(art: Path) -> None:
    _four_seeds(art)
    # The last run on disk is 3, so the whole list is searched.
    with (
        pytest.warns(StageTimerWarning, match="run_idx 1 was already on disk"),
        Recorder(art),
        stage("ippo_train", run_idx=1),
    ):
        pass


def test_a_refused_record_draws_no_appended_again_warning(art: Path) -> None:
    record_timing("ippo_train", 1e308, run_idx=1, recorder=Recorder(art))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(InvalidRecordError, match="overflow"):
            record_timing("ippo_train", 1e308, run_idx=1, recorder=Recorder(art))
    messages = [str(w.message) for w in caught]
    assert not any("already on disk" in m for m in messages), messages
    assert [1] == _run_indices(art, "ippo_train")
