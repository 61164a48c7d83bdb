"""Totals across stages count each moment once: a run nested inside its parent's run (a
fit holds its epochs) adds nothing to the report's, the table's, ``compute``'s,
``lost``'s and the page's totals, and every reader says so once. A stage's own figures
are unchanged; a run whose parent was not recorded, or is not among the runs read,
counts on its own as before.

The directories are recorded for real (real stages, real sleeps); the expected totals
are sums of the stored top-level runs.
"""

from __future__ import annotations

import datetime
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.cli import run_cli

from stagetimer import Recorder, stage
from stagetimer._analysis.nesting import NESTED_NOTE

EPOCHS = 3


def record_fits(directory: Path, seeds: int = 2, raise_in: int | None = None) -> None:
    """``seeds`` fits, each of ``EPOCHS`` epochs holding a validation, and an evaluation
    after each fit; the fit of seed ``raise_in`` raises after its epochs."""
    rec = Recorder(directory, policy="upsert")
    for seed in range(seeds):
        try:
            with stage("fit_train", run_idx=seed, recorder=rec):
                time.sleep(0.01)
                for epoch in range(EPOCHS):
                    with stage("train_epoch", run_idx=seed, label=f"epoch{epoch}", recorder=rec):
                        time.sleep(0.01)
                        with stage("validate", run_idx=seed, label=f"epoch{epoch}",
                                   recorder=rec):
                            time.sleep(0.005)
                if seed == raise_in:
                    raise RuntimeError("diverged")
        except RuntimeError:
            pass
        with stage("evaluate", run_idx=seed, recorder=rec):
            time.sleep(0.005)
    rec.close()


