"""What differs between the metadata of the two sides of a ``compare`` pair.

Metadata is how a user says what a run was (``stage("train", mp="fork", batch=64)``):
two sides that differ there did not run the same thing, whatever the hardware and the
software, and a comparison must say so ("fork vs spawn DataLoaders, 3.26x slower" is
about ``mp``, not the code). For each stage compared, a key whose set of values differs
between the sides is named. A key with a different value in every one of three or more
runs of a side (a seed, a score) describes each run, not a setting: it is not compared.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from stagetimer._format import LEGACY_KEYS, RUN_FIELDS

__all__ = [
    "ABSENT_TEXT",
    "NOT_METADATA",
    "MetadataDifference",
    "metadata_differences",
    "metadata_values",
]

#: the keys of a run that are not metadata: its own fields and legacy values
NOT_METADATA = frozenset(RUN_FIELDS) | frozenset(LEGACY_KEYS)
#: what stands for "no such key in a run": no JSON text is empty
ABSENT_TEXT, _ABSENT = "", "(absent)"


@attrs.frozen
class MetadataDifference:
    """A metadata key of one stage whose values differ between the sides.

    ``base`` and ``new``: the distinct values each side's runs hold (JSON values, sorted
    by their JSON text; ``"(absent)"`` where a run lacks the key).
    """

    stage: str
    key: str
    base: tuple[Any, ...]
    new: tuple[Any, ...]

    def to_dict(self) -> dict[str, Any]:
        """``{"stage", "key", "base": [...], "new": [...]}``."""
        return {"stage": self.stage, "key": self.key, "base": list(self.base),
                "new": list(self.new)}


def _text(value: Any) -> str:
    """One JSON text per value, equal for equal values (``True`` and ``1`` differ)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=True)


def metadata_values(
    runs: Sequence[dict[str, Any]], key: str
) -> dict[str, tuple[Any, int]] | None:
    """``{JSON text: (value, how many runs hold it)}`` of ``key`` over ``runs``, in the
    order first seen (``ABSENT_TEXT``: runs without the key); None when the key holds a
    different value in every one of three or more runs (it names each run).

    The one rule for "metadata values differ": the report's warning and ``compare``'s
    differences both read it (``1``, ``1.0`` and ``True`` are three values).
    """
    found: dict[str, tuple[Any, int]] = {}
    for run in runs:
        value = run.get(key, _ABSENT)
        text = ABSENT_TEXT if value is _ABSENT else _text(value)
        known = found.get(text)
        found[text] = (value, 1) if known is None else (known[0], known[1] + 1)
    if len(runs) >= 3 and len(found) == len(runs):
        return None  # a different value per run: a seed or a score, not a setting
    return found


def _keys(runs: Iterable[dict[str, Any]]) -> set[str]:
    return set().union(*runs) - NOT_METADATA


def metadata_differences(
    stages: Iterable[tuple[str, dict[str, Any], dict[str, Any]]],
) -> tuple[MetadataDifference, ...]:
    """The keys whose values differ, for each ``(name, base stage, new stage)`` (stored).

    >>> base = {"runs": [{"seconds": 1.0, "mp": "fork"}, {"seconds": 1.1, "mp": "fork"}]}
    >>> new = {"runs": [{"seconds": 3.3, "mp": "spawn"}, {"seconds": 3.2, "mp": "spawn"}]}
    >>> metadata_differences([("load", base, new)])
    (MetadataDifference(stage='load', key='mp', base=('fork',), new=('spawn',)),)
    """
    found: list[MetadataDifference] = []
    for name, base, new in stages:
        base_runs, new_runs = base["runs"], new["runs"]
        if base_runs and new_runs:
            found.extend(_stage_differences(name, base_runs, new_runs))
    return tuple(found)


def _stage_differences(name: str, base_runs: Sequence[dict[str, Any]],
                       new_runs: Sequence[dict[str, Any]]) -> list[MetadataDifference]:
    """The keys whose values differ between one stage's runs on each side."""
    found: list[MetadataDifference] = []
    for key in sorted(_keys(base_runs) | _keys(new_runs)):
        left, right = metadata_values(base_runs, key), metadata_values(new_runs, key)
        if left is None or right is None or left.keys() == right.keys():
            continue
        found.append(MetadataDifference(name, key, _values(left), _values(right)))
    return found


def _values(found: dict[str, tuple[Any, int]]) -> tuple[Any, ...]:
    """The values of ``metadata_values``, in the order of their JSON texts."""
    return tuple(found[text][0] for text in sorted(found))
