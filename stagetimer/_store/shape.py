"""What the JSON of each sidecar must look like: the types the format fixes (docs/format.md).

A sidecar that parses but has a known field of the wrong JSON type is corrupt for
every reader and writer alike; a value of the right type that no writer could have
written (a negative ``seconds``) is not, and is kept.
"""

from __future__ import annotations

import functools
import types
import typing
from typing import Any

from stagetimer._errors import SidecarCorruptError, short_repr
from stagetimer._format import RESOURCE_FIELDS, RunTiming, stored_fields

__all__ = [
    "check_hardware_shape",
    "check_timings_shape",
    "hardware_problem",
    "json_type",
    "run_problem",
    "software_problem",
]

_short = short_repr


#: The JSON name of a value's type, by the Python types that hold it (a bool before int).
_JSON_TYPES: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (type(None), "null"),
    (bool, "a boolean"),
    ((int, float), "a number"),
    (str, "a string"),
    (list, "an array"),
)


def json_type(value: object) -> str:
    """The JSON name of ``value``'s type."""
    return next((name for kinds, name in _JSON_TYPES if isinstance(value, kinds)), "an object")


def _is_number(value: object) -> bool:
    return type(value) is float or type(value) is int


_NONE = type(None)
#: ``(field, allowed types, words)`` for each run field, in the format's order, from the
#: class that defines a run: every field but ``seconds`` may be null (absent).
_RUN_TYPES = tuple((key, spec.kinds, spec.words) for key, spec in stored_fields(RunTiming))
_KINDS = {key: kinds for key, kinds, _ in _RUN_TYPES}


def run_problem(run: object) -> str | None:
    """What is wrong with one run's known field types (``is a number, expected an object``,
    ``has 'label' a number, expected a string``), or None; the caller says which run."""
    if type(run) is not dict:
        return f"is {json_type(run)}, expected an object"
    if "seconds" not in run:
        return "has no 'seconds', expected a number"
    for key, kinds, words in _RUN_TYPES:
        value = run.get(key)
        if type(value) not in kinds:
            return f"has {key!r} {json_type(value)}, expected {words}"
    problem = _resources_problem(run.get("resources"))
    return None if problem is None else f"has {problem}"


def _check_run(path: str, name: str, i: int, run: object) -> None:
    problem = run_problem(run)
    if problem is not None:
        raise SidecarCorruptError(path, f"stage {_short(name)} run {i} {problem}")


def _resources_problem(resources: dict[str, Any] | None) -> str | None:
    """What is wrong with a run's ``resources``: each known value a number where present
    (a negative one parses and is kept, as a negative ``seconds`` is)."""
    if resources is None:
        return None
    for key in RESOURCE_FIELDS:
        value = resources.get(key)
        if value is not None and not _is_number(value):
            return f"'resources' {key!r} {json_type(value)}, expected a number"
    return None


def _runs_fit(runs: list[Any]) -> bool:
    """Whether every run is an object whose fields have their types (the usual file).

    A suite holds a hundred thousand runs: this loop only tests, and ``_check_run``
    repeats the test run by run to say what is wrong. It visits the fields a run holds
    (an absent field is null, which every field but ``seconds`` may be), not every field
    the format knows.
    """
    kinds_of = _KINDS.get
    for run in runs:
        if type(run) is not dict or "seconds" not in run:
            return False
        for key, value in run.items():
            kinds = kinds_of(key)
            if kinds is not None and type(value) not in kinds:
                return False
        if "resources" in run and _resources_problem(run["resources"]) is not None:
            return False
    return True


# A stage's own keys, checked where present: (key, whether a value fits, what is expected).
_STAGE_KEYS: tuple[tuple[str, typing.Callable[[object], bool], str], ...] = (
    ("runs", lambda value: type(value) is list, "an array"),
    ("total_seconds", _is_number, "a number"),
    ("expected_runs", lambda value: value is None or type(value) is int, "an integer"),
)


def _check_stage(path: str, name: str, stage: dict[str, Any]) -> None:
    for key, fits, words in _STAGE_KEYS:
        if key in stage and not fits(stage[key]):
            raise SidecarCorruptError(
                path,
                f"stage {_short(name)} has {key!r} {json_type(stage[key])}, expected {words}",
            )
    runs = stage["runs"]
    if not _runs_fit(runs):
        for i, run in enumerate(runs):
            _check_run(path, name, i, run)


def check_timings_shape(path: str, data: dict[str, Any]) -> None:
    """Refuse a ``timings.json`` mapping whose stages do not have the format's types.

    A top-level object with a ``runs`` key is a stage: ``runs`` is a list of objects,
    each with a number ``seconds`` and, where present, a string ``hardware_id``,
    ``label`` and ``started_at``, an integer ``run_idx``, an object ``job`` and an object
    ``resources`` of numbers; the
    stage's ``total_seconds`` is a number and ``expected_runs`` an integer.
    """
    for name, stage in data.items():
        if type(stage) is dict and "runs" in stage:
            _check_stage(path, name, stage)


# -- timings_hardware.json --------------------------------------------------------------

# A checker per type hint of the attrs classes of the description: the JSON a value of
# that type is stored as. At least as strict as the loader's cattrs structuring, so that
# a description the loader refuses is refused by a save as well.
_Check = typing.Callable[[object], "str | None"]


def _at(where: str, problem: str) -> str:
    """``where`` and the ``problem`` found inside it: ``.cpu.affinity[1] is a boolean``."""
    return f"{where}{'' if problem[0] in '.[' else ' '}{problem}"


