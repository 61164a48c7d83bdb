"""What differs between the software of the two sides of a ``compare`` pair.

Each software description a side's compared runs point at is compared with each of the
other side's (``stagetimer.software.software_differences``), once per pair of ids: an id
is its content.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Any

from stagetimer._analysis.comparison import SoftwareDifference
from stagetimer._analysis.id_pairs import PairCache, distinct_ids
from stagetimer.software import Software

__all__ = ["SoftwareDifference", "SoftwareDifferences", "software_ids"]


def software_ids(stages: Iterable[dict[str, Any]]) -> list[str]:
    """The distinct ``software_id`` of the runs of ``stages`` (stored), first seen first."""
    runs = itertools.chain.from_iterable(stage["runs"] for stage in stages)
    return list(distinct_ids(runs, "software_id"))


class SoftwareDifferences(PairCache[Software]):
    """software_differences per pair of software ids, computed once for a whole compare."""

    def __init__(self) -> None:
        from stagetimer.software import software_differences

        super().__init__(software_differences)

    def of_pair(
        self,
        base: Mapping[str, Software],
        base_ids: list[str],
        new: Mapping[str, Software],
        new_ids: list[str],
    ) -> tuple[SoftwareDifference, ...]:
        """Each side's described software against each of the other's (``base``, ``new``:
        id -> description as the sidecars hold them; undescribed ids are not compared)."""
        found: list[SoftwareDifference] = []
        for base_id in base_ids:
            base_sw = base.get(base_id)
            for new_id in new_ids:
                new_sw = new.get(new_id)
                if base_sw is None or new_sw is None:
                    continue
                found.extend(
                    SoftwareDifference(d.field, d.base, d.new, base_id, new_id)
                    for d in self.between(base_id, base_sw, new_id, new_sw)
                )
        return tuple(found)
