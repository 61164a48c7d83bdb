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

from stagetimer._analysis.attempts import Attempt, scan_attempts

# the reader's own builder of a finished attempt from a stored run (one definition)
from stagetimer._analysis.attempts import _finished as finished_attempt
from stagetimer._analysis.report_model import ArtifactReport
from stagetimer._format import ATTEMPTS_DIR
from stagetimer._store.rules import is_valid_seconds

__all__ = ["drawable", "suite_attempts"]


def drawable(attempt: Attempt) -> bool:
    """Whether ``attempt`` has a place in time: a start, and a valid duration where it
    gives one."""
    if attempt.started_at is None:
        return False
    return attempt.seconds is None or is_valid_seconds(attempt.seconds)


def suite_attempts(reports: Iterable[ArtifactReport]) -> list[Attempt]:
    """Every attempt of the reports' directories that has a place in time. A bad marker
    (``stagetimer lost`` names it) is left out."""
    found: list[Attempt] = []
    for report in reports:
        if os.path.isdir(os.path.join(report.path, ATTEMPTS_DIR)):
            read, _ = scan_attempts([report.path])
            found.extend(a for a in read if drawable(a))
            continue
        for stats in report.stages:
            runs = report.stored_runs(stats.name)
            found.extend(a for run in runs if type(run) is dict
                         and drawable(a := finished_attempt(report.path, stats.name, run)))
    return found
