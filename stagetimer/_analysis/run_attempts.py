"""The runs of ``timings.json`` as finished attempts: the part of a directory's attempts
its sidecar holds (a reader of markers adds the running, failed and killed ones)."""

from __future__ import annotations

import datetime
from typing import Any

from stagetimer._analysis.attempts import Attempt
from stagetimer._analysis.raw import raw_stages
from stagetimer._analysis.wall_span import moment
from stagetimer._store.rules import is_valid_seconds

__all__ = ["finished_attempts"]


def finished_attempts(
    directory: str, data: dict[str, Any], undated: datetime.datetime
) -> list[Attempt]:
    """The runs of ``timings.json`` as finished attempts (what a reader of markers adds
    to them is the attempts still running, failed or killed); a run without a readable
    ``started_at`` (files of 0.1) is placed at ``undated`` minus its seconds."""
    found = []
    for name, stage in raw_stages(data):
        for run in stage["runs"]:
            seconds = run["seconds"]
            if not is_valid_seconds(seconds):  # flagged by the report; counts for nothing
                continue
            started = moment(run.get("started_at"))
            if started is None:
                started = undated - datetime.timedelta(seconds=min(float(seconds), 1e9))
            found.append(Attempt(
                attempt_id=run.get("attempt_id"), directory=directory, stage=name,
                run_idx=run.get("run_idx"), label=run.get("label"), rank=run.get("rank"),
                started_at=started, state="finished", cause=None, exception=None,
                seconds=float(seconds), ended_between=None, evidence="timings.json",
                hardware_id=run.get("hardware_id"), job=run.get("job"),
            ))
    return found
