"""``stagetimer lost`` as text, GitHub Markdown or JSON.

Per hardware description and stage: productive time, the time lost by cause (killed
attempts counted at the lower end of their interval, the upper end beside it), the
effective-time ratio and the attempts by state; GPU-hours where the description has
GPUs. Then one line per attempt that was lost or is not decided, with its evidence.
Text from the files (stage names, paths, evidence) is escaped for the terminal and in
Markdown.
"""

from __future__ import annotations

from collections.abc import Sequence

from stagetimer._analysis.attempts.lost import STATES, LostGroup, LostSummary, gpu_hours_lost
from stagetimer._analysis.attempts.scan import Attempt
from stagetimer._analysis.nesting import NESTED_NOTE
from stagetimer._escape import escape_text
from stagetimer._render.duration import format_duration
from stagetimer._render.json_text import indented_json
from stagetimer._render.markdown_text import markdown_text
from stagetimer._system.units import significant

__all__ = ["HEADER", "attempt_line", "attempt_parts", "notes", "render_lost", "summary_rows"]

HEADER = _HEADER = ("hardware", "stage", "productive", "lost", "up to", "by cause", "effective",
           "attempts")


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _lost(group: LostGroup, seconds: float | None) -> str:
    """``12 min 05 s`` and, with GPUs, ``(0.81 GPU-h)``."""
    if seconds is None:
        return "unbounded"
    hours = group.gpu_hours(seconds)
    return format_duration(seconds) + ("" if hours is None else f" ({significant(hours)} GPU-h)")


def _causes(group: LostGroup) -> str:
    return ", ".join(f"{cause} {format_duration(seconds)}"
                     for cause, seconds in sorted(group.lost_seconds.items())) or "-"


def _states(group: LostGroup) -> str:
    return ", ".join(f"{group.attempts[s]} {s}" for s in STATES if s in group.attempts)


def _row(group: LostGroup, name: str, stage: str) -> list[str]:
    return [
        name, stage, _lost(group, group.productive_seconds), _lost(group, group.lost_total),
        _lost(group, group.lost_seconds_upper), _causes(group), _ratio(group.effective_ratio),
        _states(group),
    ]


def _hardware_name(group: LostGroup) -> str:
    if group.hardware_id is None:
        return "(not described)"
    gpus = f" ({group.gpus} GPU{'s' if group.gpus != 1 else ''})" if group.gpus else ""
    return group.hardware_id[:12] + gpus


def summary_rows(summary: LostSummary) -> list[list[str]]:
    """The summary's rows as text cells (``HEADER``'s columns), the row of all last: the
    text form's, the Markdown's and the page's."""
    return _rows(summary)


def _rows(summary: LostSummary) -> list[list[str]]:
    rows = [_row(g, _hardware_name(g), g.stage or "") for g in summary.groups]
    rows.append(_row(summary.total, "all", ""))
    return rows


def _when(attempt: Attempt) -> str:
    ended = attempt.ended_between
    if ended is None:
        return ""
    low, high = (None if t is None else t.strftime("%Y-%m-%d %H:%M:%S") for t in ended)
    return _ENDED[low is not None, high is not None].format(low=low, high=high)


#: how an attempt's end is said, by whether its earliest and its latest end are known
_ENDED = {
    (True, True): ", ended between {low} and {high} UTC",
    (False, True): ", ended by {high} UTC",
    (True, False): ", ended after {low} UTC",
    (False, False): "",
}


def attempt_parts(attempt: Attempt) -> list[str]:
    """What an attempt was of: its stage, then its run, label and rank where it has them."""
    what = [attempt.stage]
    if attempt.run_idx is not None:
        what.append(f"run {attempt.run_idx}")
    if attempt.label is not None:
        what.append(f"label {attempt.label}")
    if attempt.rank is not None:
        what.append(f"rank {attempt.rank}")
    return what


def attempt_line(attempt: Attempt) -> str:
    """``exp/ippo: ippo_train run 0 rank 1 killed (timeout), ended between … UTC:
    Slurm job 42 is TIMEOUT at …``."""
    what = attempt_parts(attempt)
    state = attempt.state + (f" ({attempt.cause})" if attempt.cause else "")
    if attempt.seconds is not None and attempt.state == "failed":
        state += f" after {format_duration(attempt.seconds)}"
    return f"{attempt.directory}: {' '.join(what)} {state}{_when(attempt)}: {attempt.evidence}"


def _gpu_line(summary: LostSummary) -> str | None:
    found = gpu_hours_lost(summary)
    if found is None:
        return None
    low, high = found
    upper = "unbounded" if high is None else significant(high)
    return f"GPU-hours lost: {significant(low)} (up to {upper})"


def notes(summary: LostSummary) -> list[str]:
    """What the sums leave apart: the lost attempts no hardware description could be
    given to, and the attempts whose markers hold values no writer writes."""
    said = []
    if summary.unattributed:
        n = summary.unattributed
        said.append(f"{n} failed or killed attempt{'s' if n != 1 else ''} could not be "
                    "attributed to a hardware description: counted as (not described)")
    if summary.odd:
        n = summary.odd
        holds = "their markers hold" if n != 1 else "its marker holds"
        said.append(f"{n} attempt{'s' if n != 1 else ''} left out of the sums: {holds} "
                    "values no writer could have written")
    return said


def _nested_line(summary: LostSummary) -> list[str]:
    """Said once where the productive time in all counted nested attempts inside their
    parents' (each stage's row counts its own; the page says it once for every sum)."""
    count = summary.nested_attempts
    if not count:
        return []
    return [f"productive in all: {NESTED_NOTE} ({count} attempt{'s' if count > 1 else ''} "
            "inside another)"]


def _said(summary: LostSummary) -> list[str]:
    """What is said under the table: the GPU-hours lost, the notes, the nested attempts."""
    gpu = _gpu_line(summary)
    return ([] if gpu is None else [gpu]) + notes(summary) + _nested_line(summary)


def _text(summary: LostSummary, listed: Sequence[Attempt]) -> list[str]:
    rows = [list(_HEADER), *_rows(summary)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_HEADER))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
             for row in rows]
    lines += _said(summary)
    if listed:
        lines += ["", "Attempts lost or not decided:"]
        lines += [f"  {attempt_line(a)}" for a in listed]
    return lines


def _markdown(summary: LostSummary, listed: Sequence[Attempt]) -> list[str]:
    lines = ["| " + " | ".join(_HEADER) + " |",
             "|" + "|".join([":---", ":---"] + ["---:"] * 3 + [":---", "---:", ":---"]) + "|"]
    lines += ["| " + " | ".join(markdown_text(c) for c in row) + " |" for row in _rows(summary)]
    lines += [item for note in _said(summary) for item in ("", markdown_text(note))]
    if listed:
        lines += ["", "Attempts lost or not decided:", ""]
        lines += [f"- {markdown_text(attempt_line(a))}" for a in listed]
    return lines


def render_lost(
    summary: LostSummary, attempts: Sequence[Attempt] = (), form: str = "text"
) -> str:
    """The summary as ``text``, ``markdown`` or ``json`` (the shape of
    ``LostSummary.to_dict``); text and Markdown list the attempts that were not
    productive (failed, killed, unknown) with their evidence."""
    if form == "json":
        return indented_json(summary.to_dict())
    listed = [a for a in attempts if a.state in ("failed", "killed", "unknown")]
    lines = _markdown(summary, listed) if form == "markdown" else _text(summary, listed)
    return "\n".join(map(escape_text, lines)) + "\n"
