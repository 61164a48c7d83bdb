"""The attempts a suite's timeline draws: each entry into a stage with a start in time.

The attempts are the markers' reader's (``attempts.scan_attempts``): finished runs and
failed, killed, running and unknown attempts. An attempt without a readable start (a
run of an older file), or a finished one whose duration no writer could store, has no
place on a time axis and is left out (the report's tables and warnings still count it).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from stagetimer._analysis.attempts import Attempt, scan_attempts
from stagetimer._store.rules import is_valid_seconds

__all__ = ["drawable", "suite_attempts"]


def drawable(attempt: Attempt) -> bool:
    """Whether ``attempt`` has a place in time: a start, and a valid duration where it
    gives one."""
    if attempt.started_at is None:
        return False
    return attempt.seconds is None or is_valid_seconds(attempt.seconds)


def suite_attempts(paths: Sequence[str | os.PathLike[str]]) -> list[Attempt]:
    """Every attempt under ``paths`` that has a place in time. The problems met (an
    unreadable ``timings.json``: the report names it; a bad marker: ``stagetimer lost``
    names it) leave their directory or marker out."""
    found, _ = scan_attempts(paths)
    return [a for a in found if drawable(a)]
