"""Charts as inline SVG, drawn here in Python: rows of marks on one axis.

Each chart is an ``<svg role="img">`` with an ``aria-label`` and a ``<desc>`` (its text
alternative), and every mark carries a ``<title>`` (the tooltip a browser shows) giving
its value. The page's tables hold the same numbers for a reader without the picture.
Past ``MARKS_PER_ROW`` marks a row is drawn as a histogram of them, and the chart says so.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import attrs

from stagetimer._escape import escape_text
from stagetimer._render.duration import format_duration
from stagetimer._render.html.page import html_text, number

__all__ = [
    "LABEL_CHARS",
    "MARKS_PER_ROW",
    "WIDTH",
    "Bar",
    "Mark",
    "Row",
    "Scale",
    "axis",
    "bars",
    "chart",
    "histogram",
    "label",
    "log_or_linear",
    "svg",
    "ticks",
]

#: the width of a chart (its viewBox): the page scales it down on narrow screens
WIDTH = 760
#: the most marks a row draws one by one; past it, a histogram of them
MARKS_PER_ROW = 120
#: the longest row label shown (the whole label is in the row's tooltip)
LABEL_CHARS = 34
_LABEL_WIDTH = 230
_ROW = 18
_TOP = 8
_AXIS = 30
_BINS = 40
_MAX = 1.7976931348623157e308


def label(text: str, limit: int = LABEL_CHARS) -> str:
    """``text`` as a row label: escaped, cut to ``limit`` visible characters by an ``…`` in
    its middle (a directory's start and a stage's name both stay)."""
    shown = escape_text(text)
    if len(shown) > limit:
        head = (limit - 1) // 3
        shown = shown[:head] + "\N{HORIZONTAL ELLIPSIS}" + shown[len(shown) - (limit - 1 - head):]
    return html_text(shown)


@attrs.frozen
class Scale:
    """Values to x: linear from ``low`` or logarithmic, onto ``[left, right]``."""

    low: float
    high: float
    log: bool
    left: float = _LABEL_WIDTH
    right: float = WIDTH - 40

    def x(self, value: float) -> float:
        """Where ``value`` is drawn (clamped to the axis: 0 on a log axis is its left end)."""
        if self.log:
            low, high = math.log10(self.low), math.log10(self.high)
            v = math.log10(value) if value > 0 else low
        else:
            low, high, v = self.low, self.high, value
        span = high - low
        share = 0.5 if span <= 0 or not math.isfinite(span) else (v - low) / span
        share = min(max(share, 0.0), 1.0)
        return self.left + share * (self.right - self.left)


def log_or_linear(values: Sequence[float], *, wide: float = 20.0) -> Scale:
    """A scale for ``values`` (finite, >= 0): logarithmic where the positive ones span more
    than ``wide`` times, else linear from 0."""
    positive = [v for v in values if v > 0]
    if not positive:
        return Scale(0.0, 1.0, False)
    low, high = min(positive), max(positive)
    if high / low > wide:
        # whole decades, within what a float holds (1e-323 .. 1e308)
        first = max(math.floor(math.log10(low)), -323)
        last = min(math.ceil(math.log10(high)), 308)
        return Scale(10.0 ** first, 10.0 ** last, True)
    return Scale(0.0, min(high * 1.05, _MAX), False)


def ticks(scale: Scale, count: int = 6) -> list[float]:
    """Round values along ``scale``: decades on a log axis (every k-th where there are
    many), 1-2-5 steps on a linear one."""
    return _log_ticks(scale, count) if scale.log else _linear_ticks(scale, count)


def _log_ticks(scale: Scale, count: int) -> list[float]:
    low, high = math.log10(scale.low), math.log10(scale.high)
    first, last = math.floor(low), math.ceil(high)
    if high - low <= 2:  # a decade or two: 1, 2 and 5 of each
        steps = [m * 10.0 ** k for k in range(first, last + 1) for m in (1, 2, 5)]
        return [v for v in steps if scale.low <= v <= scale.high]
    first, last = round(low), round(high)
    step = max(1, math.ceil((last - first) / count))
    return [10.0 ** k for k in range(first, last + 1, step)]


def _linear_ticks(scale: Scale, count: int) -> list[float]:
    span = scale.high - scale.low
    if not span > 0 or not math.isfinite(span):
        return [scale.low]
    raw = span / count
    if raw < 1e-300:  # a span of a few subnormals: no round steps to be had
        return [scale.low, scale.high]
    step = _round_step(raw)
    start = math.ceil(scale.low / step)
    return [k * step for k in range(start, start + count + 2) if k * step <= scale.high]


def _round_step(raw: float) -> float:
    """The smallest 1, 2 or 5 times a power of ten at least ``raw`` (> 0)."""
    power: float = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


@attrs.frozen
class Mark:
    """One value drawn as a dot, with its tooltip (plain text, escaped when drawn)."""

    value: float
    tooltip: str


@attrs.frozen
class Row:
    """One row of a chart: its label, its marks, and a median and spread to draw over them."""

    name: str
    marks: tuple[Mark, ...]
    median: float | None = None
    spread: tuple[float, float] | None = None
    #: words for the median and spread's tooltip
    summary: str = ""


def histogram(
    values: Sequence[float], scale: Scale, y: float, height: float, what: str,
    shown: Callable[[float], str] = format_duration,
) -> str:
    """``values`` as ``_BINS`` bars along ``scale`` at row ``y``, each bar's height its
    share of the fullest bin, with a tooltip giving its count and its range."""
    counts = [0] * _BINS
    width = scale.right - scale.left
    for v in values:
        share = (scale.x(v) - scale.left) / width if width else 0.0
        counts[min(int(share * _BINS), _BINS - 1)] += 1
    fullest = max(counts) or 1
    parts = []
    for i, n in enumerate(counts):
        if not n:
            continue
        x0 = scale.left + width * i / _BINS
        h = max(1.0, height * n / fullest)
        low, high = _value_at(scale, x0), _value_at(scale, x0 + width / _BINS)
        parts.append(
            f'<rect class="bin" x="{number(x0)}" y="{number(y + height - h)}" '
            f'width="{number(width / _BINS)}" height="{number(h)}"><title>'
            f"{n} {what} from {html_text(shown(low))} to {html_text(shown(high))}"
            "</title></rect>"
        )
    return "".join(parts)


def _value_at(scale: Scale, x: float) -> float:
    share = (x - scale.left) / (scale.right - scale.left)
    if scale.log:
        low, high = math.log10(scale.low), math.log10(scale.high)
        return float(10 ** (low + share * (high - low)))
    return scale.low + share * (scale.high - scale.low)


def axis(scale: Scale, y: float, top: float, shown: Callable[[float], str]) -> str:
    """The axis line at ``y``, its ticks' grid lines up to ``top`` and their labels."""
    parts = [f'<line class="ax" x1="{number(scale.left)}" x2="{number(scale.right)}" '
             f'y1="{number(y)}" y2="{number(y)}"/>']
    for tick in ticks(scale):
        x = number(scale.x(tick))
        parts.append(
            f'<line class="grid" x1="{x}" x2="{x}" y1="{number(top)}" y2="{number(y)}"/>'
            f'<text x="{x}" y="{number(y + 14)}" text-anchor="middle">'
            f"{html_text(shown(tick))}</text>"
        )
    return "".join(parts)


