"""The replacement rules (docs/rules.md), applied to the parsed ``timings.json`` in place.

The functions work on the raw JSON mapping so that keys this version does not
know (top level, stage or run) survive every rewrite unchanged.

Ranks: the ranks of one distributed launch (runs with a ``rank``) are independent
writers of the same stages, so a rule that resets or replaces runs touches only the
runs of the record's own rank; the runs without a ``rank`` are one group of their own,
among which the rules work as they always did.
"""

from __future__ import annotations

import math
import sys
from typing import Any, TypeGuard, cast

from stagetimer._errors import InvalidRecordError
from stagetimer._format import AUTO_RESUME_SUFFIX, can_continue

__all__ = [
    "add_seconds",
    "apply_run",
    "insert_run",
    "is_stage",
    "is_valid_seconds",
    "keep_completed_prefix",
    "replace_place",
    "replay_run",
    "run_is_stored",
    "run_key",
    "valid_durations",
    "valid_seconds",
]

_FLOAT_MAX = sys.float_info.max


def is_stage(value: object) -> bool:
    """A top-level value that is an object holding a ``runs`` list is a stage."""
    return isinstance(value, dict) and isinstance(value.get("runs"), list)


def _run_idx(run: object) -> object:
    return run.get("run_idx") if isinstance(run, dict) else None


def _rank(run: object) -> object:
    return run.get("rank") if isinstance(run, dict) else None


def _other_ranks(runs: list[Any], rank: object) -> list[Any]:
    """The runs of ``runs`` that belong to another rank than ``rank`` (None: no rank)."""
    return [r for r in runs if _rank(r) != rank]


def is_valid_seconds(value: object) -> TypeGuard[int | float]:
    """Whether ``value`` is a duration a writer could have written: a number (not a bool)
    from 0 to the largest float.

    A stored value outside that (negative, NaN, an infinity, ``1e999``, an int of 400
    digits, not a number) is kept verbatim in the file but counts for nothing; a
    recorder refuses it. Comparisons of an int with a float are exact in Python: no
    ``OverflowError``, and NaN fails both.
    """
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and 0 <= value <= _FLOAT_MAX
    )


def valid_seconds(run: object) -> float | None:
    """The run's ``seconds`` as a float when a writer could have written it, else None."""
    seconds = run.get("seconds") if type(run) is dict else None
    return float(seconds) if is_valid_seconds(seconds) else None


def valid_durations(values: list[float]) -> list[float]:
    """``values`` (durations as read, floats) without those no writer could have written,
    in their order; ``values`` itself when all are valid (the usual stage)."""
    # A NaN or an infinity makes the sum fail the test, a negative the minimum: two
    # passes in C instead of a call per value.
    if not values or (sum(values, 0.0) <= _FLOAT_MAX and min(values) >= 0.0):
        return values
    kept = [v for v in values if is_valid_seconds(v)]
    # Valid values whose sum overflows fail the first test too: still ``values`` itself.
    return values if len(kept) == len(values) else kept


def add_seconds(total: float, runs: list[Any]) -> float:
    """``total`` plus the valid ``seconds`` of ``runs``, left to right (see ``valid_seconds``).

    A left fold, so the total of a grown list continues the total of its prefix exactly.
    A stored value no writer could have written (negative, non-finite, beyond a float)
    is left out: the total is the sum of the runs a writer could have made, and such a
    value never breaks a new record.
    """
    for run in runs:
        seconds = valid_seconds(run)
        if seconds is not None:
            total += seconds
    return total


def _set_runs(stage: dict[str, Any], runs: list[Any]) -> None:
    stage["runs"] = runs
    stage["total_seconds"] = add_seconds(0.0, runs)


def _order(value: object) -> tuple[int, int | str]:
    # None first, then integers in order; anything odd last, in a stable order.
    if value is None:
        return (0, 0)
    if isinstance(value, int) and not isinstance(value, bool):
        return (1, value)
    return (2, repr(value))


