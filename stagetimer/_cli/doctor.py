"""``stagetimer doctor DIR…``: what each directory gives saves, and what would stop them."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from stagetimer._cli.stderr import error
from stagetimer._escape import escape_text

if TYPE_CHECKING:
    from stagetimer._analysis.doctor import DirectoryReport

__all__ = ["run"]


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Print the reports; 1 when a directory is missing or a sidecar is unreadable."""
    from stagetimer._analysis.doctor import doctor

    reports = [doctor(d) for d in args.directories]
    status = max((_status(d, r) for d, r in zip(args.directories, reports, strict=True)),
                 default=0)
    out = render_doctor_json(reports) if args.json else render_doctor_text(reports)
    sys.stdout.write(out)
    return status


def _status(directory: str, report: DirectoryReport) -> int:
    """1, said on standard error, when the directory is missing or not one; 1 when a
    sidecar cannot be read (the report names it); else 0."""
    wrong = [f for f in report.findings if f.kind == "not_a_directory"]
    if wrong:
        error("doctor", f"{escape_text(directory)}: {wrong[0].message}")
        return 1
    if not report.exists:
        error("doctor", f"{escape_text(directory)}: no such directory")
        return 1
    return 1 if any(f.kind == "corrupt_sidecar" for f in report.findings) else 0


# --- the output: a short block per directory, or JSON for scripts ---

_VERDICT = {"yes": "yes", "no": "NO", "unknown": "unknown"}


def _one(report: DirectoryReport) -> list[str]:
    from stagetimer.hardware import format_bytes

    lines = [f"{report.path}", *_file_system(report)]
    lines.append(
        f"  locks exclude other clients: {_VERDICT[report.locks_across_clients]} "
        f"({report.locks_reason})"
    )
    lines.append(f"  saves use:     {report.protocol}: {report.protocol_reason}")
    if report.free_bytes is not None:
        lines.append(f"  free space:    {format_bytes(report.free_bytes)}")
    lines += [f"  {finding.severity}: {finding.message}" for finding in report.findings] \
        or ["  nothing found that would stop or slow a save"]
    return [escape_text(line) for line in lines]


def _file_system(report: DirectoryReport) -> list[str]:
    """The directory's file system, and where it is mounted from with which options."""
    fs = report.fs_type or "unknown"
    if report.mount_point is None:
        return [f"  file system:   {fs}"]
    return [f"  file system:   {fs} from {report.mount_source} on {report.mount_point}",
            f"  mount options: {','.join(report.mount_options) or '(none)'}"]


def render_doctor_text(reports: Sequence[DirectoryReport]) -> str:
    """One block per directory, separated by a blank line."""
    return "\n".join("\n".join(_one(r)) + "\n" for r in reports)


def render_doctor_json(reports: Sequence[DirectoryReport]) -> str:
    """``{"directories": [report.to_dict(), ...]}``, indented, terminal-safe."""
    from stagetimer._render.json_text import indented_json

    return indented_json({"directories": [r.to_dict() for r in reports]})
