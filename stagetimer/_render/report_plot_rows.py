"""The rows of ``stagetimer report --plot``: each directory's bars, laid out over pages.

A row is one artifact directory under its group (the environment: its path without
the last part). Its bars are the mean per seed of a stage family (training,
``checkpoint_save``, ``nashconv``) or of another stage, with the seeds' auto-resume
continuation as the bar's hatched end. No matplotlib here: ``report_plot`` draws
what this module computes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import attrs

from stagetimer._analysis.folding import seed_times
from stagetimer._analysis.report import ArtifactReport, StageStats
from stagetimer._analysis.stats import summarise
from stagetimer._analysis.tree import relative_paths
from stagetimer._escape import escape_text
from stagetimer._format import AUTO_RESUME_SUFFIX, continued_stage
from stagetimer.stages import is_training

__all__ = ["FAMILIES", "ROWS_PER_PAGE", "Bar", "Row", "layout", "rows"]

#: rows (directories and environment headings) on one page
ROWS_PER_PAGE = 40
FAMILIES = ("training", "checkpoint_save", "nashconv")


@attrs.frozen
class Bar:
    """One directory's bar in one family panel."""

    base: float  # mean per seed of the stage itself
    resumed: float  # mean per seed of its continuation
    # each seed: its run plus its continuation (a seed with only a continuation included)
    seeds: tuple[float, ...]
    stdev: float | None


@attrs.frozen
class Row:
    group: str
    label: str
    bars: dict[str, Bar]
    others: dict[str, Bar]  # other stage -> its bar


def _bar(report: ArtifactReport, stage: StageStats, resume: StageStats | None) -> Bar | None:
    times = seed_times(
        report.stored_runs(stage.name),
        report.stored_runs(resume.name) if resume is not None else [],
    )
    if not times:
        return None
    seeds = tuple(base + resumed for base, resumed in times)
    base = sum(b for b, _ in times) / len(times)
    per_seed = summarise(seeds, quartiles=False)
    assert per_seed.mean is not None  # times is not empty
    stdev = None if per_seed.stdev is None else _drawn(per_seed.stdev)
    return Bar(_drawn(base), _drawn(per_seed.mean) - _drawn(base), tuple(map(_drawn, seeds)),
                stdev)


#: the longest duration drawn (about 32 million years): a duration the format allows (up
#: to 1.8e308 s) is drawn at this edge, where matplotlib's axes still compute their ticks
_LONGEST_DRAWN = 1e15


def _drawn(seconds: float) -> float:
    return seconds if seconds < _LONGEST_DRAWN else _LONGEST_DRAWN


def _family(name: str) -> str | None:
    if is_training(name):
        return "training"
    return name if name in FAMILIES else None


def rows(reports: Sequence[ArtifactReport]) -> list[Row]:
    relative = relative_paths([r.path for r in reports])
    return [_row(report, rel) for report, rel in zip(reports, relative, strict=True)]


def _stage_bars(report: ArtifactReport) -> Iterator[tuple[str, Bar]]:
    """Each stage's bar, its continuation drawn as the bar's hatched end (not a bar of its
    own); a stage without a stored run has none."""
    by_name = {s.name: s for s in report.stages}
    for s in report.stages:
        if continued_stage(s.name) in by_name:
            continue
        bar = _bar(report, s, by_name.get(s.name + AUTO_RESUME_SUFFIX))
        if bar is not None:
            yield s.name, bar


def _row(report: ArtifactReport, rel: str) -> Row:
    """A directory's row: the first stage of each family as its bar, the rest as others."""
    bars: dict[str, Bar] = {}
    others: dict[str, Bar] = {}
    for name, bar in _stage_bars(report):
        family = _family(name)
        if family is None or family in bars:
            others[name] = bar
        else:
            bars[family] = bar
    group, _, label = rel.rpartition("/")
    return Row(escape_text(group), escape_text(label or rel), bars, others)

def layout(rows: Sequence[Row]) -> list[list[tuple[str, Row | None]]]:
    """Pages of lines: a group heading ``("group", None)`` before its rows; a group is
    split over pages only when it alone is longer than a page (its heading repeated)."""
    groups: dict[str, list[Row]] = {}
    for row in rows:
        groups.setdefault(row.group, []).append(row)
    headed = len(groups) > 1 or next(iter(groups)) != ""
    pages: list[list[tuple[str, Row | None]]] = [[]]
    for group, members in groups.items():
        _place(pages, group, members, headed=headed)
    return pages


def _starts_a_page(room: int, left: int, fits_a_page: bool) -> bool:
    """Whether the rows left go on a new page: fewer than three fit on this one, or the
    group fits a page and would be split here (a group that fits a page is never split)."""
    return room < 3 or (fits_a_page and room < left)


def _place(pages: list[list[tuple[str, Row | None]]], group: str, members: list[Row], *,
           headed: bool) -> None:
    """Put a group's rows on the last page, and on new pages as they fill."""
    heading = 1 if headed else 0
    lines: list[tuple[str, Row | None]] = [(group, row) for row in members]
    fits_a_page = len(lines) + heading <= ROWS_PER_PAGE
    while lines:
        page = pages[-1]
        room = ROWS_PER_PAGE - len(page) - heading
        if page and _starts_a_page(room, len(lines), fits_a_page):
            pages.append([])
            continue
        take, lines = lines[:room], lines[room:]
        if headed:
            page.append((group or ".", None))
        page.extend(take)
