"""The attempts a suite's timeline draws: each entry into a stage with a start in time.

The attempts are the markers' reader's (``attempts``): finished runs, and failed,
killed, running and unknown attempts where a directory holds started markers. A
directory without markers has only finished attempts, read from the runs the report
already parsed (a suite of 1,000 directories is not read twice). An attempt without
a readable start (a run of an older file), or a finished one whose duration no writer
could store, has no place on a time axis and is left out (the report's tables and
warnings still count it).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from stagetimer._analysis.attempts.scan import Attempt, scan_attempts

# the reader's own builder of a finished attempt from a stored run (one definition)
from stagetimer._analysis.attempts.scan import _finished as finished_attempt
from stagetimer._analysis.report_model import ArtifactReport
from stagetimer._format import ATTEMPTS_DIR
from stagetimer._store.rules import is_valid_seconds

__all__ = ["drawable", "suite_attempts"]


def drawable(attempt: Attempt) -> bool:
    """Whether ``attempt`` has a place in time: a start, and a valid duration where it
    gives one, and no value no writer could have written in its marker."""
    if attempt.started_at is None or attempt.odd:
        return False
    return attempt.seconds is None or is_valid_seconds(attempt.seconds)


def suite_attempts(reports: Iterable[ArtifactReport]) -> list[Attempt]:
    """Every attempt of the reports' directories (the page sums them as ``lost`` does;
    its timeline draws those that are ``drawable``). A bad marker (``stagetimer lost``
    names it) is left out."""
    found: list[Attempt] = []
    paths: list[str] = []
    for report in reports:
        if os.path.isdir(os.path.join(report.path, ATTEMPTS_DIR)):
            paths.append(report.path)
        else:
            found.extend(_stored_attempts(report))
    if paths:
        # One reading of every directory with markers: a writer's last sign of life in
        # one of them bounds its killed attempts in the others.
        read, _ = scan_attempts(paths)
        found.extend(read)
    return found


def _stored_attempts(report: ArtifactReport) -> list[Attempt]:
    """The attempts of a directory without markers: its stored runs, each finished."""
    return [finished_attempt(report.path, stats.name, run) for stats in report.stages
            for run in report.stored_runs(stats.name) if type(run) is dict]
