"""compare: is the new side faster than the base, and is that a like-for-like comparison?

``BASE`` and ``NEW`` are each an artifact directory or a tree of them. Two
artifact directories are one pair; two trees pair the artifact directories at
equal paths relative to their roots, and list the others as unpaired. In a pair,
each stage recorded on both sides is compared on the durations a writer could
have stored (a negative or non-finite ``seconds`` is left out):

- per side: the number of runs, median, mean and sample standard deviation;
- ``ratio``: the geometric-mean ratio new / base, ``exp(mean(ln new) - mean(ln base))``,
  a duration of 0 counted as 1 µs so that its logarithm exists;
- ``ratio_ci``: its 95 % interval from Welch's t on the log-seconds (with ``paired``:
  the paired t on the differences of log-seconds of the runs matched by
  ``(run_idx, label, rank)``, the same seeds run on both sides; the matched ranks of
  one seed are one pair, the slowest of them on each side);
- ``p_value``: that test's two-sided p; ``q_value``: the p-value adjusted by
  Benjamini-Hochberg over every test of the one call (``significance``), so that
  a tree of 10,000 stages does not call 500 of them changed by chance;
- ``verdict``: ``"faster"`` or ``"slower"`` when ``q_value`` <= 0.05 and the ratio
  is at least ``threshold`` away from 1 (2 % by default: smaller changes are seldom
  real on shared machines), ``"no significant difference"`` otherwise, ``"too few
  runs"`` when a side has fewer than 2 runs (the ratio is still given).

Each pair also lists the hardware differences between its sides: the fields of
the descriptions their runs point at that can change a duration (see
``stagetimer.hardware.hardware_differences``), and the software differences (the
commit, uncommitted changes, packages and accelerator libraries, see
``stagetimer.software.software_differences``), and the metadata keys of a compared stage
whose values differ (``mp="fork"`` against ``mp="spawn"``). A side whose runs span several
descriptions is compared against each.

The runs of one seed's ranks (a distributed launch) count once, as the slowest rank.
This module pairs the directories and their stages and adjusts the p-values over the
call; one stage's statistics and verdict are computed in ``compare.stage``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from itertools import chain
from typing import Any, NamedTuple, TypeVar

import attrs

from stagetimer._analysis.compare.ids import PairCache, distinct_ids
from stagetimer._analysis.compare.metadata import metadata_differences
from stagetimer._analysis.compare.model import (
    Comparison,
    HardwareDifference,
    Pair,
    Unpaired,
)
from stagetimer._analysis.compare.significance import benjamini_hochberg
from stagetimer._analysis.compare.software import SoftwareDifferences
from stagetimer._analysis.compare.stage import (
    Measured,
    judged,
    measure,
    measure_paired,
)
from stagetimer._analysis.compute import side_by_side
from stagetimer._analysis.raw import HardwareCache, raw_seconds, raw_stages
from stagetimer._analysis.seeds import by_seed
from stagetimer._analysis.tree import Artifact, Found, find_tree, read_found
from stagetimer._errors import InvalidSettingError, InvalidTypeError
from stagetimer._store.rules import is_valid_seconds, valid_durations
from stagetimer.hardware import Hardware, hardware_differences

__all__ = ["compare", "compare_trees"]

#: a side's directories: walked (``Found``, read by ``_compared``) or already read
_Dir = TypeVar("_Dir", Found, Artifact)

# --- pairing directories ----------------------------------------------------------------


def _check_threshold(threshold: float) -> float:
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
        raise InvalidTypeError(
            f"threshold must be a number (0.02 for 2 %), not {threshold!r}", threshold
        )
    if not 0.0 <= threshold < math.inf:
        raise InvalidSettingError(
            f"threshold must be a finite fraction >= 0 (0.02 for 2 %), not {threshold!r}",
            threshold,
        )
    return float(threshold)


def _stage_runs(stage: dict[str, Any]) -> tuple[list[float], list[dict[str, Any]]]:
    """A raw stage's valid durations, and those runs."""
    seconds = raw_seconds(stage)
    runs = stage["runs"]
    valid = valid_durations(seconds)
    if len(valid) == len(seconds):  # the usual stage
        return valid, runs
    return valid, [run for run, s in zip(runs, seconds, strict=True) if is_valid_seconds(s)]


class _Caches(NamedTuple):
    """The differences between descriptions, computed once per pair of ids for a whole
    ``compare`` (an id is its content)."""

    hardware: Differences
    software: SoftwareDifferences


def _caches() -> _Caches:
    return _Caches(Differences(), SoftwareDifferences())


_Side = tuple[
    dict[str, dict[str, Any]],  # the stored stages
    dict[str, dict[str, Any]],  # the same with a seed's ranks as one run (by_seed)
    list[tuple[list[float], list[dict[str, Any]]]],  # the latter's valid runs per shared stage
]


