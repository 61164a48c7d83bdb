"""``stagetimer recover DIR…``: fold rescue files back into ``timings.json``."""

from __future__ import annotations

import argparse
import os

from stagetimer._cli.stderr import error

__all__ = ["run"]


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Recover each directory in turn; 1 if one of them could not be recovered."""
    from stagetimer._errors import StageTimerError
    from stagetimer._store.rescue import recover

    status = 0
    for directory in args.directories:
        try:
            done = recover(directory)
        except (StageTimerError, OSError) as exc:
            error("recover", str(exc))
            status = 1
            continue
        for item in done:
            print(
                f"{item.path}: {item.stored} record(s) stored into "
                f"{os.path.join(directory, 'timings.json')}"
                + (f", {item.already} already there" if item.already else "")
                + "; rescue file removed"
            )
        if not done:
            print(f"{directory}: no rescue file, nothing to recover")
    return status
