"""``stagetimer history --html FILE``: the history as one self-contained page.

Under the rules of every page (``html.page``): nothing loaded, a Content-Security-Policy,
every text from the files escaped, the same files give the same bytes. Each series is
drawn as an inline SVG: each seed a dot (past ``SEEDS_DRAWN`` seeds, each point's range
of seeds a bar), each point's median a dash, each segment's
median a line across it, each change point a dashed line; every mark has a ``<title>``
(the tooltip a browser shows) naming its point's commit and its value. Tables hold the
same numbers for a reader without the picture.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from stagetimer._analysis.history.model import ChangePoint, History, Point, Series
from stagetimer._render.compare.text import format_ratio, times
from stagetimer._render.duration import format_duration
from stagetimer._render.history_text import change_words, point_label, ratio_range, series_label
from stagetimer._render.html.page import html_text, number, page
from stagetimer._render.html.svg import WIDTH, svg

__all__ = ["SEEDS_DRAWN", "render_html"]

#: past this many seeds in a series, each point shows its seeds' range, not each seed
SEEDS_DRAWN = 2000
_HEIGHT = 220
_LEFT, _RIGHT, _TOP, _BOTTOM = 70.0, 12.0, 10.0, 28.0


def _tip(point: Point, what: str) -> str:
    return html_text(f"{point_label(point)}: {what}")


def _chart(series: Series) -> str:
    values = [s for p in series.points for s in p.seeds]
    low, high = min(values), max(values)
    pad = (high - low) * 0.08 or max(high * 0.05, 1e-9)
    low, high = max(0.0, low - pad), high + pad
    n = len(series.points)
    width = WIDTH - _LEFT - _RIGHT
    step = width / max(n, 1)

    def x(i: float) -> float:
        return _LEFT + (i + 0.5) * step

    def y(v: float) -> float:
        return _TOP + (high - v) / (high - low) * (_HEIGHT - _TOP - _BOTTOM)

    body = [
        f'<line class="ax" x1="{number(_LEFT)}" y1="{number(_HEIGHT - _BOTTOM)}" '
        f'x2="{number(WIDTH - _RIGHT)}" y2="{number(_HEIGHT - _BOTTOM)}"/>',
        f'<line class="ax" x1="{number(_LEFT)}" y1="{number(_TOP)}" x2="{number(_LEFT)}" '
        f'y2="{number(_HEIGHT - _BOTTOM)}"/>',
    ]
    for v in (low, (low + high) / 2, high):
        body.append(f'<text x="{number(_LEFT - 6)}" y="{number(y(v) + 4)}" '
                    f'text-anchor="end">{html_text(format_duration(v))}</text>')
    body.append(f'<text x="{number(_LEFT)}" y="{number(_HEIGHT - 8)}">'
                f'{html_text(point_label(series.points[0]))}</text>')
    body.append(f'<text x="{number(WIDTH - _RIGHT)}" y="{number(_HEIGHT - 8)}" '
                f'text-anchor="end">{html_text(point_label(series.points[-1]))}</text>')
    body += _segments(series, x, y)
    each_seed = len(values) <= SEEDS_DRAWN
    for i, point in enumerate(series.points):
        body += _point_marks(point, x(i), y, min(6, step / 3), each_seed=each_seed)
    for change in series.changes:
        at = x(change.index - 0.5)
        body.append(
            f'<line class="limit" stroke-dasharray="5 3" x1="{number(at)}" '
            f'y1="{number(_TOP)}" x2="{number(at)}" y2="{number(_HEIGHT - _BOTTOM)}"><title>'
            f'{_tip(change.after, f"change point, {times(change.ratio)}")}</title></line>'
        )
    alt = (f"{series_label(series)}: {n} points from {point_label(series.points[0])} to "
           f"{point_label(series.points[-1])}, {len(series.changes)} change points")
    return svg(alt, _HEIGHT, "".join(body))


def _segments(series: Series, x: Callable[[float], float],
              y: Callable[[float], float]) -> list[str]:
    """Each segment between change points as a line at its median."""
    bounds = [0, *(c.index for c in series.changes), len(series.points)]
    lines = []
    for start, end in itertools.pairwise(bounds):
        seeds = sorted(s for p in series.points[start:end] for s in p.seeds)
        level = (seeds[len(seeds) // 2] + seeds[(len(seeds) - 1) // 2]) / 2
        lines.append(
            f'<line class="one" x1="{number(x(start - 0.4))}" y1="{number(y(level))}" '
            f'x2="{number(x(end - 0.6))}" y2="{number(y(level))}"><title>'
            f'{html_text(f"segment median {format_duration(level)} from ")}'
            f'{_tip(series.points[start], f"{end - start} points")}</title></line>'
        )
    return lines


def _point_marks(point: Point, at: float, y: Callable[[float], float], half: float, *,
                 each_seed: bool) -> list[str]:
    """A point at ``at``: each seed a dot (or the seeds' range, one mark a point), and its
    median a tick ``half`` wide each side."""
    if each_seed:
        marks = [f'<circle class="run" cx="{number(at)}" cy="{number(y(s))}" r="2.5">'
                 f'<title>{_tip(point, f"seed {format_duration(s)}")}</title></circle>'
                 for s in point.seeds]
    else:
        fastest, slowest = min(point.seeds), max(point.seeds)
        what = (f"{len(point.seeds)} seeds from {format_duration(fastest)} to "
                f"{format_duration(slowest)}")
        marks = [f'<line class="spread" x1="{number(at)}" y1="{number(y(slowest))}" '
                 f'x2="{number(at)}" y2="{number(y(fastest))}"><title>'
                 f"{_tip(point, what)}</title></line>"]
    median = number(y(point.median_seconds))
    marks.append(
        f'<line class="med" x1="{number(at - half)}" y1="{median}" x2="{number(at + half)}" '
        f'y2="{median}"><title>'
        f'{_tip(point, f"median {format_duration(point.median_seconds)}")}</title></line>'
    )
    return marks


def _change_row(series: Series, change: ChangePoint) -> str:
    interval = ratio_range(change)
    what = "<br>".join(html_text(w) for w in change_words(change)) or "-"
    cls = "slower" if change.ratio > 1 else "faster"
    return (
        f'<tr><th scope="row">{html_text(series_label(series))}</th>'
        f'<td class="t">{html_text(point_label(change.before))}</td>'
        f'<td class="t">{html_text(point_label(change.after))}</td>'
        f"<td>{html_text(format_duration(change.median_before))}</td>"
        f"<td>{html_text(format_duration(change.median_after))}</td>"
        f'<td class="{cls}">{html_text(times(change.ratio))}</td>'
        f"<td>{html_text(interval)}</td><td>{html_text(format_ratio(change.q_value))}</td>"
        f'<td class="u">{what}</td></tr>\n'
    )


def render_html(history: History) -> str:
    """The page: the notes, the change points newest first, then each series drawn."""
    order = "commit order" if history.order == "commit" else "time order"
    changes = history.changes()
    parts = [
        "<h1>stagetimer history</h1>\n",
        f'<p class="muted">{len(history.series)} series in {order}; '
        f"{len(changes)} change points (q ≤ 0.05 over {history.tests} tests, at least "
        f"{html_text(f'{history.threshold * 100:g}')} %).</p>\n",
    ]
    if history.notes:
        parts.append("<ul>" + "".join(f"<li>{html_text(n)}</li>" for n in history.notes)
                     + "</ul>\n")
    parts.append("<h2>Change points, newest first</h2>\n")
    parts.append(_changes_table(changes))
    parts += (_series_section(series) for series in history.series)
    return page("stagetimer history", "".join(parts))


def _changes_table(changes: list[tuple[Series, ChangePoint]]) -> str:
    if not changes:
        return "<p>None.</p>\n"
    return (
        "<table><thead><tr><th>series</th><th>last before</th><th>first after</th>"
        "<th>median before</th><th>median after</th><th>ratio</th><th>95 % interval</th>"
        "<th>q</th><th>what changed</th></tr></thead><tbody>\n"
        + "".join(_change_row(s, c) for s, c in changes) + "</tbody></table>\n"
    )


def _series_section(series: Series) -> str:
    """A series' heading, its note and its chart."""
    note = f'<p class="note">{html_text(series.note)}</p>\n' if series.note else ""
    drawn = _chart(series) if series.points else ""
    return f"<h2>{html_text(series_label(series))}</h2>\n{note}{drawn}"
