"""What Slurm says of a job array: its throttle (``%N``) and the task ids it still knows.

``scontrol show job --oneliner <array job id>`` prints one line per task record: the
pending ones folded (``ArrayTaskId=4-11%2``), the running and recently ended ones one
each. It runs with a timeout; a missing command, a hang, a refusal or output with no
record of the array raise :class:`ArrayUnreadable` with the reason, never more.
"""

from __future__ import annotations

import re

import attrs

from stagetimer._system.command import CommandUnavailable, run_bounded

__all__ = ["ArrayUnreadable", "ArrayView", "array_view", "parse_array"]

_TIMEOUT = 5.0
_FIELD = re.compile(r"(?:^|\s)(ArrayJobId|ArrayTaskId|ArrayTaskThrottle)=(\S+)")
_MAX_TASKS = 4_000_001  # Slurm's MaxArraySize is at most 4,000,001


class ArrayUnreadable(Exception):
    """Slurm could not be asked, or its answer was not an array's: ``str()`` says why."""


@attrs.frozen
class ArrayView:
    array_job_id: str
    #: at most this many tasks run at once; None: no throttle
    throttle: int | None
    #: the task ids Slurm still knows (pending, running, recently ended)
    task_ids: frozenset[int]


def _task_ids(text: str) -> set[int]:
    """``1,3,5-9:2%4`` as the ids it names."""
    ids: set[int] = set()
    for part in text.split("%", 1)[0].split(","):
        ids.update(_task_range(part, text))
    return ids


def _task_range(part: str, text: str) -> range:
    """One part of ``text``, ``5``, ``5-9`` or ``5-9:2``, as the ids it names."""
    match = re.fullmatch(r"(\d+)(?:-(\d+)(?::(\d+))?)?", part)
    if match is None:
        raise ArrayUnreadable(f"ArrayTaskId={text!r} is not a list of task ids")
    first = int(match[1])
    last = int(match[2] or first)
    step = int(match[3] or 1)
    if last < first or step < 1 or last - first > _MAX_TASKS:
        raise ArrayUnreadable(f"ArrayTaskId={text!r} is not a list of task ids")
    return range(first, last + 1, step)


def parse_array(array_job_id: str, output: str) -> ArrayView:
    """The view from ``scontrol show job --oneliner``'s output."""
    throttle: int | None = None
    ids: set[int] = set()
    records = 0
    for line in output.splitlines():
        fields: dict[str, str] = {m[1]: m[2] for m in _FIELD.finditer(line)}
        if fields.get("ArrayJobId") != array_job_id:
            continue
        records += 1
        if "ArrayTaskId" in fields:
            ids |= _task_ids(fields["ArrayTaskId"])
        limit = fields.get("ArrayTaskThrottle", "")
        if limit.isdigit():
            throttle = int(limit) or None
    if not records:
        raise ArrayUnreadable(f"no record of array job {array_job_id} in scontrol's answer")
    return ArrayView(array_job_id, throttle, frozenset(ids))


def array_view(array_job_id: str, timeout: float = _TIMEOUT) -> ArrayView:
    """Ask ``scontrol`` about ``array_job_id`` (digits only), waiting at most ``timeout``."""
    if not array_job_id.isdigit():
        raise ArrayUnreadable(f"array job id {array_job_id!r} is not a number")
    command = ["scontrol", "show", "job", "--oneliner", array_job_id]
    try:
        code, out, err = run_bounded(command, timeout)
    except CommandUnavailable as exc:
        raise ArrayUnreadable(str(exc)) from None
    if code != 0:
        said = (err.decode("utf-8", "replace").strip().splitlines() or ["no reason given"])
        raise ArrayUnreadable(f"scontrol refused (exit {code}): {said[-1][:200]}")
    return parse_array(array_job_id, out.decode("utf-8", "replace"))
