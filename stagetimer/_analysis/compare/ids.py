"""The ids runs name (``hardware_id``, ``software_id``) and what differs between two of them.

An id is its description's content, so the differences between two ids are computed
once (``PairCache``), whoever asks: the report's warnings, ``compare``'s hardware and
software sides.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import repeat
from typing import Any, Generic, TypeVar

from stagetimer.hardware import Difference

__all__ = ["PairCache", "distinct_ids"]

_Description = TypeVar("_Description")
_get: Callable[[dict[str, Any], str], Any] = dict.get


def distinct_ids(runs: Iterable[dict[str, Any]], key: str) -> tuple[str, ...]:
    """The distinct values of ``key`` (``"hardware_id"``, ``"software_id"``) over the
    stored ``runs``, first seen first; runs without one (legacy files) name none."""
    # parse_timings let through only a string or null (absent) id: gathered in C
    seen = dict.fromkeys(map(_get, runs, repeat(key)))
    seen.pop(None, None)
    return tuple(seen)


class PairCache(Generic[_Description]):
    """``differ(base, new)`` per pair of ids, computed once (an id is its content)."""

    def __init__(
        self, differ: Callable[[_Description, _Description], list[Difference]]
    ) -> None:
        self._differ = differ
        self._known: dict[tuple[str, str], list[Difference]] = {}

    def between(
        self, base_id: str, base: _Description, new_id: str, new: _Description
    ) -> list[Difference]:
        """The differences between ``base`` (id ``base_id``) and ``new`` (id ``new_id``)."""
        key = (base_id, new_id)
        found = self._known.get(key)
        if found is None:
            found = self._known[key] = self._differ(base, new)
        return found

    def across(
        self,
        base: Mapping[str, _Description],
        base_ids: Sequence[str],
        new: Mapping[str, _Description],
        new_ids: Sequence[str],
    ) -> Iterator[tuple[str, str, Difference]]:
        """``(base_id, new_id, difference)`` between each described id of one side and
        each of the other (``base``, ``new``: id -> description; an id neither describes
        is not compared)."""
        for base_id in base_ids:
            base_value = base.get(base_id)
            if base_value is None:
                continue
            for new_id in new_ids:
                new_value = new.get(new_id)
                if new_value is not None:
                    for found in self.between(base_id, base_value, new_id, new_value):
                        yield base_id, new_id, found
