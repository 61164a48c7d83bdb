"""The model of ``stagetimer table``: one row per artifact directory, a column per stage.

Rows are named by the directories' paths relative to what they all share; when
every path has the same depth, each level is a column of its own (a suite reads as
environment | scenario | algorithm), and levels equal in every row are left out.
The levels may be named (``levels``: then every level is shown). Rows are in
natural order (``seed_2`` before ``seed_10``), so the table reads the same whatever
the order the paths were given in. There is a column per stage, in the order
stages were first seen over those rows (or the ``stages`` asked for, in that
order), each cell the mean ± sample standard deviation and the number of runs
(``--median``: the median and the quartiles), in one unit per column; and a total
per row, counting each moment once (a run nested inside a run of another column adds
nothing: ``nesting``). With ``fold_continuations``, a continuation ``<stage>_auto_resume`` is
folded into its stage: each seed's sample is its run of the stage plus its runs of
the continuation (the time that seed took), so a cell is a per-seed time. Only
durations a writer could have stored enter (see ``valid_durations``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from stagetimer._analysis.folding import seed_times
from stagetimer._analysis.nesting import has_parent, nested_runs, parent_id
from stagetimer._analysis.raw import raw_seconds, raw_stages, stored_runs
from stagetimer._analysis.seeds import by_seed
from stagetimer._analysis.stats import Summary, summarise
from stagetimer._analysis.tree import Artifact, relative_paths
from stagetimer._format import (
    AUTO_RESUME_SUFFIX,
    TRAINING_SUFFIX,
    can_continue,
    continued_stage,
)
from stagetimer._store.rules import valid_durations

__all__ = ["SuiteTable", "TableRequestError", "build_table", "natural_key"]

_DIGITS = re.compile(r"(\d+)")


class TableRequestError(ValueError):
    """What was asked of the table does not fit the directories (a usage error)."""


def natural_key(text: str) -> tuple[Any, ...]:
    """A sort key reading runs of digits as numbers: ``seed_2`` before ``seed_10``; one
    key per text, so that the order never depends on the order the texts came in.

    ``re.split`` with a group alternates text and digits, so the elements at one
    position are always of one type and compare. Texts that read as the same numbers
    (``seed_1`` and ``seed_01``; ``\\d`` also matches other scripts' decimal digits) are
    then ordered by the text itself, after a -1 where the next number would be: a digit
    run is never negative, so a key still sorts before every longer key it begins.
    """
    parts: list[Any] = _DIGITS.split(text)
    parts[1::2] = map(int, parts[1::2])  # in C
    parts += (-1, text)
    return tuple(parts)


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
    #: whether continuations were folded into their stage (a cell is a per-seed time)
    folded: bool = False
    #: runs counted inside their parent's run in the totals (``nesting``): a nested run
    #: adds nothing to its row's total where its parent's stage is a column too
    nested_runs: int = 0


def _split(artifacts: Sequence[Artifact]) -> tuple[list[str], list[tuple[str, ...]]]:
    relative = relative_paths([a.path for a in artifacts])
    return relative, [tuple(r.split("/")) for r in relative]


def _labels(
    artifacts: Sequence[Artifact], levels: Sequence[str] | None
) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    if not artifacts:
        return ("directory",), []
    relative, split = _split(artifacts)
    depths = {len(s) for s in split}
    if levels is not None:
        _check_levels(levels, depths, relative[0])
        return tuple(levels), split
    if len(depths) != 1 or len(split[0]) == 1:
        return ("directory",), [(r,) for r in relative]
    return _varying_levels(artifacts, split)


def _check_levels(levels: Sequence[str], depths: set[int], example: str) -> None:
    """Raise ``TableRequestError`` unless ``--levels`` names each level of every
    directory (all at one depth)."""
    if len(depths) != 1:
        raise TableRequestError(
            f"--levels needs every directory at one depth; these are {min(depths)} to "
            f"{max(depths)} levels below what they share (e.g. {example})"
        )
    (depth,) = depths
    if depth != len(levels):
        raise TableRequestError(
            f"--levels names {len(levels)} level(s) ({','.join(levels)}), but the "
            f"directories are {depth} level(s) below what they share (e.g. {example})"
        )


def _varying_levels(artifacts: Sequence[Artifact], split: list[tuple[str, ...]],
                    ) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """The levels whose names vary (else the last), named ``level N``; the last is the
    ``algorithm`` where every directory holds a training stage of that name."""
    depth = len(split[0])
    varying = _varying(split, depth)
    names = [f"level {i + 1}" for i in varying]
    if varying[-1] == depth - 1 and _algorithms(artifacts, split):
        names[-1] = "algorithm"
    return tuple(names), [tuple(s[i] for i in varying) for s in split]


def _varying(split: list[tuple[str, ...]], depth: int) -> list[int]:
    """The levels whose names vary between directories, else the last level."""
    return [i for i in range(depth) if len({s[i] for s in split}) > 1] or [depth - 1]


def _algorithms(artifacts: Sequence[Artifact], split: list[tuple[str, ...]]) -> bool:
    """Whether each directory's last level names a training stage it holds."""
    return all(f"{s[-1]}{TRAINING_SUFFIX}" in a.data
               for s, a in zip(split, artifacts, strict=True))


def _total(row: dict[str, Summary], nested: float) -> float:
    """A row's total: its cells' totals, less the seconds of the runs nested in them."""
    return sum((s.total for s in row.values()), 0.0) - nested


def _folded(data: dict[str, Any]) -> dict[str, list[float]]:
    """Each stage's samples with continuations folded in: per seed, its time in the stage
    plus its time in ``<stage>_auto_resume`` (``folding.seed_times``)."""
    samples: dict[str, list[float]] = {}
    for name, _ in raw_stages(data):
        target = continued_stage(name) or name
        if target in samples:
            continue
        runs = stored_runs(data, target)
        resumed = stored_runs(data, target + AUTO_RESUME_SUFFIX) if can_continue(target) else []
        samples[target] = [base + more for base, more in seed_times(runs, resumed)]
    return samples


def _stage_samples(data: dict[str, Any], fold: bool) -> dict[str, list[float]]:
    if fold:
        return _folded(data)
    # a seed of a distributed launch counts once, as its slowest rank
    return {
        name: valid_durations(raw_seconds(by_seed(stage)[0])) for name, stage in raw_stages(data)
    }


def _nested(data: dict[str, Any], names: Sequence[str], fold: bool) -> tuple[float, int]:
    """The seconds, and the number, of the runs summed into a row's total that lie inside
    a run of a stage also summed there (``nesting``): the total counts them once."""
    if not has_parent(data):
        return 0.0, 0
    nested = nested_runs(data)
    shown = set(names)

    def column(stage: str | None) -> bool:
        return stage in shown or (fold and continued_stage(stage or "") in shown)

    stage_of = _stage_of(data)
    seconds, count = 0.0, 0
    for name, stage in raw_stages(data):
        if not column(name):
            continue
        view = by_seed(stage)[0]  # the runs the cells count
        for run, value in zip(view["runs"], raw_seconds(view), strict=True):
            if id(run) in nested and column(stage_of.get(parent_id(run.get("parent")))):
                seconds, count = seconds + value, count + 1
    return seconds, count


def _stage_of(data: dict[str, Any]) -> dict[Any, str]:
    """Each run's ``attempt_id`` -> the name of its stage."""
    return {
        run.get("attempt_id"): name for name, stage in raw_stages(data) for run in stage["runs"]
    }


def _in_order(shown: list[Artifact]) -> list[Artifact]:
    """The artifacts in the natural order of their relative paths."""
    if not shown:
        return shown
    relative, _ = _split(shown)
    order = sorted(range(len(shown)), key=lambda i: natural_key(relative[i]))
    return [shown[i] for i in order]


def _columns(samples: list[dict[str, list[float]]], stages: Sequence[str] | None,
             ) -> list[str]:
    """The stage columns: those ``stages`` picks (each recorded somewhere, else
    ``TableRequestError``), else every stage recorded, first seen first."""
    seen = dict.fromkeys(name for row in samples for name in row)
    if stages is None:
        return list(seen)
    _check_stages(stages, seen)
    return list(dict.fromkeys(stages))


def _check_stages(stages: Sequence[str], seen: dict[str, None]) -> None:
    """Raise ``TableRequestError`` unless every stage of ``stages`` is one ``seen``."""
    unknown = [name for name in stages if name not in seen]
    if unknown:
        known = ", ".join(seen) or "none"
        raise TableRequestError(
            f"--stages: no directory recorded {', '.join(unknown)} (stages: {known})"
        )


def _cells(row: dict[str, list[float]], names: Sequence[str]) -> dict[str, Summary]:
    """A row's cells: the summary of each column's samples the row recorded."""
    return {n: summarise(row[n]) for n in names if n in row}


def build_table(
    artifacts: Iterable[Artifact],
    *,
    median: bool = False,
    levels: Sequence[str] | None = None,
    stages: Sequence[str] | None = None,
    fold_continuations: bool = False,
) -> SuiteTable:
    """The table of ``artifacts`` (from ``load_tree``).

    ``levels`` names the levels of the directories' relative paths (one name each);
    ``stages`` picks the stage columns, in that order. Raises ``TableRequestError``
    naming what does not fit (a level count, a stage no directory recorded).
    """
    shown = _in_order(list(artifacts))
    samples = [_stage_samples(artifact.data, fold_continuations) for artifact in shown]
    names = _columns(samples, stages)
    cells = [_cells(row, names) for row in samples]
    inside = [_nested(a.data, names, fold_continuations) for a in shown]
    totals = [_total(row, nested) for row, (nested, _) in zip(cells, inside, strict=True)]
    label_columns, labels = _labels(shown, levels)
    return SuiteTable(
        label_columns=label_columns,
        labels=tuple(labels),
        paths=tuple(a.path for a in shown),
        stages=tuple(names),
        cells=tuple(cells),
        totals=tuple(totals),
        median=median,
        folded=fold_continuations,
        nested_runs=sum(count for _, count in inside),
    )
