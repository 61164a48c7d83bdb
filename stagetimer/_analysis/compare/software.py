"""What differs between the software of the two sides of a ``compare`` pair.

Each software description a side's compared runs point at is compared with each of the
other side's (``stagetimer.software.software_differences``), once per pair of ids: an id
is its content.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from stagetimer._analysis.compare.ids import PairCache
from stagetimer._analysis.compare.model import SoftwareDifference
from stagetimer.software import Software

__all__ = ["SoftwareDifference", "SoftwareDifferences"]


class SoftwareDifferences(PairCache[Software]):
    """software_differences per pair of software ids, computed once for a whole compare."""

    def __init__(self) -> None:
        from stagetimer.software import software_differences

        super().__init__(software_differences)

    def of_pair(
        self,
        base: Mapping[str, Software],
        base_ids: Sequence[str],
        new: Mapping[str, Software],
        new_ids: Sequence[str],
    ) -> tuple[SoftwareDifference, ...]:
        """Each side's described software against each of the other's (``base``, ``new``:
        id -> description as the sidecars hold them; undescribed ids are not compared)."""
        return tuple(
            SoftwareDifference(d.field, d.base, d.new, base_id, new_id)
            for base_id, new_id, d in self.across(base, base_ids, new, new_ids)
        )
