"""The report as JSON: the documented keys, each run's details, strict (no NaN) and escaped."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stagetimer._analysis.nesting import NESTED_NOTE
from stagetimer._analysis.report import ArtifactReport, StageStats
from stagetimer._analysis.rows import job_id
from stagetimer._render.json_text import indented_json
from stagetimer._render.report_text import suite_totals
from stagetimer._store.records import RunTiming

__all__ = ["RUN_DETAILS", "render_json", "report_dict"]


#: The fields of a run (``RunTiming``) each entry of a stage's ``run_details`` holds, in
#: order; ``job_id`` (the job's id, ``rows.job_id``) and ``metadata`` follow them.
RUN_DETAILS = (
    "run_idx", "label", "started_at", "seconds", "hardware_id", "software_id", "rank",
    "world_size", "cpus",
)


def _run_dict(run: RunTiming) -> dict[str, Any]:
    details = {key: getattr(run, key) for key in RUN_DETAILS}
    details["job_id"] = job_id(run)
    details["metadata"] = run.metadata
    return details


def _legacy_dict(report: ArtifactReport) -> dict[str, Any]:
    """``{}``, or ``{"top_level": {...}, "runs": [...]}`` where a legacy writer left values."""
    if not (report.legacy_top_level or report.legacy_runs):
        return {}
    return {
        "top_level": report.legacy_top_level,
        "runs": [
            {"stage": x.stage, "run_idx": x.run_idx, "label": x.label, **x.values}
            for x in report.legacy_runs
        ],
    }


def _stage_dict(report: ArtifactReport, s: StageStats) -> dict[str, Any]:
    spread = s.rank_spread
    return {
        "name": s.name,
        "runs": s.counted_runs,
        "parts": None if s.seed_runs is None else s.runs,
        "part_name": s.part_name,
        "nested_runs": s.nested_runs,
        "nested_seconds": s.nested_seconds,
        "total_seconds": s.total_seconds,
        "mean_seconds": s.mean_seconds,
        "min_seconds": s.min_seconds,
        "max_seconds": s.max_seconds,
        "hardware_ids": list(s.hardware_ids),
        "median_seconds": s.median_seconds,
        "stdev_seconds": s.stdev_seconds,
        "expected_runs": s.expected_runs,
        "run_seconds": list(s.run_seconds),
        "run_details": [_run_dict(run) for run in report.runs(s.name)],
        "software_ids": list(s.software_ids),
        "rank_spread": None if spread is None else {
            "ranks": spread.ranks,
            "seeds": spread.seeds,
            "max_seconds": spread.max_seconds,
            "median_seconds": spread.median_seconds,
        },
    }


def _artifact_dict(report: ArtifactReport) -> dict[str, Any]:
    from stagetimer.hardware import summary_line

    hardware = {k: None if v is None else summary_line(v) for k, v in report.hardware.items()}
    return {
        "path": report.path,
        "relpath": report.relpath,
        "stages": [_stage_dict(report, s) for s in report.stages],
        "hardware": hardware,
        "warnings": list(report.warnings),
        "legacy_metadata": _legacy_dict(report),
    }


def report_dict(reports: Sequence[ArtifactReport]) -> dict[str, Any]:
    """The JSON-ready form: ``{"artifacts": [...], "runs", "total_seconds", "nested_runs",
    "nested_note"}``.

    At the top, beside ``artifacts``: ``runs`` (by seed), ``total_seconds`` (every moment
    once: a nested run's time is inside its parent's), ``nested_runs`` (runs counted
    inside their parent's) and ``nested_note`` (the words, null where none was).
    Each artifact has ``path``, ``relpath``, ``stages``, ``hardware`` (id -> one-line
    summary, null when undescribed), ``warnings`` and ``legacy_metadata`` (``{}`` or
    ``{"top_level": {...}, "runs": [...]}``).
    Each stage has ``name``; ``runs`` (counts seeds); ``parts`` and ``part_name``
    (where a seed's records differ by label, ``parts`` counts them and ``part_name``
    names them, "epochs" or "parts", else both are null); ``nested_runs`` and
    ``nested_seconds`` (its runs inside their parents'); ``total_seconds``,
    ``mean_seconds``, ``min_seconds``, ``max_seconds``, ``hardware_ids``,
    ``median_seconds``, ``stdev_seconds``, ``expected_runs``, ``run_seconds``,
    ``run_details``, ``software_ids`` and ``rank_spread`` (null, or ``ranks``, ``seeds``,
    ``max_seconds``, ``median_seconds``).
    Each entry of ``run_details`` holds the run's fields of ``RUN_DETAILS`` (run_idx,
    label, started_at, seconds, hardware_id, software_id, rank, world_size, cpus), then
    job_id and metadata.
    Values that are not finite stay as they are here; ``render_json`` writes them as null
    (they are named in ``warnings``).
    """
    runs, total, nested = suite_totals(reports)
    return {
        "artifacts": [_artifact_dict(r) for r in reports],
        "runs": runs,
        "total_seconds": total,
        "nested_runs": nested,
        "nested_note": NESTED_NOTE if nested else None,
    }


def render_json(reports: Sequence[ArtifactReport]) -> str:
    """``report_dict`` as indented, strict JSON text (no NaN, no raw control characters)."""
    return indented_json(report_dict(reports))
