"""The report on a suite: --runs, --csv, the suite line, progress, mixed metadata, values no
writer stores, escaped control characters, strict JSON, overlapping paths and links; and
the picture of a 60-directory suite (bounded pages, readable, a legend)."""

from __future__ import annotations

import csv
import io
import json
import random
from pathlib import Path
from typing import Any

import pytest
from helpers.cli import Ran, run_cli

from stagetimer import Recorder, record_timing
from stagetimer._render.duration import format_duration
from stagetimer._render.report_text import progress_line


def run(*args: str, cwd: Path | None = None) -> Ran:
    return run_cli(*args, cwd=cwd)


def record(directory: Path, stage: str, seconds: list[float], **metadata: Any) -> None:
    rec = Recorder(directory)
    for i, s in enumerate(seconds):
        record_timing(stage, s, run_idx=i, recorder=rec, **metadata)


def edit(directory: Path, change: Any) -> None:
    path = directory / "timings.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=2))


def no_constants(name: str) -> None:
    raise ValueError(f"not JSON: {name}")


# -- runs, csv, suite line ----------------------------------------------------------------------


def test_runs_lists_each_run_with_its_index_label_start_seconds_and_metadata(
    tmp_path: Path,
) -> None:
    rec = Recorder(tmp_path)
    record_timing("ippo_train", 2.5, run_idx=0, label="warm", recorder=rec, steps=10000)
    started = "2026-11-29T22:28:02.123Z"
    edit(tmp_path, lambda d: d["ippo_train"]["runs"][0].update(started_at=started))

    lines = run("report", "--runs", str(tmp_path)).stdout.splitlines()

    start = lines.index("  runs:")
    assert ["stage", "run_idx", "label", "started_at", "seconds", "metadata"] == (
        lines[start + 1].split()
    )
    assert ["ippo_train", "0", "warm", started, "2.50", "s", "steps=10000"] == (
        lines[start + 2].split()
    )


def test_without_runs_no_run_is_listed(tmp_path: Path) -> None:
    record(tmp_path, "ippo_train", [1.0])

    assert "  runs:" not in run("report", str(tmp_path)).stdout.splitlines()


def test_csv_prints_the_records(tmp_path: Path) -> None:
    record(tmp_path / "a", "ippo_train", [1.0, 2.0], steps=10)

    result = run("report", "--csv", str(tmp_path))

    assert 0 == result.returncode, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [("ippo_train", "0", "1.0", "10"), ("ippo_train", "1", "2.0", "10")] == [
        (r["stage"], r["run_idx"], r["seconds"], r["meta.steps"]) for r in rows
    ]
    assert str(tmp_path / "a") == rows[0]["artifact"]


def test_the_suite_line_counts_directories_runs_time_and_the_start_range(
    tmp_path: Path,
) -> None:
    record(tmp_path / "a", "ippo_train", [60.0, 60.0])
    record(tmp_path / "b", "ippo_train", [3600.0])
    for directory, day in (("a", "2026-11-29"), ("b", "2026-11-30")):
        edit(tmp_path / directory, lambda d, day=day: [
            run.update(started_at=f"{day}T0{i}:00:00.000Z")
            for i, run in enumerate(d["ippo_train"]["runs"])
        ])

    last = run("report", str(tmp_path)).stdout.splitlines()[-1]

    assert (
        "suite: 2 directories, 3 runs, 1 h 02 min in all (the sum of the runs), a wall span "
        "of 1 d 01 h (first start to last end), started 2026-11-29T00:00:00.000Z "
        "to 2026-11-30T00:00:00.000Z"
    ) == last


def test_the_suite_line_s_start_range_is_by_time_across_stages_in_other_forms(
    tmp_path: Path,
) -> None:
    # 05:00 UTC in the writer's form, then 01:00 at UTC-5 (06:00 UTC) in another's: the
    # strings sort the other way round.
    record(tmp_path / "a", "ippo_train", [1.0])
    record(tmp_path / "b", "ippo_train", [1.0])
    for directory, start in (("a", "2026-11-29T05:00:00.000Z"), ("b", "2026-11-29T01:00:00-05:00")):
        edit(tmp_path / directory, lambda d, start=start: d["ippo_train"]["runs"][0].update(
            started_at=start
        ))

    last = run("report", str(tmp_path)).stdout.splitlines()[-1]

    assert last.endswith(
        "a wall span of 1 h 00 min (first start to last end), "
        "started 2026-11-29T05:00:00.000Z to 2026-11-29T01:00:00-05:00"
    ), last