def _upsert_key(run: object) -> tuple[tuple[int, int | str], tuple[int, int | str]]:
    # By run_idx (runs without one first), then by rank: the same order however the
    # ranks' records arrived.
    return (_order(_run_idx(run)), _order(_rank(run)))


def _keep_runs(data: dict[str, Any], name: str, kept: list[Any]) -> None:
    """Stage ``name`` of ``data`` keeps only ``kept``; a stage left with none is removed."""
    if kept:
        _set_runs(data[name], kept)
    else:
        del data[name]


def _clear_continuation(data: dict[str, Any], continuation: str, rank: object) -> None:
    """A reset of a stage clears its continuation's runs of the same rank (all of them
    where no run has a rank); a continuation left with none is removed."""
    if is_stage(data.get(continuation)):
        _keep_runs(data, continuation, _other_ranks(data[continuation]["runs"], rank))


def _existing_stage(data: dict[str, Any], name: str) -> dict[str, Any] | None:
    """Stage ``name`` of ``data``, None when absent; refused when the name holds other data."""
    existing = data.get(name)
    if name in data and not is_stage(existing):  # a stored null is other data too
        raise InvalidRecordError(
            f"stage name {name!r} holds other data in timings.json (not an object with a "
            "'runs' list); choose another stage name",
            name,
        )
    return existing


def run_key(run: object) -> tuple[object, object, object] | None:
    """The place of a run in its stage: its ``(run_idx, label, rank)``, which ``upsert``
    replaces and ``recover`` finds taken; None for a value that is not a run object."""
    if not isinstance(run, dict):
        return None
    return (run.get("run_idx"), run.get("label"), run.get("rank"))


def run_is_stored(data: dict[str, Any], name: str, run: dict[str, Any]) -> bool:
    """Whether stage ``name`` of ``data`` already holds ``run`` (equal in every key)."""
    stage: Any = data.get(name)
    return is_stage(stage) and any(r == run for r in stage["runs"])


def _checked_total(name: str, total: float, run: dict[str, Any]) -> float:
    """``total``, the stage's new total; refused when the durations overflow."""
    if not math.isfinite(total):
        # Only valid runs are summed, so this needs runs that together exceed ~1.8e308 s.
        raise InvalidRecordError(
            f"stage {name!r} would total {total} seconds: the durations overflow", run["seconds"]
        )
    return total


def _upserted(old_runs: list[Any], run: dict[str, Any]) -> list[Any]:
    """Under ``upsert``: ``old_runs`` without the run of ``run``'s run_idx, label and rank,
    plus ``run``, in run_idx order (a new list)."""
    key = run_key(run)
    runs = [r for r in old_runs if run_key(r) != key]
    runs.append(run)
    runs.sort(key=_upsert_key)
    return runs


def apply_run(
    data: dict[str, Any],
    name: str,
    run: dict[str, Any],
    policy: str,
    *,
    trusted_total: bool = False,
) -> None:
    """Record ``run`` into stage ``name`` of ``data`` following ``policy``.

    ``trusted_total``: the stage's ``total_seconds`` is known to be the sum of its runs
    (this process wrote it), so an appended run only adds to it. Nothing is changed
    when the record is refused.
    """
    existing = _existing_stage(data, name)
    if policy != "sequential":
        runs = _upserted(_runs_of(existing), run)
        _put_stage(data, name, existing, runs, _checked_total(name, add_seconds(0.0, runs), run))
    elif existing is None or run.get("run_idx") in (None, 0):
        _start_over(data, name, run, existing)
    else:
        _append(existing, name, run, trusted_total)


def _runs_of(existing: dict[str, Any] | None) -> list[Any]:
    return existing["runs"] if existing is not None else []


def _start_over(
    data: dict[str, Any], name: str, run: dict[str, Any], existing: dict[str, Any] | None
) -> None:
    """A sequential run of ``run_idx`` 0 or none (or the first of its stage): the stage's
    runs of its rank become ``[run]``, and a ``run_idx`` of 0 clears the continuation."""
    rank = run.get("rank")
    runs = [*_other_ranks(_runs_of(existing), rank), run]
    total = _checked_total(name, add_seconds(0.0, runs), run)
    # Refusals are over: from here on ``data`` changes.
    if run.get("run_idx") == 0 and can_continue(name):
        _clear_continuation(data, name + AUTO_RESUME_SUFFIX, rank)
    _put_stage(data, name, existing, runs, total)