def stored(directory: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((directory / "timings.json").read_text(encoding="utf-8"))
    return data


def seconds(directory: Path, *stages: str) -> float:
    """The stored seconds of every run of ``stages``, summed."""
    data = stored(directory)
    return sum(run["seconds"] for name in stages for run in data.get(name, {"runs": []})["runs"])


def rewrite(directory: Path, change: Any) -> None:
    data = stored(directory)
    change(data)
    (directory / "timings.json").write_text(json.dumps(data), encoding="utf-8")


def cli_json(*args: Any) -> Any:
    done = run_cli(*args)
    assert (0, "") == (done.returncode, done.stderr)
    return json.loads(done.stdout)


def test_the_report_total_counts_each_moment_once_and_each_stage_keeps_its_own(
    tmp_path: Path,
) -> None:
    record_fits(tmp_path / "a")
    data = cli_json("report", tmp_path, "--json")
    stages = {s["name"]: s for s in data["artifacts"][0]["stages"]}

    assert seconds(tmp_path / "a", "fit_train", "evaluate") == pytest.approx(
        data["total_seconds"], rel=1e-12
    )
    assert seconds(tmp_path / "a", "train_epoch") == pytest.approx(
        stages["train_epoch"]["total_seconds"], rel=1e-12
    )
    assert (0, 2 * EPOCHS, 2 * EPOCHS, 0) == tuple(
        stages[n]["nested_runs"] for n in ("fit_train", "train_epoch", "validate", "evaluate")
    )
    assert (4 * EPOCHS, NESTED_NOTE) == (data["nested_runs"], data["nested_note"])


def test_the_report_says_once_that_nested_stages_were_counted_inside_their_parents(
    tmp_path: Path,
) -> None:
    record_fits(tmp_path / "a")
    record_fits(tmp_path / "b")
    done = run_cli("report", tmp_path)
    expected = (
        seconds(tmp_path / "a", "fit_train", "evaluate")
        + seconds(tmp_path / "b", "fit_train", "evaluate")
    )

    assert 1 == done.stdout.count(NESTED_NOTE)
    assert f"({8 * EPOCHS} runs inside another run)" in done.stdout
    suite = next(line for line in done.stdout.splitlines() if line.startswith("suite:"))
    assert "in all" in suite
    from stagetimer._render.duration import format_duration

    assert f"{format_duration(expected)} in all" in suite


def test_the_table_total_counts_each_moment_once(tmp_path: Path) -> None:
    record_fits(tmp_path / "a")
    done = run_cli("table", tmp_path, "--csv")
    (row,) = list(csv_rows(done.stdout))
    markdown = run_cli("table", tmp_path).stdout

    assert seconds(tmp_path / "a", "fit_train", "evaluate") == pytest.approx(
        float(row["total_seconds"]), rel=1e-12
    )
    assert 1 == markdown.count(NESTED_NOTE)


def test_the_table_counts_a_nested_run_on_its_own_where_its_parents_stage_is_no_column(
    tmp_path: Path,
) -> None:
    record_fits(tmp_path / "a")
    done = run_cli("table", tmp_path, "--csv", "--stages", "train_epoch,validate")
    (row,) = list(csv_rows(done.stdout))

    # validate is inside train_epoch (a column); train_epoch's parent, the fit, is not one
    assert seconds(tmp_path / "a", "train_epoch") == pytest.approx(
        float(row["total_seconds"]), rel=1e-12
    )


def csv_rows(text: str) -> Any:
    import csv
    import io

    return csv.DictReader(io.StringIO(text))


def test_compute_sums_wall_time_and_cpu_of_the_outermost_runs_only(tmp_path: Path) -> None:
    record_fits(tmp_path / "a")
    data = cli_json("compute", tmp_path, "--json")
    (hw,) = data["hardware"]
    outer = [r for name in ("fit_train", "evaluate") for r in stored(tmp_path / "a")[name]["runs"]]
    cpu = sum(
        r["resources"]["cpu_seconds"] + r["resources"].get("children_cpu_seconds", 0.0)
        for r in outer
    )

    assert seconds(tmp_path / "a", "fit_train", "evaluate") == pytest.approx(
        hw["total"]["wall_seconds"], rel=1e-12
    )
    assert cpu / 3600.0 == pytest.approx(hw["total"]["cpu_core_hours"], rel=1e-9)
    assert (len(outer), 4 * EPOCHS, NESTED_NOTE) == (
        hw["total"]["runs"], data["nested_runs"], data["nested_note"]
    )
    assert NESTED_NOTE in run_cli("compute", tmp_path).stdout


def test_lost_counts_productive_time_once_in_all_and_each_stage_its_own(tmp_path: Path) -> None:
    record_fits(tmp_path / "a")
    data = cli_json("lost", tmp_path, "--json")
    groups = {g["stage"]: g for g in data["groups"]}

    assert seconds(tmp_path / "a", "fit_train", "evaluate") == pytest.approx(
        data["total"]["productive_seconds"], rel=1e-12
    )
    assert seconds(tmp_path / "a", "train_epoch") == pytest.approx(
        groups["train_epoch"]["productive_seconds"], rel=1e-12
    )
    assert (4 * EPOCHS, NESTED_NOTE) == (data["nested_attempts"], data["nested_note"])
    assert 1 == run_cli("lost", tmp_path).stdout.count(NESTED_NOTE)


def test_the_page_sums_each_moment_once_and_says_so_once(tmp_path: Path) -> None:
    record_fits(tmp_path / "a")
    page = tmp_path / "page.html"
    done = run_cli("report", tmp_path / "a", "--html", page)
    text = page.read_text(encoding="utf-8")
    from stagetimer._render.duration import format_duration

    assert 0 == done.returncode
    assert f"{format_duration(seconds(tmp_path / 'a', 'fit_train', 'evaluate'))} in all" in text
    assert 1 == text.count(NESTED_NOTE)


def test_runs_inside_a_parent_that_failed_count_on_their_own(tmp_path: Path) -> None:
    # the fit of seed 1 raised: its epochs' parent has no run in the file
    record_fits(tmp_path / "a", raise_in=1)
    data = cli_json("report", tmp_path, "--json")
    data_seeds = stored(tmp_path / "a")
    epochs_of_1 = sum(r["seconds"] for r in data_seeds["train_epoch"]["runs"]
                      if r["run_idx"] == 1)

    assert seconds(tmp_path / "a", "fit_train", "evaluate") + epochs_of_1 == pytest.approx(
        data["total_seconds"], rel=1e-12
    )


def test_legacy_runs_and_an_older_writers_metadata_parent_count_on_their_own(
    tmp_path: Path,
) -> None:
    record_fits(tmp_path / "a", seeds=1)

    def legacy(data: dict[str, Any]) -> None:
        for run in data["train_epoch"]["runs"]:
            run["parent"] = "fit"  # an older writer's metadata
        for run in data["validate"]["runs"]:
            del run["parent"]  # a run written before parent was recorded

    rewrite(tmp_path / "a", legacy)
    data = cli_json("report", tmp_path, "--json")

    assert seconds(tmp_path / "a", "fit_train", "evaluate", "train_epoch", "validate") == (
        pytest.approx(data["total_seconds"], rel=1e-12)
    )
    assert (0, None) == (data["nested_runs"], data["nested_note"])


def test_a_link_to_a_run_that_did_not_hold_it_counts_on_its_own(tmp_path: Path) -> None:
    record_fits(tmp_path / "a", seeds=1)

    def moved(data: dict[str, Any]) -> None:
        # an evaluation made to name the fit, though it started 5 s after the fit ended
        fit = data["fit_train"]["runs"][0]
        evaluation = data["evaluate"]["runs"][0]
        evaluation["parent"] = {"stage": "fit_train", "attempt_id": fit["attempt_id"]}
        start = datetime.datetime.fromisoformat(fit["started_at"][:-1]) + datetime.timedelta(
            seconds=fit["seconds"] + 5.0
        )
        evaluation["started_at"] = start.isoformat(timespec="milliseconds") + "Z"
        # and a validation made to name an epoch whose seconds no writer stores
        data["train_epoch"]["runs"][0]["seconds"] = -1.0

    rewrite(tmp_path / "a", moved)
    data = cli_json("report", tmp_path, "--json")
    stages = {s["name"]: s for s in data["artifacts"][0]["stages"]}
    validate_0 = stored(tmp_path / "a")["validate"]["runs"][0]["seconds"]

    assert 0 == stages["evaluate"]["nested_runs"]
    # the validation inside the epoch whose seconds no writer stores counts on its own
    # (that epoch counts for nothing: the report flags it)
    assert EPOCHS - 1 == stages["validate"]["nested_runs"]
    assert seconds(tmp_path / "a", "fit_train", "evaluate") + validate_0 == pytest.approx(
        data["total_seconds"], rel=1e-12
    )


# -- runs and their parts ------------------------------------------------------------


def test_a_seeds_epochs_are_one_run_with_parts_in_text_json_and_page(tmp_path: Path) -> None:
    record_fits(tmp_path / "a")
    text = run_cli("report", tmp_path).stdout
    data = cli_json("report", tmp_path, "--json")
    stages = {s["name"]: s for s in data["artifacts"][0]["stages"]}
    page = tmp_path / "page.html"
    run_cli("report", tmp_path / "a", "--html", page)

    assert re.search(rf"^  train_epoch +2 runs \({2 * EPOCHS} epochs\) ", text, re.MULTILINE)
    assert (2, 2 * EPOCHS, "epochs") == tuple(
        stages["train_epoch"][k] for k in ("runs", "parts", "part_name")
    )
    assert (2, None, None) == tuple(
        stages["fit_train"][k] for k in ("runs", "parts", "part_name")
    )
    # the statistics stay per record: an epoch's duration
    assert 2 * EPOCHS == len(stages["train_epoch"]["run_seconds"])
    # the suite counts runs by seed: 2 fits, 2 of epochs, 2 of validations, 2 evaluations
    assert 8 == data["runs"]
    assert "suite: 1 directory, 8 runs," in text
    shown = page.read_text(encoding="utf-8")
    assert f"<td>2 runs ({2 * EPOCHS} epochs)</td>" in shown
    assert f"train_epoch: 2 runs ({2 * EPOCHS} epochs), median" in shown  # its chart


def test_labels_that_are_not_epochs_are_parts(tmp_path: Path) -> None:
    rec = Recorder(tmp_path / "a", policy="upsert")
    for seed in range(2):
        for label in ("easy", "hard"):
            with stage("evaluate", run_idx=seed, label=label, recorder=rec):
                pass
    rec.close()
    text = run_cli("report", tmp_path).stdout

    assert re.search(r"^  evaluate +2 runs \(4 parts\) ", text, re.MULTILINE)


def test_records_that_share_a_seed_and_a_label_stay_runs_of_their_own(tmp_path: Path) -> None:
    rec = Recorder(tmp_path / "a")
    with stage("prepare", recorder=rec):
        pass
    rec.close()

    def legacy(data: dict[str, Any]) -> None:
        # an older writer appended each unindexed run
        data["prepare"]["runs"] *= 3
        data["prepare"]["total_seconds"] *= 3

    rewrite(tmp_path / "a", legacy)
    data = cli_json("report", tmp_path, "--json")
    (prepare,) = data["artifacts"][0]["stages"]

    assert (3, None, None) == (prepare["runs"], prepare["parts"], prepare["part_name"])


def test_the_time_to_go_of_a_directory_sums_only_the_stages_not_run_inside_another(
    tmp_path: Path,
) -> None:
    from stagetimer._analysis.eta import suite_eta
    from stagetimer._analysis.report import build_report
    from stagetimer._render.report_text import directory_progress, suite_line

    rec = Recorder(tmp_path / "a", policy="upsert", expected_runs=5)
    for seed in range(2):
        with stage("fit_train", run_idx=seed, recorder=rec):
            for epoch in range(2):
                with stage("train_epoch", run_idx=seed, label=f"epoch{epoch}", recorder=rec):
                    time.sleep(0.01)
    rec.close()
    (report,), _ = build_report([tmp_path])
    fit = suite_eta([report.progress["fit_train"]])
    assert fit is not None
    from stagetimer._render.duration import format_duration

    said = f"about {format_duration(fit.p50)} to go (90 %: {format_duration(fit.p90)})"
    assert said in (directory_progress(report) or "")
    assert said in suite_line([report])
