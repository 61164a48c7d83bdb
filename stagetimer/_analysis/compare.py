"""compare: is the new side faster than the base, and is that a like-for-like comparison?

``BASE`` and ``NEW`` are each an artifact directory or a tree of them. Two
artifact directories are one pair; two trees pair the artifact directories at
equal paths relative to their roots, and list the others as unpaired. In a pair,
each stage recorded on both sides is compared on the durations a writer could
have stored (a negative or non-finite ``seconds`` is left out):

- per side: the number of runs, median, mean and sample standard deviation;
- ``ratio``: the geometric-mean ratio new / base, ``exp(mean(ln new) - mean(ln base))``,
  a duration of 0 counted as 1 µs so that its logarithm exists;
- ``ratio_ci``: its 95 % interval from Welch's t on the log-seconds;
- ``verdict``: ``"faster"`` or ``"slower"`` when the interval excludes 1 and the
  ratio is at least ``threshold`` away from 1 (2 % by default: smaller changes are
  seldom real on shared machines), ``"no significant difference"`` otherwise,
  ``"too few runs"`` when a side has fewer than 2 runs (the ratio is still given).

Each pair also lists the hardware differences between its sides: the fields of
the descriptions their runs point at that can change a duration (see
``stagetimer.hardware.hardware_differences``), and the software differences (the
commit, uncommitted changes, packages and accelerator libraries, see
``stagetimer.software.software_differences``), and the metadata keys of a compared stage
whose values differ (``mp="fork"`` against ``mp="spawn"``). A side whose runs span several
descriptions is compared against each.

The runs of one seed's ranks (a distributed launch) count once, as the slowest rank.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs

from stagetimer._analysis.compute import with_resources
from stagetimer._analysis.metadata_pairs import MetadataDifference, metadata_differences
from stagetimer._analysis.raw import raw_seconds, raw_stages
from stagetimer._analysis.seeds import by_seed
from stagetimer._analysis.software_pairs import (
    SoftwareDifference,
    SoftwareDifferences,
    software_ids,
)
from stagetimer._analysis.stats import mean_and_variance, moments, welch_from_moments
from stagetimer._analysis.tree import Artifact, load_tree
from stagetimer._errors import InvalidSettingError, InvalidTypeError
from stagetimer._store.rules import is_valid_seconds, valid_durations
from stagetimer.hardware import Difference, Hardware, hardware_differences

__all__ = [
    "FASTER",
    "NO_DIFFERENCE",
    "SLOWER",
    "TOO_FEW_RUNS",
    "Comparison",
    "HardwareDifference",
    "MetadataDifference",
    "Pair",
    "SideStats",
    "SoftwareDifference",
    "StageComparison",
    "Unpaired",
    "compare",
    "compare_artifacts",
]

_get: Callable[[dict[str, Any], str], Any] = dict.get
_HARDWARE_ID = itertools.repeat("hardware_id")

FASTER = "faster"
SLOWER = "slower"
NO_DIFFERENCE = "no significant difference"
TOO_FEW_RUNS = "too few runs"

#: durations below this count as this before their logarithm is taken
FLOOR_SECONDS = 1e-6
CONFIDENCE = 0.95


@attrs.frozen
class SideStats:
    """One side's durations of a stage: None where there are too few to say."""

    runs: int
    median_seconds: float | None
    mean_seconds: float | None
    #: sample standard deviation (n - 1); None below 2 runs
    stdev_seconds: float | None

    def to_dict(self) -> dict[str, Any]:
        """``{"runs", "median_seconds", "mean_seconds", "stdev_seconds"}``."""
        # attrs.asdict's result, written out: twenty thousand of these in a suite's JSON
        return {
            "runs": self.runs,
            "median_seconds": self.median_seconds,
            "mean_seconds": self.mean_seconds,
            "stdev_seconds": self.stdev_seconds,
        }