def test_runs_side_by_side_show_a_wall_span_shorter_than_their_sum(tmp_path: Path) -> None:
    # Four seeds of 10 s each, started 1 s apart: 40 s in all, 13 s from first start to
    # last end.
    record(tmp_path / "a", "ippo_train", [10.0, 10.0])
    record(tmp_path / "b", "ippo_train", [10.0, 10.0])
    for directory, first in (("a", 0), ("b", 2)):
        edit(tmp_path / directory, lambda d, first=first: [
            run.update(started_at=f"2026-11-29T00:00:0{first + i}.000Z")
            for i, run in enumerate(d["ippo_train"]["runs"])
        ])

    last = run("report", str(tmp_path)).stdout.splitlines()[-1]

    assert last.startswith(
        "suite: 2 directories, 4 runs, 40.0 s in all (the sum of the runs), a wall span of "
        "13.0 s (first start to last end)"
    ), last


def test_the_wall_span_ends_with_a_long_run_that_started_earlier(tmp_path: Path) -> None:
    # 100 s from 00:00:00, then 1 s from 00:00:50: the suite ends at 00:01:40.
    record(tmp_path, "ippo_train", [100.0, 1.0])
    edit(tmp_path, lambda d: [
        run.update(started_at=start)
        for run, start in zip(d["ippo_train"]["runs"],
                              ["2026-11-29T00:00:00.000Z", "2026-11-29T00:00:50.000Z"],
                              strict=True)
    ])

    last = run("report", str(tmp_path)).stdout.splitlines()[-1]

    assert "a wall span of 1 min 40 s (first start to last end)" in last, last


# -- progress -----------------------------------------------------------------------------------


def test_a_continuation_shows_no_progress_even_with_expected_runs(tmp_path: Path) -> None:
    # Only the seeds that were interrupted run ippo_train_auto_resume: 2 of 4 is finished.
    record(tmp_path, "ippo_train", [5.0, 5.0, 5.0, 5.0])
    record(tmp_path, "ippo_train_auto_resume", [2.0, 2.0])
    edit(tmp_path, lambda d: [d[n].update(expected_runs=4) for n in d if n.startswith("ippo")])

    lines = run("report", str(tmp_path)).stdout.splitlines()

    assert ["  progress: ippo_train 4 of 4 seeds, done"] == [
        line for line in lines if "progress" in line or "to go" in line
    ]


def test_one_progress_line_per_directory_over_its_stages(tmp_path: Path) -> None:
    record(tmp_path, "ippo_train", [100.0, 100.0])
    record(tmp_path, "checkpoint_save", [1.0, 1.0, 1.0])
    record(tmp_path, "nashconv", [10.0, 10.0])
    edit(tmp_path, lambda d: [d[n].update(expected_runs=4) for n in d])

    lines = [line for line in run("report", str(tmp_path)).stdout.splitlines()
             if line.startswith("  progress")]

    # record_timing stores no start: no concurrency is seen, the seeds left run one at a
    # time, and each stage's durations are all alike (no spread: the bound is the median):
    # (2 x 100 s) + (1 x 1 s) + (2 x 10 s) = 221 s to go
    assert [
        "  progress: 3 stages, 2 of 4 seeds (ippo_train 2, checkpoint_save 3, nashconv 2), "
        "about 3 min 41 s to go (90 %: 3 min 41 s)"
    ] == lines



def test_progress_says_seeds_done_and_time_to_go_as_watch_does(tmp_path: Path) -> None:
    """The report's progress line and its suite line give the estimate and the counts
    ``stagetimer watch`` gives for the same files."""
    record(tmp_path, "ippo_train", [3000.0, 2600.0, 2700.0])
    edit(tmp_path, lambda d: d["ippo_train"].update(expected_runs=10))

    lines = run("report", str(tmp_path)).stdout.splitlines()
    [watched] = [json.loads(line) for line in run(
        "watch", "--once", "--json", str(tmp_path)).stdout.splitlines()]

    [stage] = watched["directories"][0]["stages"]
    assert (stage["done"], stage["pending"]) == (3, 7)
    to_go = (f"about {format_duration(stage['eta_seconds']['p50'])} to go "
             f"(90 %: {format_duration(stage['eta_seconds']['p90'])})")
    assert f"  progress: ippo_train 3 of 10 seeds, {to_go}" in lines
    assert lines[-1].endswith(f"; 1 stage in progress, {to_go}")
    # 7 seeds left, one at a time (record_timing stores no start: no concurrency seen)
    assert 6 * 2600 <= stage["eta_seconds"]["p50"] <= stage["eta_seconds"]["p90"] <= 7 * 3000


