"""The attempts a suite's timeline draws: each entry into a stage, on its node and rank.

``suite_attempts`` gives what the started markers say (``attempts.attempts``: failed,
killed and running attempts too) where that reader exists, and the finished runs of the
reports otherwise (``finished_attempts``: a run with a readable ``started_at`` and a
duration a writer could store is a finished attempt).
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Iterable, Sequence
from typing import Any

from stagetimer._analysis.attempts import Attempt
from stagetimer._analysis.report_model import ArtifactReport
from stagetimer._store.rules import is_valid_seconds

__all__ = ["finished_attempts", "suite_attempts"]

_UTC = datetime.timezone.utc


def _moment(text: Any) -> datetime.datetime | None:
    """``started_at`` (ISO 8601, UTC) as an aware datetime; None when unreadable."""
    if type(text) is not str:
        return None
    try:
        # Python 3.10's fromisoformat does not read "Z"
        moment = datetime.datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z")
                                                 else text)
    except ValueError:
        return None
    return moment.replace(tzinfo=_UTC) if moment.tzinfo is None else moment.astimezone(_UTC)


def _int(value: Any) -> int | None:
    return value if type(value) is int else None


def _str(value: Any) -> str | None:
    return value if type(value) is str else None


def finished_attempts(reports: Iterable[ArtifactReport]) -> list[Attempt]:
    """One finished ``Attempt`` per stored run that has a readable ``started_at`` and a
    valid ``seconds``, in the order of the reports, stages and runs."""
    found: list[Attempt] = []
    for report in reports:
        for stats in report.stages:
            for run in report.stored_runs(stats.name):
                seconds, started = run.get("seconds"), _moment(run.get("started_at"))
                if started is None or type(seconds) not in (int, float):
                    continue
                seconds = float(seconds)
                if not is_valid_seconds(seconds):
                    continue
                job = run.get("job")
                found.append(Attempt(
                    attempt_id=_str(run.get("attempt_id")), directory=report.path,
                    stage=stats.name, run_idx=_int(run.get("run_idx")),
                    label=_str(run.get("label")), rank=_int(run.get("rank")),
                    started_at=started, state="finished", cause=None, exception=None,
                    seconds=seconds, ended_between=None, evidence="its run is saved",
                    world_size=_int(run.get("world_size")),
                    hardware_id=_str(run.get("hardware_id")),
                    software_id=_str(run.get("software_id")),
                    job=job if type(job) is dict else None,
                ))
    return found


def suite_attempts(
    paths: Sequence[str | os.PathLike[str]], reports: Sequence[ArtifactReport]
) -> list[Attempt]:
    """Every attempt under ``paths``: the markers' reader's where there is one, else the
    reports' finished runs."""
    from stagetimer._analysis import attempts as reader

    read = getattr(reader, "attempts", None)
    if read is None:
        return finished_attempts(reports)
    found: list[Attempt] = read(*paths)
    return found