@attrs.frozen
class StageComparison:
    """One stage recorded on both sides of a pair."""

    name: str
    base: SideStats
    new: SideStats
    #: geometric-mean ratio new / base (< 1: the new side is faster); None without runs
    ratio: float | None
    #: 95 % interval of ``ratio`` (Welch's t on log-seconds); None below 2 runs a side
    ratio_ci: tuple[float, float] | None
    #: "faster", "slower", "no significant difference" or "too few runs"
    verdict: str
    #: what the stage used on each side (``compute.side_by_side``), None if never recorded
    resources: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The stage as ``stagetimer compare --json`` prints it."""
        data = {
            "name": self.name,
            "base": self.base.to_dict(),
            "new": self.new.to_dict(),
            "ratio": self.ratio,
            "ratio_ci": None if self.ratio_ci is None else list(self.ratio_ci),
            "verdict": self.verdict,
        }
        if self.resources is not None:
            data["resources"] = self.resources
        return data


@attrs.frozen
class HardwareDifference:
    """A field that differs between a description of the base side and one of the new."""

    field: str
    base: Any
    new: Any
    base_hardware_id: str
    new_hardware_id: str

    def to_dict(self) -> dict[str, Any]:
        """``{"field", "base", "new", "base_hardware_id", "new_hardware_id"}``."""
        return attrs.asdict(self)


@attrs.frozen
class Pair:
    """Two artifact directories compared stage by stage."""

    base: str
    new: str
    stages: tuple[StageComparison, ...]
    hardware_differences: tuple[HardwareDifference, ...]
    #: the hardware ids the compared runs point at, per side, in first-seen order
    base_hardware_ids: tuple[str, ...] = ()
    new_hardware_ids: tuple[str, ...] = ()
    #: stages recorded on one side only (not compared)
    base_only_stages: tuple[str, ...] = ()
    new_only_stages: tuple[str, ...] = ()
    #: the directories' path relative to each tree's root ("/"-separated); None when two
    #: artifact directories were given
    relpath: str | None = None
    #: hardware ids the compared runs point at that their sidecar does not describe
    #: (missing or unreadable ``timings_hardware.json``): not compared
    undescribed_hardware_ids: tuple[str, ...] = ()
    #: what differs between the software of the sides' compared runs (see
    #: ``stagetimer.software.software_differences``), and their software ids per side
    software_differences: tuple[SoftwareDifference, ...] = ()
    base_software_ids: tuple[str, ...] = ()
    new_software_ids: tuple[str, ...] = ()
    #: metadata keys of a compared stage whose values differ between the sides
    metadata_differences: tuple[MetadataDifference, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The pair as ``stagetimer compare --json`` prints it."""
        return {
            "base": self.base,
            "new": self.new,
            "stages": [stage.to_dict() for stage in self.stages],
            "hardware_differences": [d.to_dict() for d in self.hardware_differences],
            "hardware_ids": {
                "base": list(self.base_hardware_ids),
                "new": list(self.new_hardware_ids),
            },
            "unpaired_stages": {
                "base": list(self.base_only_stages),
                "new": list(self.new_only_stages),
            },
            "relpath": self.relpath,
            "undescribed_hardware_ids": list(self.undescribed_hardware_ids),
            "software_differences": [d.to_dict() for d in self.software_differences],
            "software_ids": {
                "base": list(self.base_software_ids),
                "new": list(self.new_software_ids),
            },
            "metadata_differences": [d.to_dict() for d in self.metadata_differences],
        }


@attrs.frozen
class Unpaired:
    """Artifact directories found on one side only."""

    base: tuple[str, ...] = ()
    new: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """``{"base": [...], "new": [...]}``."""
        return {"base": list(self.base), "new": list(self.new)}


@attrs.frozen
class Comparison:
    """What ``compare`` found: the pairs, and the directories left unpaired."""

    pairs: tuple[Pair, ...]
    unpaired: Unpaired
    #: the relative change below which no verdict says "faster" or "slower"
    threshold: float = 0.02

    def to_dict(self) -> dict[str, Any]:
        """``{"pairs": [...], "unpaired": {"base": [...], "new": [...]}, "threshold"}``."""
        return {
            "pairs": [pair.to_dict() for pair in self.pairs],
            "unpaired": self.unpaired.to_dict(),
            "threshold": self.threshold,
        }

    def slower_than(self, fraction: float) -> list[tuple[Pair, StageComparison]]:
        """The stages judged "slower" whose ratio exceeds ``1 + fraction``."""
        return [
            (pair, stage)
            for pair in self.pairs
            for stage in pair.stages
            if stage.verdict == SLOWER and stage.ratio is not None and stage.ratio > 1 + fraction
        ]