def _append(existing: dict[str, Any], name: str, run: dict[str, Any], trusted_total: bool) -> None:
    """A sequential run after the first, appended in place, and the total continued rather
    than recomputed: for a file of many runs the encoder then reuses the text of the
    earlier runs (see encode.py)."""
    runs = existing["runs"]
    start = existing["total_seconds"] if trusted_total else add_seconds(0.0, runs)
    total = _checked_total(name, add_seconds(start, [run]), run)
    runs.append(run)
    existing["total_seconds"] = total


def _put_stage(
    data: dict[str, Any], name: str, existing: dict[str, Any] | None, runs: list[Any],
    total: float,
) -> None:
    """Stage ``name`` holds ``runs`` totalling ``total``: a new stage where there was none."""
    if existing is None:
        data[name] = {"total_seconds": total, "runs": runs}
    else:
        existing["runs"] = runs
        existing["total_seconds"] = total


def insert_run(data: dict[str, Any], name: str, run: dict[str, Any]) -> None:
    """Put ``run`` into stage ``name`` in ``run_idx`` order, no other run changed (what
    ``recover`` does with a rescued run, older than anything saved since: never a rule
    that resets or replaces). Refused like ``apply_run`` when the name holds other data
    or the total overflows; nothing is changed then."""
    existing = _existing_stage(data, name)
    runs = _runs_of(existing)
    position = _insert_position(runs, run.get("run_idx"))
    grown = [*runs[:position], run, *runs[position:]]
    total = _checked_total(name, add_seconds(0.0, grown), run)
    _put_stage(data, name, existing, grown, total)


def _insert_position(runs: list[Any], idx: Any) -> int:
    """Where a run of ``run_idx`` ``idx`` goes in ``runs``: before the first run of a
    greater integer ``run_idx``; last when there is none or ``idx`` is None."""
    if idx is None:
        return len(runs)
    return next(
        (i for i, other in enumerate(runs) if type(o := _run_idx(other)) is int and o > idx),
        len(runs),
    )


def _started(run: object) -> str | None:
    """A run's ``started_at`` (ISO-8601 UTC, ordered as text), None when it has none."""
    value = run.get("started_at") if isinstance(run, dict) else None
    return value if isinstance(value, str) else None


def _same_attempt(a: object, b: dict[str, Any]) -> bool:
    """Whether two runs record the same entry into a stage (the same ``attempt_id``)."""
    ident = b.get("attempt_id")
    return ident is not None and isinstance(a, dict) and a.get("attempt_id") == ident


def replace_place(data: dict[str, Any], name: str, run: dict[str, Any]) -> None:
    """Put ``run`` in place of the runs of its place (stage, ``run_idx``, ``label``,
    ``rank``) in stage ``name``, no other run changed (``recover --prefer rescued``, for
    a rescued run that cannot be ordered against the stored one). Refused like
    ``apply_run``; nothing is changed then."""
    existing = _existing_stage(data, name)
    key = run_key(run)
    kept = [] if existing is None else [r for r in existing["runs"] if run_key(r) != key]
    _checked_total(name, add_seconds(0.0, [*kept, run]), run)
    if existing is not None:
        _set_runs(existing, kept)
    insert_run(data, name, run)


