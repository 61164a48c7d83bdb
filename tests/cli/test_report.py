"""``stagetimer report``: run as a person would (the installed script) on directories
recorded with the real API, plus hand-written sidecars for the cases a recorder
cannot produce here (a second machine, a legacy writer, a corrupt file)."""

from __future__ import annotations

import json
import math
import os
import statistics
from pathlib import Path
from typing import Any

import attrs
import pytest
from helpers.cli import Ran, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from stagetimer import Recorder, capture_hardware, record_timing, stage
from stagetimer._analysis.report import build_report
from stagetimer._render.report_json import report_dict
from stagetimer.hardware import (
    CpuInfo,
    Hardware,
    MemoryInfo,
    description,
    format_differences,
    hardware_differences,
    hardware_id,
)
from stagetimer.hardware._show import summary_line


def run(*args: str, cwd: Path | None = None) -> Ran:
    return run_cli(*args, cwd=cwd)


def record(directory: Path, stage_name: str, seconds: list[float]) -> None:
    rec = Recorder(directory)
    for i, s in enumerate(seconds):
        record_timing(stage_name, s, run_idx=i, recorder=rec)


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` (hidden ones too) with its bytes: to prove nothing was written."""
    return {
        str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None)
        for p in sorted(root.rglob("*"))
    }


def add_hardware(directory: Path, hw: Hardware) -> str:
    """Hand-write another machine's description into the hardware sidecar; return its id."""
    path = directory / "timings_hardware.json"
    data = json.loads(path.read_text())
    hw_id = hardware_id(hw)
    data["hardware"][hw_id] = description(hw)
    path.write_text(json.dumps(data, indent=2))
    return hw_id


def point_run_at(directory: Path, stage_name: str, run: int, hw_id: str) -> None:
    path = directory / "timings.json"
    data = json.loads(path.read_text())
    data[stage_name]["runs"][run]["hardware_id"] = hw_id
    path.write_text(json.dumps(data, indent=2))


OTHER_MACHINE = Hardware(
    host="other-node",
    cpu=CpuInfo(affinity=(0, 1, 2, 3, 4, 5, 6, 7), logical_cpus=8, physical_cores=4,
                model_name="Other CPU", quota_cpus=2.0, node_logical_cpus=192),
    memory=MemoryInfo(limit_bytes=1024**3, source="cgroup_v2", node_total_bytes=16 * 1024**3),
)


def test_text_report_lists_each_recorded_stage_of_each_directory(tmp_path: Path) -> None:
    ippo = tmp_path / "exports" / "pursuit" / "classic_3" / "ippo"
    with Recorder(ippo):
        for i in range(2):
            with stage("ippo_train", run_idx=i):
                pass
            with stage("checkpoint_save", run_idx=i):
                pass
    record(tmp_path / "exports" / "coins" / "iql", "iql_train", [1.0])

    result = run("report", str(tmp_path / "exports"))

    assert 0 == result.returncode, result.stderr
    assert "" == result.stderr
    lines = result.stdout.splitlines()
    assert str(ippo) in lines
    assert str(tmp_path / "exports" / "coins" / "iql") in lines
    stage_rows = [line.split()[:2] for line in lines if line.startswith("  ") and "_" in line]
    assert [["iql_train", "1"], ["ippo_train", "2"], ["checkpoint_save", "2"]] == [
        row for row in stage_rows if row[0] in ("iql_train", "ippo_train", "checkpoint_save")
    ]


def test_text_report_shows_total_mean_median_sd_min_max_with_units(tmp_path: Path) -> None:
    record(tmp_path, "nashconv", [1.0, 2.0, 4.5])

    result = run("report", str(tmp_path))

    row = next(line for line in result.stdout.splitlines() if line.strip().startswith("nashconv"))
    # total, mean, median, sample sd (sqrt(3.25) = 1.80), min, max
    assert ["nashconv", "3", "7.50", "s", "2.50", "s", "2.00", "s", "1.80", "s", "1.00", "s",
            "4.50", "s"] == row.split()


def test_text_report_names_the_hardware_in_one_summary_line(tmp_path: Path) -> None:
    record(tmp_path, "ippo_train", [1.0])
    here = capture_hardware()

    result = run("report", str(tmp_path))

    assert f"    {hardware_id(here)}: {summary_line(here)}" in result.stdout.splitlines()


def test_json_report_has_the_documented_shape_and_stats(tmp_path: Path) -> None:
    record(tmp_path, "ippo_train", [1.0, 2.0, 4.5])
    record_timing("alpharank", 0.25, recorder=Recorder(tmp_path))

    result = run("report", "--json", str(tmp_path))

    assert 0 == result.returncode
    artifact = json.loads(result.stdout)["artifacts"][0]
    assert str(tmp_path) == artifact["path"]
    assert {} == artifact["legacy_metadata"]
    expected = [
        {"name": "ippo_train", "runs": 3, "total_seconds": 7.5, "mean_seconds": 2.5,
         "min_seconds": 1.0, "max_seconds": 4.5, "hardware_ids": [hardware_id(capture_hardware())]},
        {"name": "alpharank", "runs": 1, "total_seconds": 0.25, "mean_seconds": 0.25,
         "min_seconds": 0.25, "max_seconds": 0.25,
         "hardware_ids": [hardware_id(capture_hardware())]},
    ]
    fixed = ("name", "runs", "total_seconds", "mean_seconds", "min_seconds", "max_seconds",
             "hardware_ids")
    assert expected == [{k: s[k] for k in fixed} for s in artifact["stages"]]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=1e6, allow_nan=False), min_size=1, max_size=8))
def test_stage_stats_match_the_statistics_module(
    tmp_path_factory: Any, seconds: list[float]
) -> None:
    directory = tmp_path_factory.mktemp("stats")
    record(directory, "ippo_train", seconds)

    reports, problems = build_report([str(directory)])

    stats = report_dict(reports)["artifacts"][0]["stages"][0]
    assert [] == problems
    assert math.isclose(math.fsum(seconds), stats["total_seconds"], abs_tol=1e-9)
    assert math.isclose(statistics.fmean(seconds), stats["mean_seconds"], abs_tol=1e-9)
    assert (min(seconds), max(seconds)) == (stats["min_seconds"], stats["max_seconds"])
    assert seconds == stats["run_seconds"]


def test_runs_on_two_machines_are_flagged_as_not_comparable(tmp_path: Path) -> None:
    record(tmp_path, "ippo_train", [1.0, 2.0])
    other = add_hardware(tmp_path, OTHER_MACHINE)
    point_run_at(tmp_path, "ippo_train", 1, other)

    result = run("report", str(tmp_path))

    here = hardware_id(capture_hardware())
    differences = format_differences(hardware_differences(capture_hardware(), OTHER_MACHINE))
    assert (
        f"  warning: stage ippo_train: its 2 runs were measured on hardware that differs "
        f"({here} vs {other}: {differences}); their times are not comparable"
    ) in result.stdout.splitlines()
    assert f"    {other}: {summary_line(OTHER_MACHINE)}" in result.stdout.splitlines()


def test_runs_on_descriptions_that_differ_only_in_host_are_not_flagged(tmp_path: Path) -> None:
    record(tmp_path, "ippo_train", [1.0, 2.0])
    renamed = attrs.evolve(capture_hardware(), host="another-name-same-machine")
    other = add_hardware(tmp_path, renamed)
    point_run_at(tmp_path, "ippo_train", 1, other)

    result = run("report", str(tmp_path))

    assert [] == [line for line in result.stdout.splitlines() if "ippo_train: its" in line]


def test_allocation_smaller_than_the_node_is_flagged(tmp_path: Path) -> None:
    record(tmp_path, "ippo_train", [1.0])
    other = add_hardware(tmp_path, OTHER_MACHINE)
    point_run_at(tmp_path, "ippo_train", 0, other)

    result = run("report", str(tmp_path))

    assert (
        f"  warning: {other}: the allocation was smaller than the node: ran on 8 of 192 "
        "CPUs, a CPU quota of 2 of the 8 CPUs it may run on, 1 GiB of the node's 16 GiB "
        "memory"
    ) in result.stdout.splitlines()


def test_a_run_pointing_at_an_undescribed_id_is_flagged(tmp_path: Path) -> None:
    record(tmp_path, "ippo_train", [1.0])
    point_run_at(tmp_path, "ippo_train", 0, "hw-00000000000000ff")

    result = run("report", str(tmp_path))

    assert (
        "  warning: hw-00000000000000ff: 1 run(s) refer to it but timings_hardware.json "
        "does not describe it"
    ) in result.stdout.splitlines()


LEGACY = {
    "system_ram_gb": 64,
    "gpu_ram_gb": 24,
    "ippo_train": {
        "total_seconds": 3.0,
        "runs": [
            {"seconds": 1.0, "run_idx": 0, "system_ram_gb": 32},
            {"seconds": 2.0, "run_idx": 1},
        ],
    },
}


def test_legacy_metadata_has_its_own_section_attributed_to_the_writer(tmp_path: Path) -> None:
    (tmp_path / "timings.json").write_text(json.dumps(LEGACY))

    result = run("report", str(tmp_path))

    assert 0 == result.returncode, result.stderr
    lines = result.stdout.splitlines()
    start = lines.index(
        "  legacy metadata, recorded by the writer (about the machine that wrote the file):"
    )
    assert [
        "    file: system_ram_gb=64, gpu_ram_gb=24",
        "    ippo_train run 0: system_ram_gb=32",
    ] == lines[start + 1 : start + 3]
    assert "" == lines[start + 3]  # then the suite's line
    assert "    2 run(s) without a hardware_id (legacy): hardware unknown" in lines


def test_legacy_metadata_is_never_shown_as_this_machine(tmp_path: Path) -> None:
    (tmp_path / "timings.json").write_text(json.dumps(LEGACY))

    result = run("report", str(tmp_path))

    assert summary_line(capture_hardware()) not in result.stdout
    assert hardware_id(capture_hardware()) not in result.stdout


def test_json_report_carries_legacy_metadata(tmp_path: Path) -> None:
    (tmp_path / "timings.json").write_text(json.dumps(LEGACY))

    result = run("report", "--json", str(tmp_path))

    legacy = json.loads(result.stdout)["artifacts"][0]["legacy_metadata"]
    assert {
        "top_level": {"system_ram_gb": 64, "gpu_ram_gb": 24},
        "runs": [{"stage": "ippo_train", "run_idx": 0, "label": None, "system_ram_gb": 32}],
    } == legacy


def test_missing_path_exits_1_with_one_line_and_reports_the_rest(tmp_path: Path) -> None:
    record(tmp_path / "good", "ippo_train", [1.0])
    missing = tmp_path / "nowhere"

    result = run("report", str(missing), str(tmp_path / "good"))

    assert 1 == result.returncode
    assert [f"stagetimer report: {missing}: no such file or directory"] == (
        result.stderr.splitlines()
    )
    assert str(tmp_path / "good") in result.stdout.splitlines()


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b'{"ippo_train": {"total_seconds": 1.0, "runs": [', "does not parse as JSON"),
        (b"[1, 2, 3]", "top level is an array, expected an object"),
        (b'{"ippo_train": {"runs": [{"seconds": "fast"}]}}', "has 'seconds' a string"),
    ],
)
def test_corrupt_timings_exit_1_name_the_file_and_the_other_dirs_are_reported(
    tmp_path: Path, content: bytes, problem: str
) -> None:
    record(tmp_path / "a_good", "ippo_train", [1.0])
    record(tmp_path / "b_bad", "ippo_train", [1.0])
    bad = tmp_path / "b_bad" / "timings.json"
    bad.write_bytes(content)

    result = run("report", str(tmp_path))

    assert 1 == result.returncode
    [line] = result.stderr.splitlines()
    assert line.startswith(f"stagetimer report: {bad}: ")
    assert problem in line
    assert "Traceback" not in result.stderr
    assert str(tmp_path / "a_good") in result.stdout.splitlines()
    assert str(tmp_path / "b_bad") not in result.stdout.splitlines()


def test_newer_hardware_schema_is_named_and_its_stages_still_reported(tmp_path: Path) -> None:
    record(tmp_path, "ippo_train", [1.0])
    sidecar = tmp_path / "timings_hardware.json"
    sidecar.write_text(json.dumps({"schema_version": 2, "hardware": {}}))

    result = run("report", str(tmp_path))

    assert 1 == result.returncode
    [line] = result.stderr.splitlines()
    assert line.startswith(f"stagetimer report: {sidecar}: schema_version 2 is newer than 1")
    assert any(row.split()[:2] == ["ippo_train", "1"] for row in result.stdout.splitlines())


def test_report_never_writes_not_even_a_lock_file(tmp_path: Path) -> None:
    record(tmp_path / "good", "ippo_train", [1.0, 2.0])
    record(tmp_path / "bad", "ippo_train", [1.0])
    (tmp_path / "bad" / "timings.json").write_bytes(b"{not json")
    for lock in tmp_path.rglob("*.lock"):  # left by the recorder; the report must add none
        lock.unlink()
    before = snapshot(tmp_path)

    text = run("report", str(tmp_path))
    as_json = run("report", "--json", str(tmp_path))

    assert (1, 1) == (text.returncode, as_json.returncode)
    assert before == snapshot(tmp_path)


def test_path_without_any_timings_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()

    result = run("report", str(tmp_path / "empty"))

    assert 1 == result.returncode
    assert [f"stagetimer report: {tmp_path / 'empty'}: no timings.json at or under this path"] == (
        result.stderr.splitlines()
    )


def test_a_timings_file_path_reports_its_directory(tmp_path: Path) -> None:
    record(tmp_path, "ippo_train", [1.0])

    result = run("report", "--json", str(tmp_path / "timings.json"))

    assert [str(tmp_path)] == [a["path"] for a in json.loads(result.stdout)["artifacts"]]


def test_a_directory_given_twice_is_reported_once(tmp_path: Path) -> None:
    record(tmp_path / "ippo", "ippo_train", [1.0])

    result = run("report", "--json", str(tmp_path), str(tmp_path / "ippo"))

    assert 1 == len(json.loads(result.stdout)["artifacts"])


def test_relative_paths_are_reported_as_given(tmp_path: Path) -> None:
    record(tmp_path / "exports" / "ippo", "ippo_train", [1.0])

    result = run("report", "--json", "exports", cwd=tmp_path)

    assert [os.path.join("exports", "ippo")] == [
        a["path"] for a in json.loads(result.stdout)["artifacts"]
    ]
