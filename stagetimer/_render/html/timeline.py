"""The suite's timeline as SVG: each attempt a bar on its node and rank, in time.

A finished attempt is a bar from its start for its duration; a failed one is drawn the
same in the failure colour; a killed one up to the earliest end the evidence allows (its
last sign of life), with the rest of its interval as a faint bar, or, where nothing
bounds its end, an open end: a short dashed stub that never stretches the time axis,
so the timeline keeps the scale of what ran; a running or unknown one up to the latest
time the page knows of. Past ``BARS`` finished attempts, each lane's busy spans
are drawn instead (the attempts that did not finish are still drawn one by one).
"""

from __future__ import annotations

import datetime
from collections import Counter
from collections.abc import Mapping, Sequence

import attrs

from stagetimer._analysis.attempts.scan import Attempt, State
from stagetimer._render.duration import format_duration
from stagetimer._render.html.page import html_text, number
from stagetimer._render.html.svg import WIDTH, Scale, axis, label, svg
from stagetimer._render.lost_text import attempt_parts

__all__ = ["BARS", "lane_name", "timeline"]

#: the most finished attempts drawn one by one
BARS = 1500
#: the length of a killed attempt's open end (no upper end), in pixels
_OPEN = 14
#: the height of one track of a lane, and the most tracks a lane has
_TRACK = 12
_TRACKS = 8
_LEFT = 230
_TOP = 8
_AXIS = 34
#: the states an attempt can be in, in the order the sentence under the timeline counts them
_STATES: tuple[State, ...] = ("finished", "failed", "killed", "running", "unknown")


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
    # %Y is not zero-padded before the year 1000 on glibc
    return "-" if moment is None else f"{moment.year:04d}-{moment:%m-%d %H:%M:%S} UTC"


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
    return ", ".join(attempt_parts(attempt)) + f" in {attempt.directory}"


def _tooltip(attempt: Attempt) -> str:
    head = f"{_what(attempt)}: started {_stamp(attempt.started_at)}"
    if attempt.state == "finished":
        return f"{head}, {format_duration(attempt.seconds)}, finished"
    cause = f" ({attempt.cause})" if attempt.cause else ""
    took = f", {format_duration(attempt.seconds)}" if attempt.seconds is not None else ""
    exception = f", {attempt.exception}" if attempt.exception else ""
    after = _ended(*(attempt.ended_between or (None, None)))
    return f"{head}{took}, {attempt.state}{cause}{exception}{after}; {attempt.evidence}"


def _ended(low: datetime.datetime | None, high: datetime.datetime | None) -> str:
    """What the files say of when an attempt that did not finish ended."""
    if low is None:
        return ""
    if high is None:
        return f", ended after {_stamp(low)} (nothing bounds its end)"
    return f", ended between {_stamp(low)} and {_stamp(high)}"


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


_Key = tuple[str, int, int]


@attrs.frozen
class _Drawn:
    """One bar to draw: its lane, its span (seconds from the epoch), the faint end of a
    killed attempt's interval, its class and its tooltip."""

    lane: _Key
    start: float
    end: float
    tail: float | None
    kind: str
    tooltip: str
    #: a killed attempt whose end nothing bounds: drawn with an open end
    open_end: bool = False


def _placed(
    attempts: Sequence[Attempt], hosts: Mapping[str, str]
) -> tuple[list[_Drawn], float, float, bool]:
    """The bars, the first start and the horizon, and whether finished attempts were
    drawn as their lanes' busy spans."""
    spans = [(a, _start(a), *_end(a, _start(a))) for a in attempts]
    t0 = min(start for _, start, _, _ in spans)
    # The page's horizon is the latest end the files give: the upper end of a killed
    # attempt's interval may be the moment of reading (its process gone, no beat), which
    # would make the page change with the clock; its tail is drawn up to the horizon.
    t1 = max(end for _, _, end, _ in spans)
    drawn, aggregated = _bars(spans, hosts, t0, t1)
    return drawn, t0, t1, aggregated