def _measure_stages(shared: list[str], base: _Side, new: _Side, paired: bool) -> list[Measured]:
    """Each stage recorded on both sides measured, with what it used where recorded."""
    stages = zip(shared, base[2], new[2], strict=True)
    if paired:
        # matched rank by rank on the stored runs, each seed's ranks then one pair
        measured = [measure_paired(name, b[0], n[0], _stored_runs(base, name, b),
                                   _stored_runs(new, name, n)) for name, b, n in stages]
    else:
        measured = [measure(name, b[0], n[0]) for name, b, n in stages]
    # what each stage used on both sides, where recorded (no verdict: not tested)
    for i, m in enumerate(measured):
        used = side_by_side(base[1][m.name]["runs"], new[1][m.name]["runs"])
        if used is not None:
            measured[i] = m._replace(resources=used)
    return measured


def _stored_runs(side: _Side, name: str, compared: tuple[list[float], list[dict[str, Any]]],
                 ) -> tuple[list[float], list[dict[str, Any]]]:
    """The valid stored runs of stage ``name`` of one side, every rank's (``compared``,
    the runs with a seed's ranks as one, where the stage has no ranks)."""
    raw, stages, _ = side
    return compared if stages[name] is raw[name] else _stage_runs(raw[name])


def _seed_views(artifact: Artifact) -> tuple[dict[str, Any], dict[str, Any]]:
    """A directory's stages as stored, and as compared: a seed of a distributed launch
    once, as its slowest rank."""
    stored = dict(raw_stages(artifact.data))
    return stored, {name: by_seed(stage)[0] for name, stage in stored.items()}


def _runs_compared(runs: list[tuple[list[float], list[dict[str, Any]]]],
                  ) -> list[dict[str, Any]]:
    """The runs compared (valid, a seed once) of every shared stage of one side."""
    return list(chain.from_iterable(some for _, some in runs))


def _only(stages: dict[str, Any], others: dict[str, Any]) -> tuple[str, ...]:
    return tuple(name for name in stages if name not in others)


def _measure_pair(
    base: Artifact, new: Artifact, cache: _Caches, relpath: str | None, paired: bool
) -> tuple[Pair, list[Measured]]:
    """The pair without its stages (filled in once every test of the call is known)."""
    base_raw, base_stages = _seed_views(base)
    new_raw, new_stages = _seed_views(new)
    shared = [name for name in base_stages if name in new_stages]
    base_runs = [_stage_runs(base_stages[name]) for name in shared]
    new_runs = [_stage_runs(new_stages[name]) for name in shared]
    measured = _measure_stages(shared, (base_raw, base_stages, base_runs),
                               (new_raw, new_stages, new_runs), paired)
    # the runs compared (valid, a seed once) say what hardware and software each side ran
    base_compared, new_compared = _runs_compared(base_runs), _runs_compared(new_runs)
    base_ids = distinct_ids(base_compared, "hardware_id")
    new_ids = distinct_ids(new_compared, "hardware_id")
    found, undescribed = hardware_between(base, new, base_ids, new_ids, cache.hardware)
    base_sw = distinct_ids(base_compared, "software_id")
    new_sw = distinct_ids(new_compared, "software_id")
    pair = Pair(
        metadata_differences=metadata_differences(
            (name, base_stages[name], new_stages[name]) for name in shared
        ),
        software_differences=cache.software.of_pair(
            base.hardware.software, base_sw, new.hardware.software, new_sw
        ),
        base_software_ids=tuple(base_sw),
        new_software_ids=tuple(new_sw),
        undescribed_hardware_ids=tuple(undescribed),
        base=base.path,
        new=new.path,
        stages=(),
        hardware_differences=tuple(found),
        base_hardware_ids=tuple(base_ids),
        new_hardware_ids=tuple(new_ids),
        base_only_stages=_only(base_stages, new_stages),
        new_only_stages=_only(new_stages, base_stages),
        relpath=relpath,
    )
    return pair, measured


def _judge(
    measured: list[tuple[Pair, list[Measured]]], threshold: float
) -> tuple[list[Pair], int]:
    """Every pair with its verdicts, q-values over all the tests; and how many tests."""
    p_values = [m.test.p_value for _, stages in measured for m in stages if m.test is not None]
    q_values = iter(benjamini_hochberg(p_values))
    pairs = []
    for pair, stages in measured:
        verdicts = tuple(
            judged(m, next(q_values) if m.test is not None else None, threshold)
            for m in stages
        )
        pairs.append(attrs.evolve(pair, stages=verdicts))
    return pairs, len(p_values)