def _expect(kinds: tuple[type, ...], words: str) -> _Check:
    def check(value: object) -> str | None:
        ok = type(value) in kinds
        return None if ok else f"is {json_type(value)}, expected {words}"

    return check


def _union(checks: list[_Check], words: str, inner: _Check | None = None) -> _Check:
    """One of ``checks`` must pass. ``inner``: the check of the one member that is not
    null (``CodeInfo | None``): a value that is not null says what is wrong inside it
    (``.code.dirty is a string``) instead of only that the whole does not fit."""

    def check(value: object) -> str | None:
        if any(c(value) is None for c in checks):
            return None
        if inner is not None and value is not None:
            return inner(value)
        return f"is {json_type(value)}, expected {words}"

    return check


def _each(item: _Check, container: type) -> _Check:
    """Every element of an array (``container`` list) or value of an object (dict) checked
    by ``item``; the first problem is named by its index or key."""
    words = "an array" if container is list else "an object"

    def check(value: object) -> str | None:
        if type(value) is not container:
            return f"is {json_type(value)}, expected {words}"
        pairs = value.items() if isinstance(value, dict) else enumerate(value)  # type: ignore[arg-type]
        for key, element in pairs:
            problem = item(element)
            if problem is not None:
                return _at(f"[{key if type(key) is int else short_repr(key)}]", problem)
        return None

    return check


def _fields(cls: type) -> _Check:
    import attrs

    hints = typing.get_type_hints(cls)
    checks = {f.name: _checker(hints[f.name]) for f in attrs.fields(cls)}

    def check(value: object) -> str | None:
        if type(value) is not dict:
            return f"is {json_type(value)}, expected an object"
        for name, field_check in checks.items():
            if name in value:
                problem = field_check(value[name])
                if problem is not None:
                    return _at(f".{name}", problem)
        return None

    return check


def _float_check(value: object) -> str | None:
    """A ``float`` field: a number the loader's ``float()`` converts (an integer literal
    beyond the largest float is a JSON number, yet no float: the loader refuses it)."""
    if type(value) is float:
        return None
    if type(value) is not int:
        return f"is {json_type(value)}, expected a number"
    try:
        float(value)
    except OverflowError:
        return "is an integer too large for a float, expected a number"
    return None


#: The JSON a scalar type hint is stored as: the Python types that hold it, and its name.
_SCALARS: dict[Any, tuple[tuple[type, ...], str]] = {
    _NONE: ((_NONE,), "null"),
    bool: ((bool,), "a boolean"),
    int: ((int,), "an integer"),
    float: ((int, float), "a number"),
    str: ((str,), "a string"),
}


def _union_checker(hint: Any) -> _Check:
    """A check of ``X | Y``: one member's check must pass; where one member is not
    null, its check says what is wrong inside a value."""
    members = typing.get_args(hint)
    words = " or ".join(_words(m) for m in members)
    checks = [_checker(m) for m in members]
    others = [c for m, c in zip(members, checks, strict=True) if m is not _NONE]
    return _union(checks, words, others[0] if len(others) == 1 else None)


#: A container type hint: the index of its element's type among its arguments, and the
#: JSON container it is stored as.
_CONTAINERS: dict[Any, tuple[int, type]] = {tuple: (0, list), list: (0, list), dict: (1, dict)}


def _checker(hint: Any) -> _Check:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return _union_checker(hint)
    if hint is float:
        return _float_check
    if hint in _SCALARS:
        return _expect(*_SCALARS[hint])
    if origin in _CONTAINERS:
        element, container = _CONTAINERS[origin]
        return _each(_checker(typing.get_args(hint)[element]), container)
    if hint is Any:
        return lambda value: None
    return _fields(hint)  # an attrs class


def _words(hint: Any) -> str:
    if hint in _SCALARS:
        return _SCALARS[hint][1]
    origin = typing.get_origin(hint)
    return "an array" if origin in (tuple, list) else "an object"


@functools.cache
def _description_check() -> _Check:
    from stagetimer.hardware import Hardware  # the description's own classes

    return _fields(Hardware)


@functools.cache
def _software_check() -> _Check:
    from stagetimer.software import Software

    return _fields(Software)


def hardware_problem(description: object) -> str | None:
    """What is wrong with the shape of one hardware description (``.cpu.count is a
    string, expected an integer``), or None."""
    return _description_check()(description)


def software_problem(description: object) -> str | None:
    """What is wrong with the shape of one software description, or None."""
    return _software_check()(description)


def check_hardware_shape(path: str, data: dict[str, Any]) -> None:
    """Refuse a ``timings_hardware.json`` mapping whose descriptions do not have the
    types of ``stagetimer.hardware.Hardware`` (and, under ``software``, of
    ``stagetimer.software.Software``); unknown keys are allowed."""
    _check_descriptions(path, data, "hardware", hardware_problem)
    if "software" in data:  # absent when written before 0.3, or by a recorder told not to
        _check_descriptions(path, data, "software", software_problem)


def _check_descriptions(
    path: str, data: dict[str, Any], section: str, problem_of: _Check
) -> None:
    """Refuse ``data[section]`` unless it is an object of descriptions ``problem_of`` passes."""
    entries = data.get(section)
    if type(entries) is not dict:
        what = json_type(entries) if section in data else "missing"
        raise SidecarCorruptError(path, f"{section!r} is {what}, expected an object")
    for key, entry in entries.items():
        problem = problem_of(entry)
        if problem is not None:
            raise SidecarCorruptError(path, _at(f"{section} {short_repr(key)}", problem))