def test_a_finished_stage_says_done(tmp_path: Path) -> None:
    record(tmp_path, "ippo_train", [1.0, 1.0])
    edit(tmp_path, lambda d: d["ippo_train"].update(expected_runs=2))

    assert "  progress: ippo_train 2 of 2 seeds, done" in run(
        "report", str(tmp_path)
    ).stdout.splitlines()


def test_files_without_expected_runs_show_no_progress(tmp_path: Path) -> None:
    record(tmp_path, "ippo_train", [1.0])

    assert not any("progress" in line for line in run("report", str(tmp_path)).stdout.splitlines())


def test_progress_line_for_a_stats_object_without_expected_runs_is_none(tmp_path: Path) -> None:
    from stagetimer._analysis.report import build_report

    record(tmp_path, "ippo_train", [1.0])
    [report], _ = build_report([tmp_path])

    assert None is progress_line(report.stages[0])


def test_expected_runs_from_the_recorder_drive_the_progress_line(tmp_path: Path) -> None:
    rec = Recorder(tmp_path, expected_runs=4)
    record_timing("ippo_train", 10.0, run_idx=0, recorder=rec)

    assert "  progress: ippo_train 1 of 4 seeds, about 30.0 s to go (90 %: 30.0 s)" in (
        run("report", str(tmp_path)).stdout.splitlines()
    )


# -- warnings -----------------------------------------------------------------------------------


def test_runs_with_different_metadata_values_are_warned_about(tmp_path: Path) -> None:
    rec = Recorder(tmp_path)
    for i, steps in enumerate((10000, 10000, 2000)):
        record_timing("ippo_train", 1.0, run_idx=i, recorder=rec, steps=steps)

    assert (
        "  warning: stage ippo_train: its runs differ in metadata (steps=10000 in 2, "
        "steps=2000 in 1 runs); its mean mixes unlike runs"
    ) in run("report", str(tmp_path)).stdout.splitlines()


def test_a_key_that_differs_in_every_run_is_not_a_mixture(tmp_path: Path) -> None:
    rec = Recorder(tmp_path)
    for i in range(3):
        record_timing("ippo_train", 1.0, run_idx=i, recorder=rec, seed=100 + i, steps=10)

    assert not any("differ in metadata" in line
                   for line in run("report", str(tmp_path)).stdout.splitlines())


@pytest.mark.parametrize(
    ("values", "differ"),
    [((1, 1.0), True), ((1, True), True), ((0.0, -0.0), True), (({"a": 1}, {"a": 1.0}), True),
     (("fork", "fork"), False), ((float("nan"), float("nan")), False)],
    ids=["int-float", "int-bool", "signed-zero", "nested", "same", "nan"],
)
def test_report_warning_and_compare_agree_on_which_metadata_values_differ(
    values: tuple[Any, Any], differ: bool
) -> None:
    from stagetimer._analysis.compare.metadata import metadata_differences
    from stagetimer._analysis.report_warnings import metadata_warning

    runs = [{"seconds": 1.0, "bs": value} for value in values]
    warned = metadata_warning("s", runs, {"seconds", "bs"}) is not None
    base, new = {"runs": runs[:1]}, {"runs": runs[1:]}
    assert (differ, differ) == (warned, bool(metadata_differences([("s", base, new)])))


