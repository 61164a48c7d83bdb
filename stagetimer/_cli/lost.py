"""``stagetimer lost PATH…``: what the attempts under some paths cost, and what was lost."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from stagetimer._cli.stderr import error

if TYPE_CHECKING:
    from stagetimer._analysis.attempts.scan import Attempt

__all__ = ["run"]


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Print the productive and the lost time of the attempts under ``args.paths``; 1 if a
    path, a sidecar or a marker could not be read (each named on standard error)."""
    from stagetimer._analysis.attempts.lost import lost_summary
    from stagetimer._analysis.attempts.scan import scan_attempts
    from stagetimer._render.lost_text import render_lost

    found, problems = scan_attempts(args.paths)
    for problem in problems:
        error("lost", problem.line())
    gpus, hosts, unreadable = _hardware(found)
    if found or not problems:
        sys.stdout.write(render_lost(lost_summary(found, gpus, hosts), found, args.format))
    return 1 if problems or unreadable else 0


def _hardware(
    found: list[Attempt],
) -> tuple[dict[str, int], dict[str, str | None], bool]:
    """Each hardware id's GPU count and host, from the hardware sidecars of the attempts'
    directories; whether one could not be read (each named on standard error)."""
    from stagetimer._analysis.raw import HardwareCache
    from stagetimer._analysis.tree import read_problem
    from stagetimer._errors import SchemaVersionError, SidecarCorruptError
    from stagetimer._format import HARDWARE_FILE

    gpus: dict[str, int] = {}
    hosts: dict[str, str | None] = {}
    unreadable = False
    cache = HardwareCache()
    for directory in dict.fromkeys(a.directory for a in found):
        try:
            described = cache.read(directory).hardware
        except (SidecarCorruptError, SchemaVersionError, OSError) as exc:
            error("lost", read_problem(exc, os.path.join(directory, HARDWARE_FILE)).line())
            unreadable = True
            continue
        for hardware_id, hardware in described.items():
            gpus.setdefault(hardware_id, len(hardware.gpus))
            hosts.setdefault(hardware_id, hardware.host)
    return gpus, hosts, unreadable