def _bars(
    spans: list[tuple[Attempt, float, float, float | None]], hosts: Mapping[str, str],
    t0: float, t1: float,
) -> tuple[list[_Drawn], bool]:
    """The bars to draw, and whether finished attempts were drawn as their lanes' busy
    spans (past ``BARS`` of them)."""
    finished = [p for p in spans if p[0].state == "finished"]
    if len(finished) <= BARS:
        return [_attempt_bar(*p, t1, hosts) for p in spans[: 2 * BARS]], False
    unfinished = [p for p in spans if p[0].state != "finished"]
    return (_busy_bars(finished, hosts, t0)
            + [_attempt_bar(*p, t1, hosts) for p in unfinished[: 2 * BARS]]), True


def _busy_bars(
    finished: Sequence[tuple[Attempt, float, float, float | None]], hosts: Mapping[str, str],
    t0: float,
) -> list[_Drawn]:
    """Finished attempts as their lanes' busy spans, one bar a span."""
    busy: dict[_Key, list[tuple[float, float]]] = {}
    for a, start, end, _ in finished:
        busy.setdefault(_lane_key(a, hosts), []).append((start, end))
    return [
        _Drawn(key, start, end, None, "ok", f"{count} finished attempts, busy from "
               f"+{format_duration(start - t0)} to +{format_duration(end - t0)}")
        for key, lane in sorted(busy.items())
        for start, end, count in _busy(lane)
    ]


def _attempt_bar(
    a: Attempt, start: float, end: float, tail: float | None, t1: float,
    hosts: Mapping[str, str],
) -> _Drawn:
    """One attempt's bar: one still running (or unknown) up to the horizon ``t1``, a
    killed one's tail cut at it."""
    if a.state in ("running", "unknown"):
        end = max(end, t1)
    if tail is not None:
        tail = min(tail, t1) if min(tail, t1) > end else None
    kind = "ok" if a.state == "finished" else a.state
    unbounded = a.state == "killed" and (a.ended_between or (None, None))[1] is None
    return _Drawn(_lane_key(a, hosts), start, end, tail, kind, _tooltip(a), unbounded)


def _tracks(drawn: list[_Drawn]) -> tuple[list[int], dict[_Key, int]]:
    """Each bar's track within its lane (attempts that overlap in time, such as seeds in
    parallel on one node, side by side; at most ``_TRACKS`` a lane), and each lane's
    number of tracks."""
    ends: dict[_Key, list[float]] = {}
    track = [0] * len(drawn)
    for i in sorted(range(len(drawn)), key=lambda k: (drawn[k].start, drawn[k].end)):
        bar, lane = drawn[i], ends.setdefault(drawn[i].lane, [])
        free = _free_track(lane, bar)
        lane[free] = max(lane[free], bar.tail or bar.end)
        track[i] = free
    return track, {key: len(lane) for key, lane in ends.items()}


def _free_track(lane: list[float], bar: _Drawn) -> int:
    """The track of ``lane`` (each track's end) for ``bar``: the first free at its start,
    else a new one while the lane has fewer than ``_TRACKS``, else the one that frees
    first."""
    free = next((t for t, end in enumerate(lane) if end <= bar.start), None)
    if free is not None:
        return free
    if len(lane) < _TRACKS:
        lane.append(bar.end)
        return len(lane) - 1
    return min(range(len(lane)), key=lane.__getitem__)


def timeline(attempts: Sequence[Attempt], hosts: Mapping[str, str]) -> tuple[str, str]:
    """The SVG and one sentence under it (what it shows, and what was aggregated), for
    ``attempts`` that have a start (``timeline.drawable``); ``hosts``: hardware id -> the
    host its description names (runs record no host of their own)."""
    drawn, t0, t1, aggregated = _placed(attempts, hosts)
    track, tracks = _tracks(drawn)
    names = {_lane_key(a, hosts): lane_name(a, hosts) for a in attempts}
    parts, top, bottom = _lanes(names, tracks)
    scale = Scale(0.0, max(t1 - t0, 1e-9), False, _LEFT, WIDTH - 40)
    parts.append(axis(scale, bottom, _TOP, _since_start))
    for i, bar in enumerate(drawn):
        parts += _bar_parts(bar, scale, top[bar.lane] + 3 + track[i] * _TRACK, t0)
    sentence = _sentence(attempts, len(names), t0, t1, aggregated)
    return svg("Timeline: " + sentence, bottom + _AXIS, "".join(parts)), sentence


