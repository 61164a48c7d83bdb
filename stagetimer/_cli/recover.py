"""``stagetimer recover DIR…``: fold rescue files back into ``timings.json``.

Names of files and records come from a directory anyone in the group may write to:
they are printed escaped (``_escape.escape_text``), never raw to the terminal.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from stagetimer._cli.stderr import error
from stagetimer._escape import escape_text as esc

if TYPE_CHECKING:
    from stagetimer._store.rescue import Recovered

__all__ = ["run"]


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Recover each directory in turn; 1 if a directory could not be recovered, a record
    was refused, or a record cannot be ordered against the stored run of its place (each
    stays in its rescue file, named, with what to do), else 0. Files left alone (their
    writer runs, another user owns them) are named on standard error and are not errors.
    """
    status = 0
    for directory in args.directories:
        status = max(status, _recover(directory, args))
    return status


def _recover(directory: str, args: argparse.Namespace) -> int:
    """Recover one directory and say what became of each rescue file; 1 on a failure."""
    from stagetimer._errors import StageTimerError
    from stagetimer._format import TIMINGS_FILE
    from stagetimer._store.rescue import recover

    try:
        done = recover(directory, owners=args.owners, prefer=args.prefer)
    except (StageTimerError, OSError) as exc:
        error("recover", esc(str(exc)))
        return 1
    if not done:
        print(f"{esc(directory)}: no rescue file, nothing to recover")
    target = esc(os.path.join(directory, TIMINGS_FILE))
    return max((_say(item, directory, target) for item in done), default=0)


def _say(item: Recovered, directory: str, target: str) -> int:
    """What became of one rescue file; 1 where a record was refused or is unordered."""
    path = esc(item.path)
    if item.skipped is not None:
        error("recover", f"{path}: left alone: {esc(item.skipped)}")
        return 0
    for refusal in item.refused:
        error("recover", f"{path}: refused, not stored: {esc(refusal)}")
    for line in item.unordered:
        error("recover", f"{path}: kept, not stored: {esc(line)}")
    if item.unordered:
        where = esc(directory)
        error("recover", (
            f"{path}: kept with {len(item.unordered)} record(s) that cannot be "
            "ordered against the stored runs: run 'stagetimer recover --prefer "
            f"rescued {where}' to store them in place of the stored runs, or "
            f"'stagetimer recover --prefer stored {where}' to keep the stored runs "
            "and drop them"))
    print(f"{path}: {item.stored} record(s) stored into {target}{_outcome(item)}")
    return 1 if item.refused or item.unordered else 0


def _outcome(item: Recovered) -> str:
    """The rest of the stored count's line: the records already there, and what became
    of the rescue file."""
    already = f", {item.already} already there or superseded by newer runs" if item.already else ""
    if item.refused:
        return f"{already}; rescue file kept (refused records)"
    if item.unordered:
        return f"{already}; rescue file kept (records that cannot be ordered)"
    return f"{already}; rescue file removed"
