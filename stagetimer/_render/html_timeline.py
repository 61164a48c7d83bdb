"""The suite's timeline as SVG: each attempt a bar on its node and rank, in time.

A finished attempt is a bar from its start for its duration; a failed one is drawn the
same in the failure colour; a killed one up to the earliest end the evidence allows,
with the rest of its interval as a faint bar; a running or unknown one up to the
latest time the page knows of. Past ``BARS`` finished attempts, each lane's busy spans
are drawn instead (the attempts that did not finish are still drawn one by one).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence

from stagetimer._analysis.attempts import Attempt
from stagetimer._render.duration import format_duration
from stagetimer._render.html_page import html_text, number
from stagetimer._render.html_svg import WIDTH, Scale, label, svg, ticks

__all__ = ["BARS", "lane_name", "timeline"]

#: the most finished attempts drawn one by one
BARS = 1500
_LANE = 20
_LEFT = 230
_TOP = 8
_AXIS = 34


def _node(attempt: Attempt, hosts: Mapping[str, str]) -> str:
    if attempt.host is not None:
        return attempt.host
    hardware = attempt.hardware_id
    if hardware is None:
        return "unknown node"
    return hosts.get(hardware, hardware)


def lane_name(attempt: Attempt, hosts: Mapping[str, str]) -> str:
    """``node-7 rank 3``: the host (the attempt's, else its hardware description's, else
    the hardware id) and the rank where there is one."""
    node = _node(attempt, hosts)
    return node if attempt.rank is None else f"{node} rank {attempt.rank}"


def _lane_key(attempt: Attempt, hosts: Mapping[str, str]) -> tuple[str, int, int]:
    rank = attempt.rank
    return _node(attempt, hosts), rank is not None, rank or 0


def _stamp(moment: datetime.datetime | None) -> str:
    return "-" if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def _start(attempt: Attempt) -> float:
    assert attempt.started_at is not None  # drawable() kept only attempts with a start
    return attempt.started_at.timestamp()


def _end(attempt: Attempt, start: float) -> tuple[float, float | None]:
    """Seconds (from the epoch) where the attempt's bar ends, and where its faint tail ends."""
    if attempt.seconds is not None:
        return start + attempt.seconds, None
    if attempt.ended_between is not None:
        low, high = attempt.ended_between
        first = low.timestamp() if low is not None else start
        return first, high.timestamp() if high is not None else None
    return start, None


def _what(attempt: Attempt) -> str:
    parts = [attempt.stage]
    if attempt.run_idx is not None:
        parts.append(f"run {attempt.run_idx}")
    if attempt.label is not None:
        parts.append(f"label {attempt.label}")
    if attempt.rank is not None:
        parts.append(f"rank {attempt.rank}")
    return ", ".join(parts) + f" in {attempt.directory}"


def _tooltip(attempt: Attempt) -> str:
    head = f"{_what(attempt)}: started {_stamp(attempt.started_at)}"
    if attempt.state == "finished":
        return f"{head}, {format_duration(attempt.seconds)}, finished"
    cause = f" ({attempt.cause})" if attempt.cause else ""
    took = f", {format_duration(attempt.seconds)}" if attempt.seconds is not None else ""
    exception = f", {attempt.exception}" if attempt.exception else ""
    low = attempt.ended_between[0] if attempt.ended_between is not None else None
    after = f", ended after {_stamp(low)}" if low is not None else ""
    return f"{head}{took}, {attempt.state}{cause}{exception}{after}; {attempt.evidence}"


