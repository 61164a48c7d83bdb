"""``stagetimer doctor DIR…``: what each directory gives saves, and what would stop them."""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_doctor", "run_doctor"]


def add_doctor(commands: Any) -> None:
    """Add the ``doctor`` subcommand to ``commands`` (an argparse subparsers object)."""
    doctor = commands.add_parser(
        "doctor",
        help="check directories: file system, cross-client locking, what would stop a save",
        description="For each DIR: the file system type and mount options, whether its "
        "locks exclude writers on other clients (yes, no or unknown, and why), the protocol "
        "saves use there, and what would stop or slow a save (permissions, group write, free "
        "space, stale claims, rescue files, corrupt sidecars). Reads only. Exit status 1 "
        "when a DIR does not exist or a sidecar cannot be read.",
    )
    doctor.add_argument("directories", nargs="+", metavar="DIR", help="an artifact directory")
    doctor.add_argument("--json", action="store_true",
                        help='print {"directories": [...]} instead of text')
    doctor.set_defaults(run=run_doctor, parser=doctor)


def run_doctor(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Print the reports; 1 when a directory is missing or a sidecar is unreadable."""
    from stagetimer._analysis.doctor import doctor
    from stagetimer._escape import escape_text
    from stagetimer._render.doctor_text import render_doctor_json, render_doctor_text

    reports = [doctor(d) for d in args.directories]
    status = 0
    for directory, report in zip(args.directories, reports, strict=True):
        if not report.exists:
            print(escape_text(f"stagetimer doctor: {directory}: no such directory"),
                  file=sys.stderr)
            status = 1
        elif any(f.kind == "corrupt_sidecar" for f in report.findings):
            status = 1  # a sidecar that cannot be read (the report names it)
    out = render_doctor_json(reports) if args.json else render_doctor_text(reports)
    sys.stdout.write(out)
    return status
