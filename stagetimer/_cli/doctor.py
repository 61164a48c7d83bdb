"""``stagetimer doctor DIR…``: what each directory gives saves, and what would stop them."""

from __future__ import annotations

import argparse
import sys

from stagetimer._cli.stderr import error

__all__ = ["run"]


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Print the reports; 1 when a directory is missing or a sidecar is unreadable."""
    from stagetimer._analysis.doctor import doctor
    from stagetimer._escape import escape_text
    from stagetimer._render.doctor_text import render_doctor_json, render_doctor_text

    reports = [doctor(d) for d in args.directories]
    status = 0
    for directory, report in zip(args.directories, reports, strict=True):
        wrong = [f for f in report.findings if f.kind == "not_a_directory"]
        if wrong:
            error("doctor", f"{escape_text(directory)}: {wrong[0].message}")
            status = 1
        elif not report.exists:
            error("doctor", f"{escape_text(directory)}: no such directory")
            status = 1
        elif any(f.kind == "corrupt_sidecar" for f in report.findings):
            status = 1  # a sidecar that cannot be read (the report names it)
    out = render_doctor_json(reports) if args.json else render_doctor_text(reports)
    sys.stdout.write(out)
    return status
