"""The model of ``stagetimer table``: one row per artifact directory, a column per stage.

Rows are named by the directories' paths relative to what they all share; when
every path has the same depth, each level is a column of its own (a suite reads as
environment | scenario | algorithm), and levels equal in every row are left out.
There is a column per stage, in the order stages were first seen, each cell the
mean ± sample standard deviation and the number of runs (``--median``: the median
and the quartiles), in one unit per column; and a total per row. Only durations a
writer could have stored enter (see ``valid_durations``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import attrs

from stagetimer._analysis.raw import raw_seconds, raw_stages
from stagetimer._analysis.seeds import by_seed
from stagetimer._analysis.stats import Summary, summarise
from stagetimer._analysis.tree import Artifact, relative_paths
from stagetimer._format import TRAINING_SUFFIX
from stagetimer._store.rules import valid_durations

__all__ = ["SuiteTable", "build_table"]


@attrs.frozen
class SuiteTable:
    """What every format of the table is drawn from."""

    #: the names of the label columns and, per row, its labels
    label_columns: tuple[str, ...]
    labels: tuple[tuple[str, ...], ...]
    paths: tuple[str, ...]
    stages: tuple[str, ...]
    #: per row, stage -> summary (absent: the directory has no such stage)
    cells: tuple[dict[str, Summary], ...]
    totals: tuple[float, ...]
    median: bool


def _labels(artifacts: Sequence[Artifact]) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    relative = relative_paths([a.path for a in artifacts])
    split = [tuple(r.split("/")) for r in relative]
    if len({len(s) for s in split}) != 1 or len(split[0]) == 1:
        return ("directory",), [(r,) for r in relative]
    depth = len(split[0])
    varying = [i for i in range(depth) if len({s[i] for s in split}) > 1] or [depth - 1]
    names = [f"level {i + 1}" for i in varying]
    last = varying[-1]
    if last == depth - 1 and all(
        f"{s[last]}{TRAINING_SUFFIX}" in a.data
        for s, a in zip(split, artifacts, strict=True)
    ):
        names[-1] = "algorithm"
    return tuple(names), [tuple(s[i] for i in varying) for s in split]


def build_table(artifacts: Iterable[Artifact], *, median: bool = False) -> SuiteTable:
    """The table of ``artifacts`` (from ``load_tree``)."""
    return _build(list(artifacts), median)


def _build(shown: list[Artifact], median: bool) -> SuiteTable:
    stages: dict[str, None] = {}
    cells: list[dict[str, Summary]] = []
    totals: list[float] = []
    for artifact in shown:
        row = {}
        for name, stage in raw_stages(artifact.data):
            stages.setdefault(name)
            # a seed of a distributed launch counts once, as its slowest rank
            row[name] = summarise(valid_durations(raw_seconds(by_seed(stage)[0])))
        cells.append(row)
        totals.append(sum(s.total for s in row.values()))
    names, labels = _labels(shown) if shown else (("directory",), [])
    return SuiteTable(
        label_columns=names,
        labels=tuple(labels),
        paths=tuple(a.path for a in shown),
        stages=tuple(stages),
        cells=tuple(cells),
        totals=tuple(totals),
        median=median,
    )




