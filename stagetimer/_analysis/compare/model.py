"""What ``compare`` returns: attrs objects whose attributes mirror ``compare --json``'s keys.

``Comparison.to_dict()`` is that JSON. Kept apart from the arithmetic (``compare``) so
that each module reads in one sitting.
"""

from __future__ import annotations

from typing import Any

import attrs

from stagetimer._analysis.compare.metadata import MetadataDifference

__all__ = [
    "FASTER",
    "NO_DIFFERENCE",
    "SIGNIFICANCE",
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
]

FASTER = "faster"
SLOWER = "slower"
NO_DIFFERENCE = "no significant difference"
TOO_FEW_RUNS = "too few runs"

#: the largest Benjamini-Hochberg q-value a verdict of "faster" or "slower" may have
SIGNIFICANCE = 0.05


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
    #: 95 % interval of ``ratio`` (Welch's t on log-seconds, or the paired t); None below
    #: 2 runs a side (2 pairs of runs when paired)
    ratio_ci: tuple[float, float] | None
    #: "faster", "slower", "no significant difference" or "too few runs"
    verdict: str
    #: two-sided p-value of the t-test on log-seconds; None where there is no test
    p_value: float | None = None
    #: ``p_value`` adjusted by Benjamini-Hochberg over every test of the ``compare`` call
    q_value: float | None = None
    #: with ``paired``: the runs matched on both sides, and those left out per side
    pairs_of_runs: int | None = None
    unmatched_runs: tuple[int, int] = (0, 0)
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
            "p_value": self.p_value,
            "q_value": self.q_value,
        }
        if self.pairs_of_runs is not None:
            data["pairs_of_runs"] = self.pairs_of_runs
            data["unmatched_runs"] = {
                "base": self.unmatched_runs[0], "new": self.unmatched_runs[1],
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
class SoftwareDifference:
    """A field that differs between the software of the base side and that of the new."""

    field: str
    base: Any
    new: Any
    base_software_id: str
    new_software_id: str

    def to_dict(self) -> dict[str, Any]:
        """``{"field", "base", "new", "base_software_id", "new_software_id"}``."""
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
            "software_differences": [d.to_dict() for d in self.software_differences],
            "software_ids": {
                "base": list(self.base_software_ids),
                "new": list(self.new_software_ids),
            },
            "metadata_differences": [d.to_dict() for d in self.metadata_differences],
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
    #: how many tests the Benjamini-Hochberg adjustment ran over (stages with a p-value)
    comparisons: int = 0
    #: whether runs were matched by (run_idx, label, rank) and the paired t used
    paired: bool = False

    @property
    def pairs_of_runs(self) -> int | None:
        """With ``paired``: the matched pairs of runs over every stage; None otherwise."""
        if not self.paired:
            return None
        return sum(s.pairs_of_runs or 0 for pair in self.pairs for s in pair.stages)

    def to_dict(self) -> dict[str, Any]:
        """``{"pairs", "unpaired", "threshold", "comparisons", "paired", "pairs_of_runs"}``."""
        return {
            "pairs": [pair.to_dict() for pair in self.pairs],
            "unpaired": self.unpaired.to_dict(),
            "threshold": self.threshold,
            "comparisons": self.comparisons,
            "significance": SIGNIFICANCE,
            "paired": self.paired,
            "pairs_of_runs": self.pairs_of_runs,
        }

    def slower_than(self, fraction: float) -> list[tuple[Pair, StageComparison]]:
        """The stages judged "slower" whose ratio exceeds ``1 + fraction``."""
        return [
            (pair, stage)
            for pair in self.pairs
            for stage in pair.stages
            if stage.verdict == SLOWER and stage.ratio is not None and stage.ratio > 1 + fraction
        ]