@pytest.mark.parametrize(
    ("change", "flag"),
    [
        (lambda d: d["s"]["runs"][1].update(seconds=-5000000), "seconds -5000000 is negative"),
        (lambda d: d["s"]["runs"][1].update(seconds=float("nan")),
         "seconds nan is not a finite number"),
        (lambda d: d["s"]["runs"][1].update(run_idx=-3), "run_idx -3 is negative"),
        (lambda d: d["s"].update(total_seconds=999), "total_seconds 999 is not the sum"),
    ],
    ids=["negative-seconds", "nan-seconds", "negative-run-idx", "wrong-total"],
)
def test_values_no_writer_stores_are_flagged(tmp_path: Path, change: Any, flag: str) -> None:
    record(tmp_path, "s", [0.5, 0.5])
    edit(tmp_path, change)

    result = run("report", str(tmp_path))

    assert 0 == result.returncode, result.stderr
    assert [flag] == [flag for line in result.stdout.splitlines()
                      if line.startswith("  warning: stage s") and flag in line]


def _two_ranks(directory: Path) -> None:
    """Stage ``s``: seed 0 run by two ranks, seed 1 by one, as a distributed launch's
    ranks store them (each its own run with ``rank`` and ``world_size``)."""
    record(directory, "s", [0.5, 0.7, 0.5])

    def ranked(data: dict[str, Any]) -> None:
        for run, (run_idx, rank) in zip(data["s"]["runs"], ((0, 0), (0, 1), (1, 0)), strict=True):
            run.update(run_idx=run_idx, rank=rank, world_size=2)

    edit(directory, ranked)


@pytest.mark.parametrize(
    ("change", "flag"),
    [
        # the faster rank of seed 0: not the run its seed is counted by
        (lambda d: d["s"]["runs"][0].update(seconds=-5), "seconds -5 is negative"),
        (lambda d: d["s"]["runs"][0].update(run_idx=-3), "run_idx -3 is negative"),
        (lambda d: d["s"].update(total_seconds=1.2), "total_seconds 1.2 is not the sum"),
    ],
    ids=["negative-seconds", "negative-run-idx", "total-of-the-slowest-ranks-only"],
)
def test_values_no_writer_stores_are_flagged_in_every_rank_s_run(
    tmp_path: Path, change: Any, flag: str
) -> None:
    _two_ranks(tmp_path)
    edit(tmp_path, change)

    result = run("report", str(tmp_path))

    assert 0 == result.returncode, result.stderr
    assert [flag] == [flag for line in result.stdout.splitlines()
                      if line.startswith("  warning: stage s") and flag in line]


def test_a_stage_run_by_ranks_with_its_stored_total_is_not_flagged(tmp_path: Path) -> None:
    _two_ranks(tmp_path)

    result = run("report", str(tmp_path))

    assert 0 == result.returncode, result.stderr
    assert "warning" not in result.stdout


def test_flagged_seconds_are_left_out_of_the_statistics(tmp_path: Path) -> None:
    record(tmp_path, "s", [1.0, 3.0, 2.0])
    edit(tmp_path, lambda d: d["s"]["runs"][1].update(seconds=-5000000))

    stage = json.loads(run("report", "--json", str(tmp_path)).stdout)["artifacts"][0][
        "stages"
    ][0]

    assert (3, 3.0, 1.5, 1.0, 2.0) == (
        stage["runs"], stage["total_seconds"], stage["mean_seconds"], stage["min_seconds"],
        stage["max_seconds"],
    )


def test_json_is_strict_even_with_non_finite_values(tmp_path: Path) -> None:
    record(tmp_path, "s", [1.0, 2.0], score=1.0)
    edit(tmp_path, lambda d: (d["s"]["runs"][0].update(seconds=float("inf"), score=float("nan"))))

    result = run("report", "--json", str(tmp_path))

    data = json.loads(result.stdout, parse_constant=no_constants)
    details = data["artifacts"][0]["stages"][0]["run_details"]
    assert [(None, None), (2.0, 1.0)] == [(d["seconds"], d["metadata"]["score"]) for d in details]


def test_json_gives_run_details(tmp_path: Path) -> None:
    rec = Recorder(tmp_path)
    record_timing("ippo_train", 1.0, run_idx=0, label="a", recorder=rec, steps=5)

    [detail] = json.loads(run("report", "--json", str(tmp_path)).stdout)["artifacts"][0][
        "stages"
    ][0]["run_details"]

    assert (0, "a", 1.0, {"steps": 5}) == (
        detail["run_idx"], detail["label"], detail["seconds"], detail["metadata"]
    )


ESCAPES = "\x1b[2J\x1b]0;owned\x07\u202e\x9b"


