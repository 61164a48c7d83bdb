"""compare's hardware side: the hardware ids a pair's runs point at, and the differences
between each description of the base side and each of the new (computed once per pair
of ids: an id is its content)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from stagetimer._analysis.compare.ids import PairCache
from stagetimer._analysis.compare.model import HardwareDifference
from stagetimer._analysis.tree import Artifact
from stagetimer.hardware import Hardware, hardware_differences

__all__ = ["Differences", "hardware_between"]

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