def compare(
    base: str | os.PathLike[str],
    new: str | os.PathLike[str],
    *,
    threshold: float = 0.02,
    paired: bool = False,
) -> Comparison:
    """Compare the timings under ``new`` with those under ``base``.

    ``base`` and ``new`` are each an artifact directory (holding ``timings.json``)
    or a tree of them. Two artifact directories are one pair, whatever their
    names; two trees pair the directories at equal paths relative to each root.
    ``threshold`` is the smallest relative change a verdict calls "faster" or
    "slower" (0.02: 2 %). Each stage's p-value is adjusted (Benjamini-Hochberg) over
    every stage compared in the call: the verdict needs ``q_value`` <= 0.05.
    ``paired``: match the runs of a stage by ``(run_idx, label, rank)`` (the same
    seeds on both sides) and use the paired t; unmatched runs are left out and counted.
    Raises what ``load_tree`` raises for a path that does not exist, holds no
    ``timings.json`` or a sidecar that does not parse.

    >>> result = compare("exports/main", "exports/feature")
    >>> [(s.name, s.verdict) for s in result.pairs[0].stages]
    [('ippo_train', 'faster'), ('save', 'no significant difference')]
    """
    threshold = _check_threshold(threshold)
    base_dirs, new_dirs = find_tree(base), find_tree(new)
    hardware = HardwareCache()
    return _compared(base_dirs, new_dirs, lambda found: read_found(found, hardware),
                     threshold, paired)


def compare_trees(
    base_artifacts: Sequence[Artifact],
    new_artifacts: Sequence[Artifact],
    threshold: float = 0.02,
    *,
    paired: bool = False,
) -> Comparison:
    """``compare`` of two sides already read (``load_tree``, or built in memory)."""
    return _compared(base_artifacts, new_artifacts, lambda artifact: artifact, threshold, paired)


def _compared(
    base_dirs: Sequence[_Dir],
    new_dirs: Sequence[_Dir],
    read: Callable[[_Dir], Artifact],
    threshold: float,
    paired: bool,
) -> Comparison:
    """The comparison of two walked sides, read one pair at a time.

    Each pair is read, measured and let go before the next is read: two trees of
    thousands of directories are never held in memory whole, and each pair is measured
    while its data is still in the processor's caches (``benchmarks/bench_compare.py``
    shows the figure). A directory without a partner is read too, so that an unreadable
    one raises as ``load_tree`` would, and is listed as unpaired.
    """
    cache = _caches()
    measured: list[tuple[Pair, list[Measured]]] = []
    unpaired = Unpaired()
    if _single(base_dirs) and _single(new_dirs):
        measured.append(_measure_pair(read(base_dirs[0]), read(new_dirs[0]), cache, None, paired))
    else:
        unpaired = _measure_trees(base_dirs, new_dirs, read, measured,
                                  lambda b, n, relpath: _measure_pair(b, n, cache, relpath,
                                                                      paired))
    pairs, count = _judge(measured, threshold)
    return Comparison(tuple(pairs), unpaired, threshold, count, paired)


def _measure_trees(
    base_dirs: Sequence[_Dir],
    new_dirs: Sequence[_Dir],
    read: Callable[[_Dir], Artifact],
    measured: list[tuple[Pair, list[Measured]]],
    measure_pair: Callable[[Artifact, Artifact, str], tuple[Pair, list[Measured]]],
) -> Unpaired:
    """Measure the directories at equal paths under each root into ``measured``, one pair
    at a time; read the others too, and return them as unpaired."""
    by_relpath = {found.relpath: found for found in new_dirs}
    unpaired_base = []
    for found in base_dirs:
        partner = by_relpath.pop(found.relpath, None)
        if partner is None:
            read(found)
            unpaired_base.append(found.path)
        else:
            measured.append(measure_pair(read(found), read(partner), found.relpath))
    for found in by_relpath.values():
        read(found)
    return Unpaired(tuple(unpaired_base), tuple(f.path for f in by_relpath.values()))


def _single(directories: Sequence[_Dir]) -> bool:
    """One artifact directory, given as itself (not a tree with one directory in it)."""
    return len(directories) == 1 and directories[0].relpath == "."

# --- the hardware side of a pair ---------------------------------------------------------
# The hardware ids a pair's runs point at, and the differences between each description of
# the base side and each of the new (computed once per pair of ids: an id is its content).


class Differences(PairCache[Hardware]):
    """hardware_differences per pair of hardware ids, computed once (``PairCache``)."""

    def __init__(self) -> None:
        super().__init__(hardware_differences)


def hardware_between(
    base: Artifact,
    new: Artifact,
    base_ids: Sequence[str],
    new_ids: Sequence[str],
    cache: Differences,
) -> tuple[list[HardwareDifference], list[str]]:
    """The differences between each base and each new description, and the ids undescribed."""
    base_described: Mapping[str, Hardware] = base.hardware.hardware
    new_described: Mapping[str, Hardware] = new.hardware.hardware
    found = [
        HardwareDifference(d.field, d.base, d.new, base_id, new_id)
        for base_id, new_id, d in cache.across(base_described, base_ids, new_described, new_ids)
    ]
    undescribed = [i for i in base_ids if i not in base_described]
    undescribed += [i for i in new_ids if i not in new_described and i not in undescribed]
    return found, undescribed
