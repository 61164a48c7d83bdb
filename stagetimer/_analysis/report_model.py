"""The report's records: one stage summarised (``StageStats``), the legacy values a run
stored (``LegacyRun``) and everything said about one artifact directory (``ArtifactReport``).

``report.py`` builds them; the renderers and ``wall_span`` read them.
"""

from __future__ import annotations

from typing import Any

import attrs

from stagetimer._analysis.eta import StageProgress
from stagetimer._analysis.raw import stored_runs
from stagetimer._analysis.seeds import RankSpread
from stagetimer._analysis.tree import Artifact
from stagetimer._store.records import RunTiming
from stagetimer.hardware import Hardware

__all__ = ["ArtifactReport", "LegacyRun", "StageStats"]


@attrs.frozen
class StageStats:
    """One stage of one artifact directory, summarised over the runs a writer could have
    written (``flagged_runs`` others are left out)."""

    name: str
    runs: int
    total_seconds: float
    mean_seconds: float | None
    median_seconds: float | None
    stdev_seconds: float | None
    min_seconds: float | None
    max_seconds: float | None
    #: the distinct hardware ids of the runs, in order of first appearance
    hardware_ids: tuple[str, ...]
    #: each run's seconds as stored, in file order
    run_seconds: tuple[float, ...]
    #: runs without a hardware_id (legacy files)
    runs_without_hardware: int
    #: runs left out of the statistics (a value no writer could have stored)
    flagged_runs: int = 0
    #: how many runs the recorder was told to expect (``Recorder(expected_runs=n)``)
    expected_runs: int | None = None
    #: the earliest and latest ``started_at`` of its runs, as stored (``wall_span.start_range``;
    #: None: none stored)
    first_started_at: str | None = attrs.field(default=None, eq=False)
    last_started_at: str | None = attrs.field(default=None, eq=False)
    #: the distinct software ids of the runs, in order of first appearance
    software_ids: tuple[str, ...] = ()
    #: runs of a distributed launch: each seed counts once (``runs``, the statistics) as
    #: its slowest rank; this says how far its ranks were apart. None without ranks.
    rank_spread: RankSpread | None = None
    #: where a seed's records differ by label (a callback's epochs: ``run_parts``), the
    #: runs counted by seed (``runs`` then counts the parts) and the parts' name
    #: ("epochs" or "parts"); None where each record is a run
    seed_runs: int | None = None
    part_name: str | None = None
    #: runs counted inside their parent's run in totals across stages (``nesting``), and
    #: their seconds (part of ``total_seconds``, the stage's own figure)
    nested_runs: int = 0
    nested_seconds: float = 0.0

    @property
    def counted_runs(self) -> int:
        """The runs as the report counts them: by seed where a seed has parts."""
        return self.runs if self.seed_runs is None else self.seed_runs

    @property
    def outer_seconds(self) -> float:
        """What the stage adds to a total across stages: its total, less the runs that
        lie inside their parent's run."""
        return self.total_seconds - self.nested_seconds


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

    #: the directory as read (its parsed file, its hardware sidecar)
    artifact: Artifact = attrs.field(eq=False, repr=False)
    stages: tuple[StageStats, ...]
    #: every hardware id the runs refer to -> its description (None: not in the sidecar)
    hardware: dict[str, Hardware | None]
    warnings: tuple[str, ...]
    #: top-level legacy values of the file (they describe the writer, not the reader)
    legacy_top_level: dict[str, Any]
    legacy_runs: tuple[LegacyRun, ...]
    #: the stages told how many runs to expect (continuations aside) -> their progress and
    #: time to go, as ``stagetimer watch`` gives them
    progress: dict[str, StageProgress] = attrs.field(factory=dict)

    @property
    def path(self) -> str:
        """The artifact directory."""
        return self.artifact.path

    @property
    def root(self) -> str:
        """The path it was found under."""
        return self.artifact.root

    @property
    def relpath(self) -> str:
        """``path`` relative to ``root``, ``"."`` for the root itself."""
        return self.artifact.relpath

    def stored_runs(self, stage: str) -> list[Any]:
        """The runs of ``stage`` as parsed from the file (mappings, shape checked): what a
        summary over every run reads without building 100,000 run objects."""
        return stored_runs(self.artifact.data, stage)

    def runs(self, stage: str) -> tuple[RunTiming, ...]:
        """The runs of ``stage`` as ``load_timings`` gives them (built on first use)."""
        timing = self.artifact.timings.stages.get(stage)
        return timing.runs if timing is not None else ()