def replay_run(
    data: dict[str, Any], name: str, run: dict[str, Any], policy: str, before: list[Any]
) -> str:
    """Put a rescued ``run`` into stage ``name`` as its save would have, had it not failed.

    ``before``: the stage's runs before this rescue file's records (a rescue file's two
    identical records are two records). Returns ``"already"`` (that record, or the same
    attempt, is stored), ``"older"`` (a run of its place started later),
    ``"unordered"`` (a run of its place is stored and one of the two has no
    ``started_at``, as ``record_timing`` without one writes: nothing tells which is
    newer, and nothing is changed), or ``"stored"``.

    A run newer than every run of its rank in the stage is applied by ``policy``'s
    rules exactly as a direct save (``apply_run``). An older one replays them at its
    time: under ``upsert`` it replaces the older run of its place; under ``sequential``
    a ``run_idx`` of 0 (or none) drops the runs of its rank that started before it and
    of its continuation, and a ``run_idx > 0`` is put in ``run_idx`` order. Refused
    like ``apply_run``; nothing is changed then.
    """
    if any(r == run or _same_attempt(r, run) for r in before):
        return "already"
    existing = _existing_stage(data, name)
    verdict = _against_place(run, before)
    if verdict is None:
        _replay_newer(data, name, run, policy, _runs_of(existing))
    return verdict or "stored"


def _against_place(run: dict[str, Any], before: list[Any]) -> str | None:
    """``"unordered"`` when ``before`` holds a run of ``run``'s place and one of the two has
    no ``started_at`` (nothing tells which is newer: the caller decides), ``"older"`` when
    one of them started at the same time or later, else None."""
    key = run_key(run)
    times = [_started(r) for r in before if run_key(r) == key]
    if not times:
        return None
    started = _started(run)
    if started is None or None in times:
        return "unordered"
    return "older" if max(cast("list[str]", times)) >= started else None


def _replay_newer(
    data: dict[str, Any], name: str, run: dict[str, Any], policy: str, runs: list[Any]
) -> None:
    """Put ``run``, which no run of its place started after, into stage ``name`` (whose
    runs are ``runs``) by ``policy``'s rules as they stood when it started; in
    ``run_idx`` order when it has no ``started_at``."""
    started = _started(run)
    if started is None:
        insert_run(data, name, run)
    elif policy == "upsert" or not _rank_started_after(runs, run, started):
        apply_run(data, name, run, policy)  # under upsert its place holds only older runs
    elif run.get("run_idx") in (None, 0):
        _reset_before(data, name, run, started)
    else:
        insert_run(data, name, run)


def _rank_started_after(runs: list[Any], run: dict[str, Any], started: str) -> bool:
    """Whether a run of ``run``'s rank in ``runs`` started after ``started``."""
    others = _other_ranks(runs, run.get("rank"))
    return any((_started(r) or "") > started for r in runs if r not in others)


def _reset_before(data: dict[str, Any], name: str, run: dict[str, Any], started: str) -> None:
    """A sequential reset at ``started`` replayed: the runs of its rank that started
    before it (or say not when) are dropped, here and in the continuation."""
    rank = run.get("rank")

    def kept(runs: list[Any]) -> list[Any]:
        others = _other_ranks(runs, rank)
        return [r for r in runs if r in others or (_started(r) or "") > started]

    stage = data[name]
    grown = sorted([*kept(stage["runs"]), run], key=lambda r: (_started(r) or ""))
    _checked_total(name, add_seconds(0.0, grown), run)
    _set_runs(stage, grown)
    continuation = name + AUTO_RESUME_SUFFIX
    if can_continue(name) and is_stage(data.get(continuation)):
        _keep_runs(data, continuation, kept(data[continuation]["runs"]))


def keep_completed_prefix(data: dict[str, Any], completed_runs: int) -> None:
    """Resume: indexed stages keep runs with ``run_idx < completed_runs``; others are kept.

    A stage left with no run is removed.
    """
    for name, value in list(data.items()):
        if _is_indexed(value):
            _keep_runs(data, name, _completed(value["runs"], completed_runs))


def _is_indexed(value: Any) -> bool:
    """Whether ``value`` is a stage with at least one run that has a ``run_idx``."""
    return is_stage(value) and any(_run_idx(r) is not None for r in value["runs"])


def _completed(runs: list[Any], completed_runs: int) -> list[Any]:
    """The runs of ``runs`` a resume keeps: those with no integer ``run_idx`` or a
    ``run_idx`` below ``completed_runs``."""
    return [r for r in runs if not isinstance(idx := _run_idx(r), int) or idx < completed_runs]
