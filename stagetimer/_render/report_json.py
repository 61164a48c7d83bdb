"""The report as JSON: the documented keys, each run's details, strict (no NaN) and escaped."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stagetimer._analysis.nesting import NESTED_NOTE
from stagetimer._analysis.report import ArtifactReport
from stagetimer._analysis.rows import job_id
from stagetimer._render.json_text import indented_json
from stagetimer._render.report_text import suite_totals
from stagetimer._store.records import RunTiming

__all__ = ["render_json", "report_dict"]

def _run_dict(run: RunTiming) -> dict[str, Any]:
    return {
        "run_idx": run.run_idx,
        "label": run.label,
        "started_at": run.started_at,
        "seconds": run.seconds,
        "hardware_id": run.hardware_id,
        "software_id": run.software_id,
        "rank": run.rank,
        "world_size": run.world_size,
        "cpus": run.cpus,
        "job_id": job_id(run),
        "metadata": run.metadata,
    }


def report_dict(reports: Sequence[ArtifactReport]) -> dict[str, Any]:
    """The JSON-ready form: ``{"artifacts": [{"path", "stages", "legacy_metadata", ...}]}``.

    At the top, beside ``artifacts``: ``runs`` (by seed), ``total_seconds`` (every moment
    once: a nested run's time is inside its parent's), ``nested_runs`` (runs counted
    inside their parent's) and ``nested_note`` (the words, null where none was). Each
    stage's ``runs`` counts seeds; where a seed's records differ by label, ``parts``
    counts them and ``part_name`` names them ("epochs" or "parts"), else both are null;
    ``nested_runs`` and ``nested_seconds`` are its runs inside their parents'.
    Beside the documented keys, each artifact has ``relpath``, ``hardware`` (id ->
    one-line summary, null when undescribed) and ``warnings``; each stage has
    ``median_seconds``, ``stdev_seconds``, ``expected_runs``, ``run_seconds`` and
    ``run_details`` (per run: run_idx, label, started_at, seconds, hardware_id, job_id,
    metadata). ``legacy_metadata`` is ``{}`` or ``{"top_level": {...}, "runs": [...]}``.
    Values that are not finite stay as they are here; ``render_json`` writes them as null
    (they are named in ``warnings``).
    """
    from stagetimer.hardware import summary_line

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
                "run_details": [_run_dict(run) for run in r.runs(s.name)],
                "software_ids": list(s.software_ids),
                "rank_spread": None if s.rank_spread is None else {
                    "ranks": s.rank_spread.ranks,
                    "seeds": s.rank_spread.seeds,
                    "max_seconds": s.rank_spread.max_seconds,
                    "median_seconds": s.rank_spread.median_seconds,
                },
            }
            for s in r.stages
        ]
        hardware = {k: None if v is None else summary_line(v) for k, v in r.hardware.items()}
        artifacts.append(
            {
                "path": r.path,
                "relpath": r.relpath,
                "stages": stages,
                "hardware": hardware,
                "warnings": list(r.warnings),
                "legacy_metadata": legacy,
            }
        )
    runs, total, nested = suite_totals(reports)
    return {
        "artifacts": artifacts,
        "runs": runs,
        "total_seconds": total,
        "nested_runs": nested,
        "nested_note": NESTED_NOTE if nested else None,
    }


def render_json(reports: Sequence[ArtifactReport]) -> str:
    """``report_dict`` as indented, strict JSON text (no NaN, no raw control characters)."""
    return indented_json(report_dict(reports))
