"""software_differences: what differs between the software of two runs, named in full.

The commit of the code, whether it had uncommitted edits and which ones (by the hash
of the diff), the Python version, each package added, removed or at another version,
and each accelerator library's version. ``sources`` and reasons are not differences.
Either side may be a :class:`Software` or a description as stored in
``timings_hardware.json``; a missing key reads as unknown.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from stagetimer.hardware import Difference, as_description
from stagetimer.software._model import Software, software_description

__all__ = ["format_software_differences", "software_differences"]

_CODE_FIELDS = ("commit", "dirty", "diff_sha256")


def _as_dict(software: Software | Mapping[str, Any]) -> Mapping[str, Any]:
    return as_description(software, Software, software_description)


def _mapping(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = data.get(key)
    return value if isinstance(value, Mapping) else {}


def software_differences(
    base: Software | Mapping[str, Any], new: Software | Mapping[str, Any]
) -> list[Difference]:
    """The differences between two software descriptions, each a ``Difference(field, base, new)``.

    Fields: ``code.commit``, ``code.dirty``, ``code.diff_sha256``, ``python``,
    ``packages.<distribution>`` (None on the side that did not import it) and
    ``accelerators.<library>``.

    >>> a = {"packages": {"torch": "2.4.1"}}
    >>> b = {"packages": {"torch": "2.5.0", "numpy": "2.1.0"}}
    >>> software_differences(a, b)
    [Difference(field='packages.numpy', base=None, new='2.1.0'), \
Difference(field='packages.torch', base='2.4.1', new='2.5.0')]
    """
    left, right = _as_dict(base), _as_dict(new)
    found = _changed("code.", _mapping(left, "code"), _mapping(right, "code"), _CODE_FIELDS)
    found += _changed("", left, right, ("python",))
    for group in ("packages", "accelerators"):
        old_map, new_map = _mapping(left, group), _mapping(right, group)
        found += _changed(f"{group}.", old_map, new_map, sorted(set(old_map) | set(new_map)))
    return found


def _changed(
    prefix: str, old: Mapping[str, Any], new: Mapping[str, Any], names: Iterable[str]
) -> list[Difference]:
    """A ``Difference`` named ``prefix + name`` for each of ``names`` whose values differ."""
    return [
        Difference(f"{prefix}{name}", old.get(name), new.get(name))
        for name in names
        if old.get(name) != new.get(name)
    ]


def _side(commit: Any, dirty: Any) -> str:
    text = commit[:7] if isinstance(commit, str) else "unknown commit"
    return f"{text} (uncommitted changes)" if dirty is True else text


def _code_words(by_field: dict[str, Difference], base: Mapping[str, Any],
                new: Mapping[str, Any]) -> str | None:
    if not any(f"code.{name}" in by_field for name in _CODE_FIELDS):
        return None
    if "code.commit" in by_field or "code.dirty" in by_field:
        return (
            f"commit {_side(base.get('commit'), base.get('dirty'))} → "
            f"{_side(new.get('commit'), new.get('dirty'))}"
        )
    commit = new.get("commit")
    if isinstance(commit, str):
        return f"other uncommitted changes on commit {commit[:7]}"
    return "other uncommitted changes on the same commit"


def format_software_differences(
    differences: Sequence[Difference],
    base: Software | Mapping[str, Any] | None = None,
    new: Software | Mapping[str, Any] | None = None,
) -> str:
    """The differences in words, ``"; "``-separated, or ``""`` when there are none.

    ``base`` and ``new`` (the two descriptions) let the commit say which side had
    uncommitted changes when only one field of the code differs.

    >>> format_software_differences([
    ...     Difference("code.commit", "1a2b3c4" + "0" * 33, "5d6e7f8" + "0" * 33),
    ...     Difference("code.dirty", False, True),
    ...     Difference("packages.torch", "2.4.1", "2.5.0")])
    'commit 1a2b3c4 → 5d6e7f8 (uncommitted changes); torch 2.4.1 → 2.5.0'
    """
    by_field = {d.field: d for d in differences}
    base_code, new_code = _code_sides(by_field, base, new)
    words: list[str] = []
    code = _code_words(by_field, base_code, new_code)
    if code is not None:
        words.append(code)
    words += [_words(d) for d in differences if not d.field.startswith("code.")]
    return "; ".join(words)


def _code_sides(
    by_field: dict[str, Difference],
    base: Software | Mapping[str, Any] | None,
    new: Software | Mapping[str, Any] | None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The code of each side: as its description has it, with what the differences say
    of it, and ``dirty`` where only a diff's hash says so."""
    base_code, new_code = _code_of(base), _code_of(new)
    for name in _CODE_FIELDS:  # what differs, from the differences themselves
        if f"code.{name}" in by_field:
            base_code[name] = by_field[f"code.{name}"].base
            new_code[name] = by_field[f"code.{name}"].new
    for side in (base_code, new_code):
        if "dirty" not in side and side.get("diff_sha256") is not None:
            side["dirty"] = True  # a diff is only recorded for a dirty work tree
    return base_code, new_code


def _code_of(description: Software | Mapping[str, Any] | None) -> dict[str, Any]:
    return dict(_mapping(_as_dict(description), "code")) if description is not None else {}


def _words(difference: Difference) -> str:
    """A difference of Python, a package or an accelerator library in words."""
    field = difference.field
    name = field.partition(".")[2] if "." in field else "Python"
    old = "not loaded" if difference.base is None else str(difference.base)
    now = "not loaded" if difference.new is None else str(difference.new)
    return f"{name} {old} → {now}"