def test_control_characters_from_files_are_escaped_in_the_text_report(tmp_path: Path) -> None:
    record(tmp_path, "s", [1.0], note="x")
    edit(tmp_path, lambda d: d.update({f"s{ESCAPES}": d.pop("s")}) or
         d[f"s{ESCAPES}"]["runs"][0].update(note=ESCAPES))

    out = run("report", "--runs", str(tmp_path)).stdout

    assert [] == [c for c in "\x1b\x07\u202e\x9b" if c in out]
    assert "s\\x1b[2J\\x1b]0;owned\\x07\\u202e\\x9b" in out


def test_control_characters_are_json_escapes_in_json(tmp_path: Path) -> None:
    record(tmp_path, "s", [1.0])
    edit(tmp_path, lambda d: d.update({f"s{ESCAPES}": d.pop("s")}))

    out = run("report", "--json", str(tmp_path)).stdout

    assert [] == [c for c in "\x1b\x07\u202e\x9b" if c in out]
    assert f"s{ESCAPES}" == json.loads(out)["artifacts"][0]["stages"][0]["name"]


# -- paths --------------------------------------------------------------------------------------


def test_a_directory_given_twice_is_reported_once_with_exit_0(tmp_path: Path) -> None:
    record(tmp_path / "d", "s", [1.0])

    result = run("report", "--json", str(tmp_path / "d"), str(tmp_path / "d"))

    assert 0 == result.returncode, result.stderr
    assert 1 == len(json.loads(result.stdout)["artifacts"])


def test_overlapping_paths_report_each_directory_once_with_exit_0(tmp_path: Path) -> None:
    record(tmp_path / "exp" / "pursuit" / "ippo", "s", [1.0])
    record(tmp_path / "exp" / "coins" / "ippo", "s", [1.0])

    result = run("report", "--json", str(tmp_path / "exp"), str(tmp_path / "exp" / "pursuit"))

    assert (0, "") == (result.returncode, result.stderr)
    assert 2 == len(json.loads(result.stdout)["artifacts"])


def test_a_symlinked_artifact_directory_is_reported(tmp_path: Path) -> None:
    record(tmp_path / "store" / "ippo", "s", [1.0])
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "ippo").symlink_to(tmp_path / "store" / "ippo")

    result = run("report", "--json", str(tmp_path / "suite"))

    assert 0 == result.returncode, result.stderr
    assert [str(tmp_path / "suite" / "ippo")] == [
        a["path"] for a in json.loads(result.stdout)["artifacts"]
    ]


def test_a_symlink_cycle_terminates(tmp_path: Path) -> None:
    record(tmp_path / "exp" / "a", "s", [1.0])
    (tmp_path / "exp" / "a" / "up").symlink_to(tmp_path / "exp")

    result = run("report", "--json", str(tmp_path / "exp"))  # a timeout fails the test

    assert 0 == result.returncode, result.stderr
    assert 1 == len(json.loads(result.stdout)["artifacts"])


# -- the picture --------------------------------------------------------------------------------