def _row(row: Row, scale: Scale, y: float, what: str, shown: Callable[[float], str]) -> str:
    mid = y + _ROW / 2
    parts = [
        f'<text x="{_LABEL_WIDTH - 6}" y="{number(mid + 4)}" text-anchor="end">'
        f"<title>{html_text(row.name)}</title>{label(row.name)}</text>"
    ]
    if row.spread is not None:
        low, high = row.spread
        parts.append(
            f'<line class="spread" x1="{number(scale.x(low))}" x2="{number(scale.x(high))}" '
            f'y1="{number(mid)}" y2="{number(mid)}"><title>{html_text(row.summary)}</title></line>'
        )
    if len(row.marks) > MARKS_PER_ROW:
        parts.append(histogram([m.value for m in row.marks], scale, y + 2, _ROW - 4, what, shown))
    else:
        parts.extend(
            f'<circle class="run" cx="{number(scale.x(m.value))}" cy="{number(mid)}" r="3.5">'
            f"<title>{html_text(m.tooltip)}</title></circle>"
            for m in row.marks
        )
    if row.median is not None:
        x = number(scale.x(row.median))
        parts.append(
            f'<line class="med" x1="{x}" x2="{x}" y1="{number(y + 2)}" y2="{number(y + _ROW - 2)}">'
            f"<title>{html_text(row.summary)}</title></line>"
        )
    return "".join(parts)


