"""``stagetimer doctor``'s output: a short block per directory, or JSON for scripts."""

from __future__ import annotations

from collections.abc import Sequence

from stagetimer._analysis.doctor import DirectoryReport
from stagetimer._escape import escape_text
from stagetimer._render.json_text import indented_json
from stagetimer.hardware import format_bytes

__all__ = ["render_doctor_json", "render_doctor_text"]

_VERDICT = {"yes": "yes", "no": "NO", "unknown": "unknown"}


def _one(report: DirectoryReport) -> list[str]:
    fs = report.fs_type or "unknown"
    lines = [f"{report.path}"]
    if report.mount_point is not None:
        lines.append(f"  file system:   {fs} from {report.mount_source} on {report.mount_point}")
        lines.append(f"  mount options: {','.join(report.mount_options) or '(none)'}")
    else:
        lines.append(f"  file system:   {fs}")
    lines.append(
        f"  locks exclude other clients: {_VERDICT[report.locks_across_clients]} "
        f"({report.locks_reason})"
    )
    lines.append(f"  saves use:     {report.protocol}: {report.protocol_reason}")
    if report.free_bytes is not None:
        lines.append(f"  free space:    {format_bytes(report.free_bytes)}")
    if not report.findings:
        lines.append("  nothing found that would stop or slow a save")
    for finding in report.findings:
        lines.append(f"  {finding.severity}: {finding.message}")
    return [escape_text(line) for line in lines]


def render_doctor_text(reports: Sequence[DirectoryReport]) -> str:
    """One block per directory, separated by a blank line."""
    return "\n".join("\n".join(_one(r)) + "\n" for r in reports)


def render_doctor_json(reports: Sequence[DirectoryReport]) -> str:
    """``{"directories": [report.to_dict(), ...]}``, indented, terminal-safe."""
    return indented_json({"directories": [r.to_dict() for r in reports]})
