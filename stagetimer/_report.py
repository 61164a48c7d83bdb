"""The report: find the sidecars under some paths, summarise each stage, render text or JSON.

Everything here only reads. No lock is taken (a lock file would be a write): the
sidecars are replaced atomically, so a reader sees a whole old or a whole new
file. Problems (a missing path, a sidecar that does not parse) are returned as
``Problem`` values beside the directories that could be read, so one bad
directory never hides the others.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from stagetimer._records import Timings
from stagetimer._sidecar import HARDWARE_FILE
from stagetimer._tree import Problem, scan_tree
from stagetimer.hardware import Hardware
from stagetimer.hardware._show import format_bytes, summary_line

__all__ = [
    "ArtifactReport",
    "LegacyRun",
    "Problem",
    "StageStats",
    "build_report",
    "format_seconds",
    "render_json",
    "render_text",
    "report_dict",
]


@attrs.frozen
class StageStats:
    """One stage of one artifact directory, summarised."""

    name: str
    runs: int
    total_seconds: float
    mean_seconds: float | None
    min_seconds: float | None
    max_seconds: float | None
    #: the distinct hardware ids of the runs, in order of first appearance
    hardware_ids: tuple[str, ...]
    #: each run's seconds, in file order
    run_seconds: tuple[float, ...]
    #: runs without a hardware_id (legacy files)
    runs_without_hardware: int


@attrs.frozen
class LegacyRun:
    """``system_ram_gb`` / ``gpu_ram_gb`` that a legacy writer stored in one run."""

    stage: str
    run_idx: int | None
    label: str | None
    values: dict[str, Any]


@attrs.frozen
class ArtifactReport:
    """Everything the report says about one artifact directory."""

    path: str
    stages: tuple[StageStats, ...]
    #: every hardware id the runs refer to -> its description (None: not in the sidecar)
    hardware: dict[str, Hardware | None]
    warnings: tuple[str, ...]
    #: top-level legacy values of the file (they describe the writer, not the reader)
    legacy_top_level: dict[str, Any]
    legacy_runs: tuple[LegacyRun, ...]


def _stage_stats(name: str, seconds: Sequence[float], ids: Sequence[str | None]) -> StageStats:
    count = len(seconds)
    total = sum(seconds, 0.0)  # left to right, as the writer sums total_seconds
    distinct = tuple(dict.fromkeys(i for i in ids if i is not None))
    return StageStats(
        name=name,
        runs=count,
        total_seconds=total,
        mean_seconds=total / count if count else None,
        min_seconds=min(seconds) if count else None,
        max_seconds=max(seconds) if count else None,
        hardware_ids=distinct,
        run_seconds=tuple(seconds),
        runs_without_hardware=sum(1 for i in ids if i is None),
    )


def _allocation_note(hw_id: str, hw: Hardware) -> str | None:
    """Where the process could use less than the node: its times do not speak for the node."""
    parts = []
    node_cpus = hw.cpu.node_logical_cpus
    if node_cpus and 0 < hw.cpu.logical_cpus < node_cpus:
        parts.append(f"ran on {hw.cpu.logical_cpus} of {node_cpus} CPUs")
    quota = hw.cpu.quota_cpus
    if quota is not None and hw.cpu.logical_cpus and quota < hw.cpu.logical_cpus:
        parts.append(f"a CPU quota of {quota:g} of the {hw.cpu.logical_cpus} CPUs it may run on")
    limit, node = hw.memory.limit_bytes, hw.memory.node_total_bytes
    if limit is not None and node is not None and limit < node:
        parts.append(f"{format_bytes(limit)} of the node's {format_bytes(node)} memory")
    if not parts:
        return None
    return f"{hw_id}: the allocation was smaller than the node: {', '.join(parts)}"


def _analyse(path: str, timings: Timings, described: dict[str, Hardware]) -> ArtifactReport:
    stages: list[StageStats] = []
    legacy_runs: list[LegacyRun] = []
    warnings: list[str] = []
    referenced: dict[str, int] = {}
    for name, stage in timings.stages.items():
        stats = _stage_stats(
            name, [r.seconds for r in stage.runs], [r.hardware_id for r in stage.runs]
        )
        stages.append(stats)
        for run in stage.runs:
            if run.hardware_id is not None:
                referenced[run.hardware_id] = referenced.get(run.hardware_id, 0) + 1
            if run.legacy_metadata:
                legacy_runs.append(LegacyRun(name, run.run_idx, run.label, run.legacy_metadata))
        if len(stats.hardware_ids) > 1:
            warnings.append(
                f"stage {name}: its {stats.runs} runs span {len(stats.hardware_ids)} hardware "
                f"ids ({', '.join(stats.hardware_ids)}); their times are not comparable"
            )
    hardware: dict[str, Hardware | None] = {}
    for hw_id, count in referenced.items():
        hw = hardware[hw_id] = described.get(hw_id)
        if hw is None:
            warnings.append(
                f"{hw_id}: {count} run(s) refer to it but {HARDWARE_FILE} does not describe it"
            )
        elif (note := _allocation_note(hw_id, hw)) is not None:
            warnings.append(note)
    return ArtifactReport(
        path=path,
        stages=tuple(stages),
        hardware=hardware,
        warnings=tuple(warnings),
        legacy_top_level=dict(timings.legacy_metadata),
        legacy_runs=tuple(legacy_runs),
    )


def build_report(paths: Iterable[str]) -> tuple[list[ArtifactReport], list[Problem]]:
    """Read every artifact directory at or under ``paths``; never writes anything.

    A directory whose ``timings.json`` cannot be read is left out (its problem is
    returned); one whose ``timings_hardware.json`` cannot be read is reported with
    its hardware undescribed, and the problem is returned too.
    """
    artifacts, problems = scan_tree(paths)
    return [_analyse(a.path, a.timings, a.hardware.hardware) for a in artifacts], problems


# -- rendering -------------------------------------------------------------------------------


def format_seconds(value: float | None) -> str:
    """A duration with its unit: ``120 µs``, ``77.8 ms``, ``12.34 s`` (JSON keeps raw seconds)."""
    if value is None:
        return "-"
    if value < 1e-3:
        return f"{value * 1e6:.0f} \N{MICRO SIGN}s"
    if value < 1:
        return f"{value * 1e3:.1f} ms"
    return f"{value:.2f} s"


def _legacy_values(values: dict[str, Any]) -> str:
    return ", ".join(f"{key}={json.dumps(value)}" for key, value in values.items())


def _render_artifact(report: ArtifactReport) -> list[str]:
    lines = [report.path]
    if not report.stages:
        lines.append("  (no stages recorded)")
    several = len(report.hardware) > 1
    header = ["stage", "runs", "total", "mean", "min", "max"]
    if several:
        header.append("hardware")
    rows = [header]
    for s in report.stages:
        row = [s.name, str(s.runs), *map(format_seconds, (s.total_seconds, s.mean_seconds))]
        row += [format_seconds(s.min_seconds), format_seconds(s.max_seconds)]
        if several:
            row.append(", ".join(s.hardware_ids) or "-")
        rows.append(row)
    if report.stages:
        widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
        for row in rows:
            cells = [row[0].ljust(widths[0])]
            cells += [cell.rjust(width) for cell, width in zip(row[1:6], widths[1:6], strict=True)]
            cells += row[6:]
            lines.append("  " + "  ".join(cells).rstrip())
    unknown = sum(s.runs_without_hardware for s in report.stages)
    if report.hardware or unknown:
        lines.append("  measured on:")
        for hw_id, hw in report.hardware.items():
            shown = "not described in " + HARDWARE_FILE if hw is None else summary_line(hw)
            lines.append(f"    {hw_id}: {shown}")
        if unknown:
            lines.append(f"    {unknown} run(s) without a hardware_id (legacy): hardware unknown")
    lines.extend(f"  warning: {warning}" for warning in report.warnings)
    if report.legacy_top_level or report.legacy_runs:
        lines.append(
            "  legacy metadata, recorded by the writer (about the machine that wrote the file):"
        )
        if report.legacy_top_level:
            lines.append(f"    file: {_legacy_values(report.legacy_top_level)}")
        for run in report.legacy_runs:
            where = run.stage
            if run.run_idx is not None:
                where += f" run {run.run_idx}"
            if run.label is not None:
                where += f" ({run.label})"
            lines.append(f"    {where}: {_legacy_values(run.values)}")
    return lines


def render_text(reports: Sequence[ArtifactReport]) -> str:
    """The human report: one block per artifact directory, a blank line between blocks."""
    return "\n\n".join("\n".join(_render_artifact(r)) for r in reports) + ("\n" if reports else "")


def report_dict(reports: Sequence[ArtifactReport]) -> dict[str, Any]:
    """The JSON-ready form: ``{"artifacts": [{"path", "stages", "legacy_metadata", ...}]}``.

    Beside the keys the contract fixes, each artifact has ``hardware`` (id -> one-line
    summary, null when undescribed) and ``warnings``; each stage has ``run_seconds``.
    ``legacy_metadata`` is ``{}`` or ``{"top_level": {...}, "runs": [...]}``.
    """
    artifacts = []
    for r in reports:
        legacy: dict[str, Any] = {}
        if r.legacy_top_level or r.legacy_runs:
            legacy = {
                "top_level": r.legacy_top_level,
                "runs": [
                    {"stage": x.stage, "run_idx": x.run_idx, "label": x.label, **x.values}
                    for x in r.legacy_runs
                ],
            }
        stages = [
            {
                "name": s.name,
                "runs": s.runs,
                "total_seconds": s.total_seconds,
                "mean_seconds": s.mean_seconds,
                "min_seconds": s.min_seconds,
                "max_seconds": s.max_seconds,
                "hardware_ids": list(s.hardware_ids),
                "run_seconds": list(s.run_seconds),
            }
            for s in r.stages
        ]
        hardware = {k: None if v is None else summary_line(v) for k, v in r.hardware.items()}
        artifacts.append(
            {
                "path": r.path,
                "stages": stages,
                "hardware": hardware,
                "warnings": list(r.warnings),
                "legacy_metadata": legacy,
            }
        )
    return {"artifacts": artifacts}


def render_json(reports: Sequence[ArtifactReport]) -> str:
    """``report_dict`` as indented JSON text."""
    return json.dumps(report_dict(reports), indent=2, ensure_ascii=False) + "\n"