def _busy(spans: list[tuple[float, float]]) -> list[tuple[float, float, int]]:
    """The union of ``spans``: (start, end, attempts in it), in time order."""
    merged: list[tuple[float, float, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            first, last, count = merged[-1]
            merged[-1] = (first, max(last, end), count + 1)
        else:
            merged.append((start, end, 1))
    return merged


def timeline(attempts: Sequence[Attempt], hosts: Mapping[str, str]) -> tuple[str, str]:
    """The SVG and one sentence under it (what it shows, and what was aggregated), for
    ``attempts`` that have a start (``timeline.drawable``); ``hosts``: hardware id -> the
    host its description names (runs record no host of their own)."""
    placed = []
    for a in attempts:
        start = _start(a)
        end, tail = _end(a, start)
        placed.append((a, start, end, tail))
    t0 = min(start for _, start, _, _ in placed)
    # The page's horizon is the latest end the files give: the upper end of a killed
    # attempt's interval may be the moment of reading (its process gone, no beat), which
    # would make the page change with the clock; its tail is drawn up to the horizon.
    t1 = max(end for _, _, end, _ in placed)
    for i, (a, start, end, tail) in enumerate(placed):
        if a.state in ("running", "unknown"):
            end = max(end, t1)
        if tail is not None:
            tail = min(tail, t1) if min(tail, t1) > end else None
        placed[i] = (a, start, end, tail)
    lanes = sorted({_lane_key(a, hosts): lane_name(a, hosts) for a in attempts}.items())
    row = {key: i for i, (key, _) in enumerate(lanes)}
    scale = Scale(0.0, max(t1 - t0, 1e-9), False, _LEFT, WIDTH - 40)
    height = _TOP + len(lanes) * _LANE + _AXIS
    bottom = _TOP + len(lanes) * _LANE
    parts = [f'<line class="ax" x1="{_LEFT}" x2="{WIDTH - 40}" y1="{bottom}" y2="{bottom}"/>']
    for tick in ticks(scale):
        x = number(scale.x(tick))
        parts.append(
            f'<line class="grid" x1="{x}" x2="{x}" y1="{_TOP}" y2="{bottom}"/><text x="{x}" '
            f'y="{bottom + 14}" text-anchor="middle">+{html_text(format_duration(tick))}</text>'
        )
    for i, (_, name) in enumerate(lanes):
        y = _TOP + i * _LANE + _LANE / 2 + 4
        parts.append(f'<text x="{_LEFT - 6}" y="{number(y)}" text-anchor="end">'
                     f"<title>{html_text(name)}</title>{label(name)}</text>")
    finished = [p for p in placed if p[0].state == "finished"]
    others = [p for p in placed if p[0].state != "finished"]
    aggregated = len(finished) > BARS
    if aggregated:
        spans: dict[tuple[str, int, int], list[tuple[float, float]]] = {}
        for a, start, end, _ in finished:
            spans.setdefault(_lane_key(a, hosts), []).append((start, end))
        for key, lane in sorted(spans.items()):
            y = _TOP + row[key] * _LANE + 4
            for start, end, count in _busy(lane):
                parts.append(_bar("ok", scale, start - t0, end - t0, y,
                                  f"{count} finished attempts, busy from "
                                  f"+{format_duration(start - t0)} to "
                                  f"+{format_duration(end - t0)}"))
    else:
        others = placed
    for a, start, end, tail in sorted(others[: 2 * BARS], key=lambda p: (p[1], p[2])):
        y = _TOP + row[_lane_key(a, hosts)] * _LANE + 4
        kind = "ok" if a.state == "finished" else a.state
        text = _tooltip(a)
        parts.append(_bar(kind, scale, start - t0, end - t0, y, text))
        if tail is not None:
            parts.append(_bar(kind, scale, end - t0, tail - t0, y, text, faint=True))
    counts = {s: sum(1 for a in attempts if a.state == s)
              for s in ("finished", "failed", "killed", "running", "unknown")}
    said = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    sentence = (
        f"{len(attempts)} attempts ({said}) on {len(lanes)} node and rank lanes, from "
        f"{_stamp(datetime.datetime.fromtimestamp(t0, datetime.timezone.utc))}, over "
        f"{format_duration(t1 - t0)}."
    )
    if aggregated:
        sentence += (f" More than {BARS} finished attempts: each lane's busy spans are drawn "
                     "instead of each attempt; failed and killed ones are still drawn each.")
    if len(others) > 2 * BARS:
        sentence += f" The first {2 * BARS} of {len(others)} unfinished attempts are drawn."
    alt = "Timeline: " + sentence
    return svg(alt, height, "".join(parts)), sentence


def _bar(
    kind: str, scale: Scale, start: float, end: float, y: float, tooltip: str, *,
    faint: bool = False,
) -> str:
    x0, x1 = scale.x(start), scale.x(end)
    opacity = ' opacity="0.35"' if faint else ""
    return (
        f'<rect class="{kind}"{opacity} x="{number(x0)}" y="{number(y)}" '
        f'width="{number(max(x1 - x0, 1.5))}" height="{_LANE - 8}">'
        f"<title>{html_text(tooltip)}</title></rect>"
    )