def make_suite(root: Path, directories: int = 60) -> None:
    """``directories`` artifact directories: 4 environments x 15 algorithms, 5-20 seeds,
    checkpoint, NashConv, some auto-resumed, alpharank; written as the recorder would."""
    rnd = random.Random(7)
    envs = ["gridworlds/pursuit/classic_3", "gridworlds/coins/own_coin_first/2",
            "gridworlds/harvest/small", "mpe/simple_tag"]
    algos = ["ippo", "mappo", "iql", "iql_cer", "vdn", "qmix", "coma", "maddpg", "psro",
             "nfsp", "cfr", "deep_cfr", "a2c", "ppo", "dqn"]
    for k in range(directories):
        env, algo = envs[k // len(algos) % len(envs)], algos[k % len(algos)]
        seeds = rnd.choice([5, 10, 20])
        data: dict[str, Any] = {}

        def put(
            name: str, values: list[float], indices: list[int], data: dict[str, Any] = data
        ) -> None:
            runs = [{"seconds": v, "hardware_id": "hw-0", "run_idx": i}
                    for v, i in zip(values, indices, strict=True)]
            data[name] = {"total_seconds": sum(v for v in values), "runs": runs}

        base = 600.0 * (1 + k % len(algos))
        put(f"{algo}_train", [base * rnd.uniform(0.8, 1.2) for _ in range(seeds)],
            list(range(seeds)))
        put("checkpoint_save", [rnd.uniform(0.5, 3) for _ in range(seeds)], list(range(seeds)))
        put("nashconv", [rnd.uniform(20, 200) for _ in range(seeds)], list(range(seeds)))
        resumed = [i for i in range(seeds) if rnd.random() < 0.3]
        if resumed:
            put(f"{algo}_train_auto_resume", [base * 0.3 for _ in resumed], resumed)
        data["alpharank"] = {"total_seconds": 12.0, "runs": [{"seconds": 12.0,
                                                               "hardware_id": "hw-0"}]}
        directory = root / env / f"{algo}-{k // (len(algos) * len(envs))}"
        directory.mkdir(parents=True)
        (directory / "timings.json").write_text(json.dumps(data, indent=2))


@pytest.fixture(scope="module")
def suite60(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("suite60") / "exp"
    make_suite(root)
    return root


def test_a_60_directory_picture_is_split_into_pages_of_bounded_size(
    suite60: Path, tmp_path: Path
) -> None:
    image = pytest.importorskip("matplotlib.image")

    result = run("report", str(suite60), "--plot", str(tmp_path / "suite.png"))

    assert 0 == result.returncode, result.stderr
    pages = sorted(tmp_path.glob("suite-*.png"))
    assert [tmp_path / "suite-1.png", tmp_path / "suite-2.png"] == pages
    assert not (tmp_path / "suite.png").exists()
    for page in pages:
        height, width = image.imread(page).shape[:2]
        assert height <= 1400 and width <= 2000, (page, width, height)


def test_the_svg_picture_has_a_legend_and_the_families(suite60: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")

    run("report", str(suite60), "--plot", str(tmp_path / "suite.svg"))

    text = (tmp_path / "suite-1.svg").read_text()
    labels = ["mean per seed", "auto-resume continuation", "one seed", "alpharank",
              "training", "checkpoint_save", "nashconv", "other stages"]
    assert labels == [label for label in labels if f">{label}<" in text]


@pytest.mark.parametrize(("slow", "scale"), [(600.0, "log"), (50.0, "linear")])
def test_a_span_past_100x_is_drawn_on_a_log_scale(
    tmp_path: Path, slow: float, scale: str
) -> None:
    pytest.importorskip("matplotlib")
    from stagetimer._analysis.report import build_report
    from stagetimer._render import report_plot as _plot

    record(tmp_path / "exp" / "fast", "fast_train", [1.0, 1.2])
    record(tmp_path / "exp" / "slow", "slow_train", [slow, slow])
    reports, _ = build_report([tmp_path / "exp"])
    rows = _plot._rows(reports)

    fig = _plot._page(_plot.load_pyplot(), rows, _plot._layout(rows)[0], "t", {})

    assert [scale] == [ax.get_xscale() for ax in fig.axes if ax.get_title(loc="left") == "training"]


def test_an_unwritable_plot_path_is_refused_before_any_work(tmp_path: Path) -> None:
    record(tmp_path / "d", "s", [1.0])

    result = run("report", str(tmp_path / "d"), "--plot", "/nonexistent/dir/x.png")

    assert (2, "") == (result.returncode, result.stdout)
    assert "/nonexistent/dir does not exist" in result.stderr


def test_a_problem_line_escapes_control_characters_in_the_path(tmp_path: Path) -> None:
    bad = tmp_path / "bad\x1b[2J"
    bad.mkdir()
    (bad / "timings.json").write_text("{")

    result = run("report", str(tmp_path))

    assert (1, "\x1b" in result.stderr) == (result.returncode, False)
    assert "bad\\x1b[2J" in result.stderr


def test_the_html_page_gives_the_progress_line_the_text_report_gives(tmp_path: Path) -> None:
    record(tmp_path / "a", "ippo_train", [30.0, 20.0, 25.0])
    edit(tmp_path / "a", lambda d: d["ippo_train"].update(expected_runs=8))
    page = tmp_path / "page.html"

    text = run("report", str(tmp_path)).stdout.splitlines()
    run("report", str(tmp_path), "--html", str(page))

    [line] = [t for t in text if t.startswith("  progress: ")]
    assert line.removeprefix("  progress: ") in page.read_text()
    assert "to go (90 %: " in line
