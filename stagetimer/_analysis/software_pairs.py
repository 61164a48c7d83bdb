"""What differs between the software of the two sides of a ``compare`` pair.

Each software description a side's compared runs point at is compared with each of the
other side's (``stagetimer.software.software_differences``), once per pair of ids: an id
is its content.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from stagetimer._analysis.comparison import SoftwareDifference
from stagetimer.hardware import Difference
from stagetimer.software import Software

__all__ = ["SoftwareDifference", "SoftwareDifferences", "software_ids"]

_get: Callable[[dict[str, Any], str], Any] = dict.get
_SOFTWARE_ID = itertools.repeat("software_id")


def software_ids(stages: Iterable[dict[str, Any]]) -> list[str]:
    """The distinct ``software_id`` of the runs of ``stages`` (stored), first seen first."""
    seen: dict[Any, None] = {}
    for stage in stages:
        seen.update(dict.fromkeys(map(_get, stage["runs"], _SOFTWARE_ID)))
    seen.pop(None, None)  # runs recorded without software, or before it was recorded
    return list(seen)


class SoftwareDifferences:
    """software_differences per pair of software ids, computed once for a whole compare."""

    def __init__(self) -> None:
        self._known: dict[tuple[str, str], list[Difference]] = {}

    def _between(
        self, base_id: str, base: Software, new_id: str, new: Software
    ) -> list[Difference]:
        from stagetimer.software import software_differences

        key = (base_id, new_id)
        found = self._known.get(key)
        if found is None:
            found = self._known[key] = software_differences(base, new)
        return found

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
                    for d in self._between(base_id, base_sw, new_id, new_sw)
                )
        return tuple(found)