# --- statistics ---------------------------------------------------------------------


def _side(values: Sequence[float]) -> tuple[SideStats, float]:
    """The side's statistics, and its smallest value (inf: none)."""
    n = len(values)
    if n == 0:
        return SideStats(0, None, None, None), math.inf
    mean, median, stdev, ordered = moments(values, sum(values, 0.0))
    return SideStats(n, median, mean, stdev), ordered[0]


def _logs(values: Sequence[float], smallest: float) -> list[float]:
    if smallest > FLOOR_SECONDS:  # the usual stage: no duration to raise to the floor
        return list(map(math.log, values))
    return [math.log(v if v > FLOOR_SECONDS else FLOOR_SECONDS) for v in values]


def compare_stage(
    name: str, base: Sequence[float], new: Sequence[float], threshold: float = 0.02
) -> StageComparison:
    """One stage's comparison from its durations on each side (already valid)."""
    (base_stats, base_min), (new_stats, new_min) = _side(base), _side(new)
    if not base or not new:
        return StageComparison(name, base_stats, new_stats, None, None, TOO_FEW_RUNS)
    log_base, log_new = _logs(base, base_min), _logs(new, new_min)
    mean_base, var_base = mean_and_variance(log_base)
    mean_new, var_new = mean_and_variance(log_new)
    difference = mean_new - mean_base
    ratio = math.exp(difference)
    if len(base) < 2 or len(new) < 2:
        return StageComparison(name, base_stats, new_stats, ratio, None, TOO_FEW_RUNS)
    low, high = welch_from_moments(
        (mean_new, var_new, len(log_new)), (mean_base, var_base, len(log_base)), CONFIDENCE
    )
    ci = (math.exp(low), math.exp(high))
    excludes_one = low > 0.0 or high < 0.0
    if excludes_one and abs(difference) >= math.log1p(threshold):
        verdict = SLOWER if difference > 0 else FASTER
    else:
        verdict = NO_DIFFERENCE
    return StageComparison(name, base_stats, new_stats, ratio, ci, verdict)


# --- pairing ------------------------------------------------------------------------


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


class _Differences:
    """hardware_differences per pair of hardware ids, computed once (an id is its content);
    ``software``: the same for software ids."""

    def __init__(self) -> None:
        self._known: dict[tuple[str, str], list[Difference]] = {}
        self.software = SoftwareDifferences()

    def between(self, base_id: str, base: Hardware, new_id: str, new: Hardware) -> list[Difference]:
        key = (base_id, new_id)
        found = self._known.get(key)
        if found is None:
            found = self._known[key] = hardware_differences(base, new)
        return found


def _stage_runs(stage: dict[str, Any]) -> tuple[list[float], list[Any]]:
    """A raw stage's valid durations, and the ``hardware_id`` of each of those runs."""
    seconds = raw_seconds(stage)
    runs = stage["runs"]
    valid = valid_durations(seconds)
    if len(valid) == len(seconds):  # the usual stage
        return valid, list(map(_get, runs, _HARDWARE_ID))
    pairs = zip(runs, seconds, strict=True)
    ids = [run.get("hardware_id") for run, s in pairs if is_valid_seconds(s)]
    return valid, ids


def _ids(found: Iterable[list[Any]]) -> list[str]:
    """The distinct hardware ids (strings) in first-seen order."""
    # parse_timings let through only a string or null (absent) hardware_id; legacy runs
    # have none: they name no description.
    seen = dict.fromkeys(itertools.chain.from_iterable(found))
    seen.pop(None, None)
    return list(seen)


def compare_artifacts(
    base: Artifact,
    new: Artifact,
    *,
    threshold: float = 0.02,
    differences: _Differences | None = None,
) -> Pair:
    """Compare two artifact directories already read (see ``stagetimer._analysis.tree``).

    Works on the parsed files (``Artifact.data``), as the report does: a run's
    ``seconds`` and ``hardware_id`` are all it needs, and building run objects
    for 100,000 runs would cost more than the statistics.
    """
    return _compare_pair(
        base, new, _check_threshold(threshold),
        differences if differences is not None else _Differences(), None,
    )


