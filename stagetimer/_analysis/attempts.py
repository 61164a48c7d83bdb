"""What became of each entry into a recorded stage: one :class:`Attempt` per started marker
(and per finished run), with its state decided from evidence, never guessed.

An attempt is *finished* (its run is in ``timings.json``), *failed* (the block raised or
was interrupted: the marker says so), *killed* (evidence shows the writer died without
finishing), *running* (evidence shows the writer still runs) or *unknown* (no evidence
either way). A killed attempt's end is an interval (``ended_between``), with the evidence
that bounds it in one line.
"""

from __future__ import annotations

import datetime
from typing import Any, Literal

import attrs

__all__ = ["Attempt", "Cause", "State"]

State = Literal["finished", "failed", "killed", "running", "unknown"]
Cause = Literal[
    "raised",
    "interrupted",
    "preempted",
    "timeout",
    "out_of_memory",
    "node_fail",
    "cancelled",
    "killed",
]


@attrs.frozen
class Attempt:
    """One entry into a recorded stage, and what became of it."""

    #: 32 hex digits, random, given at entry (``None`` for a run written before markers)
    attempt_id: str | None
    #: the artifact directory (the one holding ``timings.json``), as the caller named it
    directory: str
    stage: str
    run_idx: int | None
    label: str | None
    rank: int | None
    #: when the block started (UTC, aware)
    started_at: datetime.datetime
    state: State
    #: None for finished, running and unknown attempts
    cause: Cause | None
    #: the exception's type name, for ``cause == "raised"`` (and "interrupted")
    exception: str | None
    #: the block's duration, for finished and failed attempts
    seconds: float | None
    #: for killed attempts: (earliest, latest) end in UTC, either None where unbounded
    ended_between: tuple[datetime.datetime | None, datetime.datetime | None] | None
    #: one line: how the state and the end were decided
    evidence: str
    world_size: int | None = None
    #: the writer's host name (``None`` where unknown)
    host: str | None = None
    hardware_id: str | None = None
    software_id: str | None = None
    #: the batch job (``{"scheduler": "slurm", "job_id": ..., "array_job_id": ...,
    #: "array_task_id": ..., "restart_count": ...}``), as runs store it; None outside a job
    job: dict[str, Any] | None = None