def _since_start(seconds: float) -> str:
    return f"+{format_duration(seconds)}"


def _lanes(
    names: Mapping[_Key, str], tracks: Mapping[_Key, int]
) -> tuple[list[str], dict[_Key, float], float]:
    """The lanes' labels, each lane's top and the lanes' bottom: a lane as tall as its
    tracks."""
    top: dict[_Key, float] = {}
    y = float(_TOP)
    parts = []
    for key, name in sorted(names.items()):
        top[key] = y
        height = tracks.get(key, 1) * _TRACK + 6
        parts.append(f'<text x="{_LEFT - 6}" y="{number(y + height / 2 + 4)}" '
                     f'text-anchor="end"><title>{html_text(name)}</title>{label(name)}</text>')
        y += height
    return parts, top, y


def _bar_parts(bar: _Drawn, scale: Scale, at: float, t0: float) -> list[str]:
    """A bar at height ``at``, its faint tail and its open end where it has them."""
    parts = [_bar(bar.kind, scale, bar.start - t0, bar.end - t0, at, bar.tooltip)]
    if bar.tail is not None:
        parts.append(_bar(bar.kind, scale, bar.end - t0, bar.tail - t0, at, bar.tooltip,
                          faint=True))
    if bar.open_end:
        parts.append(_open_end(scale, bar.start - t0, bar.end - t0, at, bar.tooltip))
    return parts


def _sentence(
    attempts: Sequence[Attempt], lanes: int, t0: float, t1: float, aggregated: bool
) -> str:
    """What the timeline shows, and what it aggregated or left out."""
    counts = Counter(a.state for a in attempts)
    said = ", ".join(f"{counts[s]:,} {s}" for s in _STATES if counts[s])
    sentence = (
        f"{len(attempts):,} attempts ({said}) on {lanes} node and rank "
        f"lane{'' if lanes == 1 else 's'}, from "
        f"{_stamp(datetime.datetime.fromtimestamp(t0, datetime.timezone.utc))}, over "
        f"{format_duration(t1 - t0)}."
    )
    if not aggregated:
        return sentence + _left_out(len(attempts))
    return (sentence + f" More than {BARS:,} finished attempts: each lane's busy spans are "
            "drawn instead of each attempt; failed and killed ones are still drawn each."
            + _left_out(len(attempts) - counts["finished"]))


def _left_out(drawable: int) -> str:
    """The sentence on the attempts past the ``2 * BARS`` drawn one by one, if any."""
    if drawable <= 2 * BARS:
        return ""
    return f" The first {2 * BARS:,} of {drawable:,} attempts are drawn."


def _open_end(scale: Scale, start: float, end: float, y: float, tooltip: str) -> str:
    """A dashed stub past a bar whose end nothing bounds: the attempt went on, for how
    long no file says (a fixed length, outside the time axis's scale)."""
    x = max(scale.x(end), scale.x(start) + 1.5)
    middle = number(y + (_TRACK - 3) / 2)
    return (
        f'<line class="one" x1="{number(x)}" x2="{number(x + _OPEN)}" y1="{middle}" '
        f'y2="{middle}"><title>{html_text(tooltip)}</title></line>'
    )


def _bar(
    kind: str, scale: Scale, start: float, end: float, y: float, tooltip: str, *,
    faint: bool = False,
) -> str:
    x0, x1 = scale.x(start), scale.x(end)
    opacity = ' opacity="0.35"' if faint else ""
    return (
        f'<rect class="{kind}"{opacity} x="{number(x0)}" y="{number(y)}" '
        f'width="{number(max(x1 - x0, 1.5))}" height="{_TRACK - 3}">'
        f"<title>{html_text(tooltip)}</title></rect>"
    )