def _compare_pair(
    base: Artifact, new: Artifact, threshold: float, cache: _Differences, relpath: str | None
) -> Pair:
    # a seed of a distributed launch counts once, as its slowest rank
    base_stages = {name: by_seed(stage)[0] for name, stage in raw_stages(base.data)}
    new_stages = {name: by_seed(stage)[0] for name, stage in raw_stages(new.data)}
    shared = [name for name in base_stages if name in new_stages]
    base_runs = [_stage_runs(base_stages[name]) for name in shared]
    new_runs = [_stage_runs(new_stages[name]) for name in shared]
    stages = tuple(
        compare_stage(name, b[0], n[0], threshold)
        for name, b, n in zip(shared, base_runs, new_runs, strict=True)
    )
    stages = with_resources(stages, base_stages, new_stages)
    base_ids = _ids(ids for _, ids in base_runs)
    new_ids = _ids(ids for _, ids in new_runs)
    base_described: Mapping[str, Hardware] = base.hardware.hardware
    new_described: Mapping[str, Hardware] = new.hardware.hardware
    found: list[HardwareDifference] = []
    for base_id in base_ids:
        base_hw = base_described.get(base_id)
        if base_hw is None:
            continue
        for new_id in new_ids:
            new_hw = new_described.get(new_id)
            if new_hw is None:
                continue
            found.extend(
                HardwareDifference(d.field, d.base, d.new, base_id, new_id)
                for d in cache.between(base_id, base_hw, new_id, new_hw)
            )
    undescribed = [i for i in base_ids if i not in base_described]
    undescribed += [i for i in new_ids if i not in new_described and i not in undescribed]
    base_sw = software_ids(base_stages[name] for name in shared)
    new_sw = software_ids(new_stages[name] for name in shared)
    return Pair(
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
        stages=stages,
        hardware_differences=tuple(found),
        base_hardware_ids=tuple(base_ids),
        new_hardware_ids=tuple(new_ids),
        base_only_stages=tuple(name for name in base_stages if name not in new_stages),
        new_only_stages=tuple(name for name in new_stages if name not in base_stages),
        relpath=relpath,
    )


def compare(
    base: str | os.PathLike[str],
    new: str | os.PathLike[str],
    *,
    threshold: float = 0.02,
) -> Comparison:
    """Compare the timings under ``new`` with those under ``base``.

    ``base`` and ``new`` are each an artifact directory (holding ``timings.json``)
    or a tree of them. Two artifact directories are one pair, whatever their
    names; two trees pair the directories at equal paths relative to each root.
    ``threshold`` is the smallest relative change a verdict calls "faster" or
    "slower" (0.02: 2 %). Raises what ``load_tree`` raises for a path that does
    not exist, holds no ``timings.json`` or a sidecar that does not parse.

    >>> result = compare("exports/main", "exports/feature")
    >>> [(s.name, s.verdict) for s in result.pairs[0].stages]
    [('ippo_train', 'faster'), ('save', 'no significant difference')]
    """
    threshold = _check_threshold(threshold)
    return _compare(load_tree(base), load_tree(new), threshold)


def _compare(
    base_artifacts: Sequence[Artifact], new_artifacts: Sequence[Artifact], threshold: float
) -> Comparison:
    differences = _Differences()
    if _single(base_artifacts) and _single(new_artifacts):
        pair = compare_artifacts(
            base_artifacts[0], new_artifacts[0], threshold=threshold, differences=differences
        )
        return Comparison((pair,), Unpaired(), threshold)
    by_relpath = {artifact.relpath: artifact for artifact in new_artifacts}
    pairs = []
    unpaired_base = []
    for artifact in base_artifacts:
        partner = by_relpath.pop(artifact.relpath, None)
        if partner is None:
            unpaired_base.append(artifact.path)
        else:
            pairs.append(
                _compare_pair(artifact, partner, threshold, differences, artifact.relpath)
            )
    unpaired = Unpaired(tuple(unpaired_base), tuple(a.path for a in by_relpath.values()))
    return Comparison(tuple(pairs), unpaired, threshold)


def _single(artifacts: Sequence[Artifact]) -> bool:
    """One artifact directory, given as itself (not a tree with one directory in it)."""
    return len(artifacts) == 1 and artifacts[0].relpath == "."