def chart(
    rows: Sequence[Row], scale: Scale, *, alt: str, what: str = "runs",
    shown: Callable[[float], str] = format_duration, extra: str = "",
) -> str:
    """An SVG of ``rows`` along ``scale``: ``alt`` its text alternative (plain text),
    ``what`` the name of its marks in a histogram's tooltip, ``shown`` how a value reads,
    ``extra`` more SVG drawn over the rows (made by the caller, escaped)."""
    height = _TOP + len(rows) * _ROW + _AXIS
    body = [axis(scale, _TOP + len(rows) * _ROW, _TOP, shown)]
    body.extend(_row(row, scale, _TOP + i * _ROW, what, shown) for i, row in enumerate(rows))
    return svg(alt, height, "".join(body) + extra)


def svg(alt: str, height: float, body: str, width: float = WIDTH) -> str:
    """The ``<svg>`` element around ``body``: an image to assistive technology, with
    ``alt`` as its label and description."""
    text = html_text(alt)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {number(width)} {number(height)}" '
        f'width="{number(width)}" height="{number(height)}" role="img" aria-label="{text}">'
        f"<desc>{text}</desc>{body}</svg>\n"
    )


@attrs.frozen
class Bar:
    """One bar from 0: its row label, its value and tooltip, and a limit drawn across it."""

    name: str
    value: float
    tooltip: str
    limit: float | None = None
    limit_tooltip: str = ""


def bars(
    rows: Sequence[Bar], *, alt: str, kind: str, shown: Callable[[float], str]
) -> str:
    """An SVG of ``rows`` as bars from 0 on one linear axis (class ``kind``), a limit as a
    line across its bar; ``shown`` says how a value reads on the axis."""
    values = [v for r in rows for v in (r.value, r.limit) if v is not None and math.isfinite(v)]
    top = max(values, default=1.0) or 1.0
    scale = Scale(0.0, min(top * 1.05, _MAX), False)
    height = _TOP + len(rows) * _ROW + _AXIS
    body = [axis(scale, _TOP + len(rows) * _ROW, _TOP, shown)]
    body.extend(_bar(r, _TOP + i * _ROW, scale, kind) for i, r in enumerate(rows))
    return svg(alt, height, "".join(body))


def _bar(r: Bar, y: float, scale: Scale, kind: str) -> str:
    """A bar's row at height ``y``: its label, its bar, and its limit where it has one."""
    drawn = (
        f'<text x="{_LABEL_WIDTH - 6}" y="{number(y + _ROW / 2 + 4)}" text-anchor="end">'
        f"<title>{html_text(r.name)}</title>{label(r.name)}</text>"
        f'<rect class="{kind}" x="{_LABEL_WIDTH}" y="{number(y + 3)}" '
        f'width="{number(max(scale.x(r.value) - _LABEL_WIDTH, 1.0))}" '
        f'height="{_ROW - 6}"><title>{html_text(r.tooltip)}</title></rect>'
    )
    if r.limit is None:
        return drawn
    x = number(scale.x(r.limit))
    return drawn + (
        f'<line class="limit" x1="{x}" x2="{x}" y1="{number(y + 1)}" '
        f'y2="{number(y + _ROW - 1)}"><title>{html_text(r.limit_tooltip)}</title></line>'
    )
