"""Stored numbers beyond a float in a stage's total: flagged by the readers, never a crash.

Found by the hostile-content property test: ``{"total_seconds": 1000…(400 digits)}``
made the report's sum check raise ``OverflowError``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stagetimer._cli import main

HUGE = "1" + "0" * 400


@pytest.mark.parametrize(
    "runs",
    ["[]", '[{"seconds": 1.0, "hardware_id": "hw-x"}]'],
    ids=["no runs", "one run"],
)
@pytest.mark.parametrize("command", [["report"], ["report", "--json"], ["table"]])
def test_a_total_beyond_a_float_is_flagged_not_raised(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], runs: str, command: list[str]
) -> None:
    (tmp_path / "timings.json").write_text(
        f'{{"a": {{"total_seconds": {HUGE}, "runs": {runs}}}}}', encoding="utf-8"
    )
    before = (tmp_path / "timings.json").read_bytes()

    status = main([*command, str(tmp_path)])

    out = capsys.readouterr().out
    assert 0 == status
    assert before == (tmp_path / "timings.json").read_bytes()
    if command == ["report"]:
        assert "total_seconds 1000" in out and "is not the sum of its runs" in out
    if "--json" in command:
        json.loads(out, parse_constant=lambda name: pytest.fail(f"{name} in --json"))


@pytest.mark.parametrize("runs_option", [[], ["--runs"]], ids=["report", "report --runs"])
def test_an_expected_runs_no_recorder_writes_gives_no_progress_line_and_no_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], runs_option: list[str]
) -> None:
    (tmp_path / "timings.json").write_text(
        f'{{"a": {{"total_seconds": 1.0, "expected_runs": {HUGE}, '
        '"runs": [{"seconds": 1.0, "hardware_id": "hw-x", "run_idx": 0}]}}',
        encoding="utf-8",
    )

    status = main(["report", *runs_option, str(tmp_path)])

    assert 0 == status
    assert "progress" not in capsys.readouterr().out


@pytest.mark.parametrize("value", [2**63, 10**400])
def test_a_recorder_refuses_an_expected_runs_beyond_what_readers_take(
    tmp_path: Path, value: int
) -> None:
    from stagetimer import Recorder

    with pytest.raises(ValueError, match="expected_runs"):
        Recorder(tmp_path, expected_runs=value)
