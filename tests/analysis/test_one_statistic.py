"""One statistic, one number: the report, the table and ``compare`` give the same mean,
median and standard deviation for the same runs, also where a naive sum rounds."""

from __future__ import annotations

from pathlib import Path

import pytest

from stagetimer import Recorder, compare, record_timing
from stagetimer._analysis.report import build_report
from stagetimer._analysis.table import build_table
from stagetimer._analysis.tree import load_tree

# 1e16 + 1 rounds back to 1e16 (the spacing of doubles there is 2): a left-to-right sum
# and an exact one (math.fsum) differ, so two definitions of the mean would too.
CASES = [[1e16, 1.0, 1.0], [0.1, 0.2, 0.3, 0.7], [5.0], [2.0, 2.0], [3.0, 1.0, 2.0, 10.0]]


@pytest.mark.parametrize("seconds", CASES)
def test_the_report_the_table_and_compare_agree(tmp_path: Path, seconds: list[float]) -> None:
    rec = Recorder(tmp_path / "a")
    for i, s in enumerate(seconds):
        record_timing("ippo_train", s, run_idx=i, recorder=rec)

    [report], _ = build_report([tmp_path / "a"])
    stats = report.stages[0]
    [cell] = build_table(load_tree(tmp_path / "a")).cells
    side = compare(tmp_path / "a", tmp_path / "a").pairs[0].stages[0].base

    assert (stats.mean_seconds, stats.median_seconds, stats.stdev_seconds) == (
        cell["ippo_train"].mean, cell["ippo_train"].median, cell["ippo_train"].stdev
    )
    assert (stats.mean_seconds, stats.median_seconds, stats.stdev_seconds) == (
        side.mean_seconds, side.median_seconds, side.stdev_seconds
    )
