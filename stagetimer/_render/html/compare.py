"""``stagetimer compare --html``: the comparison as one page.

A chart of each stage's ratio new/base with its 95 % interval on a logarithmic axis,
regressions first, then improvements, then the rest; the table of every stage (each
side's runs and median, the ratio, its interval, p, q and the verdict) in the same
order; what differs between the sides' hardware, software and metadata.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from stagetimer._analysis.compare.model import (
    FASTER,
    SLOWER,
    Comparison,
    Pair,
    StageComparison,
)
from stagetimer._render.compare.text import (
    format_ratio,
    hardware_words,
    interval_words,
    metadata_words,
    software_words,
    times,
)
from stagetimer._render.compute import used_side_by_side
from stagetimer._render.duration import format_duration
from stagetimer._render.html.page import html_text, number, page
from stagetimer._render.html.svg import (
    WIDTH,
    Row,
    Scale,
    axis,
    chart,
    histogram,
    svg,
)

__all__ = ["ROWS", "ordered", "render_html"]

#: the most stages the ratio chart draws one by one (past it, a histogram of the ratios)
ROWS = 200
_ORDER = {SLOWER: 0, FASTER: 1}
_PAIRED = "runs paired by run_idx, label and rank (the paired t on log-seconds)"
_WELCH = "Welch's t on log-seconds"


def ordered(stages: Sequence[StageComparison]) -> list[StageComparison]:
    """Regressions first (the largest ratio first), then improvements (the smallest first),
    then the rest in their order."""
    def key(s: StageComparison) -> tuple[int, float]:
        rank = _ORDER.get(s.verdict, 2)
        ratio = s.ratio if s.ratio is not None else 1.0
        return rank, (-ratio if rank == 0 else ratio if rank == 1 else 0.0)
    return sorted(stages, key=key)


def _name(pair: Pair, stage: StageComparison, several: bool) -> str:
    return f"{pair.relpath or pair.new}: {stage.name}" if several else stage.name


def _kind(verdict: str) -> str:
    return {SLOWER: "r-slower", FASTER: "r-faster"}.get(verdict, "r-same")


def _words(stage: StageComparison) -> str:
    if stage.ratio is None:
        return f"{stage.name}: {stage.verdict}"
    text = f"{stage.name}: new/base {format_ratio(stage.ratio)}"
    if stage.ratio_ci is not None:
        text += f", 95 % interval {format_ratio(stage.ratio_ci[0])} to " \
                f"{format_ratio(stage.ratio_ci[1])}"
    return f"{text}: {times(stage.ratio) if stage.verdict in _ORDER else stage.verdict}"


def _scale(values: Sequence[float]) -> Scale:
    """A log axis around 1 wide enough for ``values`` (at least 0.5x to 2x)."""
    positive = [v for v in values if v > 0 and math.isfinite(v)]
    low = min([0.5, *positive])
    high = max([2.0, *positive])
    first = max(math.floor(math.log10(low) * 3) / 3, -300)
    last = min(math.ceil(math.log10(high) * 3) / 3, 300)
    return Scale(10.0 ** first, 10.0 ** last, True)


def _times(ratio: float) -> str:
    """A ratio on an axis: ``0.500x``."""
    return f"{format_ratio(ratio)}x"


def _ratio_chart(rows: Sequence[tuple[str, StageComparison]]) -> str:
    measured = [(n, s) for n, s in rows if s.ratio is not None]
    scale = _scale([v for _, s in measured for v in _ends(s)])
    shown = measured[:ROWS]
    lines = [_ratio_mark(i, s, scale) for i, (_, s) in enumerate(shown)]
    one = number(scale.x(1.0))
    bottom = 8 + len(shown) * 18
    lines.append(f'<line class="one" x1="{one}" x2="{one}" y1="4" y2="{bottom}"/>')
    alt = (f"Ratio new/base of {len(shown)} stages with its 95 % interval, on a logarithmic "
           "axis; slower stages first")
    # the rows' labels and axis come from chart(); its own dots are not drawn (no marks)
    drawn = chart([Row(n, ()) for n, _ in shown], scale, alt=alt, what="stages",
                  shown=_times, extra="".join(lines))
    return drawn if len(measured) <= ROWS else drawn + _all_ratios(measured, scale)


def _ends(s: StageComparison) -> list[float]:
    """A stage's ratio and its interval's ends: what the ratio axis must hold."""
    return [v for v in (s.ratio, *(s.ratio_ci or ())) if v is not None]


def _ratio_mark(i: int, s: StageComparison, scale: Scale) -> str:
    """Row ``i``'s ratio as a dot, on its 95 % interval as a line where it has one."""
    y = 8 + i * 18 + 9
    title = f"<title>{html_text(_words(s))}</title>"
    dot = (f'<circle class="{_kind(s.verdict)}" cx="{number(scale.x(s.ratio or 1))}" '
           f'cy="{y}" r="4">{title}</circle>')
    if s.ratio_ci is None:
        return dot
    return (f'<line class="ci {_kind(s.verdict)}" x1="{number(scale.x(s.ratio_ci[0]))}" '
            f'x2="{number(scale.x(s.ratio_ci[1]))}" y1="{y}" y2="{y}">{title}</line>{dot}')


def _all_ratios(measured: Sequence[tuple[str, StageComparison]], scale: Scale) -> str:
    """Past ``ROWS`` stages: a note, and the histogram of every stage's ratio."""
    ratios = [s.ratio for _, s in measured if s.ratio is not None]
    one = number(scale.x(1.0))
    note = (f"<p class=\"note\">The first {ROWS} of {len(ratios)} stages are drawn above; "
            "the ratios of all of them as a histogram below.</p>")
    every = svg(f"Histogram of the ratio new/base of all {len(ratios)} stages", 126,
                axis(scale, 92, 6, _times) + histogram(ratios, scale, 10, 80, "stages", _times)
                + f'<line class="one" x1="{one}" x2="{one}" y1="6" y2="92"/>', WIDTH)
    return note + every


def _ratio_cell(value: float | None) -> str:
    return "-" if value is None else format_ratio(value)


def _row(name: str, s: StageComparison, resources: bool) -> str:
    interval = interval_words(s.ratio_ci)
    cells = [
        str(s.base.runs), format_duration(s.base.median_seconds),
        str(s.new.runs), format_duration(s.new.median_seconds),
        _ratio_cell(s.ratio), interval, _ratio_cell(s.p_value), _ratio_cell(s.q_value),
    ]
    verdict = times(s.ratio) if s.verdict in _ORDER and s.ratio is not None else s.verdict
    kind = {SLOWER: ' class="slower"', FASTER: ' class="faster"'}.get(s.verdict, "")
    used = "" if not resources else \
        f'<td class="u">{html_text(used_side_by_side(s.resources or {}))}</td>'
    return (f'<tr><th scope="row">{html_text(name)}</th>'
            + "".join(f"<td>{html_text(c)}</td>" for c in cells)
            + f'<td class="t"><span{kind}>{html_text(verdict)}</span></td>{used}</tr>')


def _table(comparison: Comparison) -> str:
    resources = any(s.resources for p in comparison.pairs for s in p.stages)
    head = ["base runs", "base median", "new runs", "new median", "new/base",
            "95 % interval", "p", "q", "verdict", *(["used (base -> new)"] if resources else [])]
    parts = ['<p class="filter js-only"><label>Filter directories and stages: '
             '<input type="search" data-filter="compare"></label></p>'
             '<table id="compare"><thead><tr><th scope="col" class="t">stage</th>'
             + "".join(f'<th scope="col">{html_text(h)}</th>' for h in head)
             + "</tr></thead>"]
    for pair in comparison.pairs:
        parts.append(f'<tbody><tr><th scope="rowgroup" colspan="{len(head) + 1}" class="path">'
                     f"{html_text(pair.base)} (base) \N{RIGHTWARDS ARROW} "
                     f"{html_text(pair.new)} (new)</th></tr>")
        parts.extend(_row(s.name, s, resources) for s in ordered(pair.stages))
        parts.append("</tbody>")
    parts.append("</table>")
    return "\n".join(parts) + "\n"


def _pair_words(pair: Pair) -> list[str]:
    """What differs between a pair's sides, and the stages on one side only."""
    return [*(f"hardware: {w}" for w in hardware_words(pair)),
            *(f"software: {w}" for w in software_words(pair)),
            *(f"metadata: {w}" for w in metadata_words(pair)),
            *(f"only in base: {n}" for n in pair.base_only_stages),
            *(f"only in new: {n}" for n in pair.new_only_stages)]


def _differences(comparison: Comparison) -> str:
    items = [_pair_item(pair) for pair in comparison.pairs if _pair_words(pair)]
    for side, paths in (("base", comparison.unpaired.base), ("new", comparison.unpaired.new)):
        if paths:
            listed = "".join(f'<li class="path">{html_text(p)}</li>' for p in paths[:ROWS])
            items.append(f"<h3>Only on the {side} side</h3><ul>{listed}</ul>")
    return "<h2>What differs</h2>\n" + "\n".join(items) + "\n" if items else ""


def _pair_item(pair: Pair) -> str:
    """A pair's heading and the list of what differs between its sides."""
    listed = "".join(f"<li>{html_text(w)}</li>" for w in _pair_words(pair)[:ROWS])
    return f'<h3 class="path">{html_text(pair.relpath or pair.new)}</h3><ul>{listed}</ul>'


def _pairs(count: int) -> str:
    return "1 pair of directories" if count == 1 else f"{count} pairs of directories"


def _chart_rows(comparison: Comparison,
                stages: list[StageComparison]) -> list[tuple[str, StageComparison]]:
    """Every stage with its name on the chart (its directory's too where there are
    several), in ``ordered``'s order."""
    several = len(comparison.pairs) > 1
    rows = [(_name(p, s, several), s) for p in comparison.pairs for s in p.stages]
    order = {id(s): i for i, s in enumerate(ordered(stages))}
    rows.sort(key=lambda r: order[id(r[1])])
    return rows


def render_html(comparison: Comparison, base: str, new: str) -> str:
    """The comparison of ``base`` and ``new`` as one self-contained page."""
    stages = [s for p in comparison.pairs for s in p.stages]
    counts = Counter(s.verdict for s in stages)
    body = [
        "<h1>stagetimer compare</h1>",
        f'<p>base: <span class="path">{html_text(base)}</span><br>new: '
        f'<span class="path">{html_text(new)}</span></p>',
        f"<p>{len(stages)} stages in {_pairs(len(comparison.pairs))}: "
        f'<span class="slower">{counts[SLOWER]} slower</span>, '
        f'<span class="faster">{counts[FASTER]} faster</span> (q \u2264 0.05 over '
        f"{comparison.comparisons} comparisons and a change of at least "
        f"{comparison.threshold * 100:g} %); "
        f"{_PAIRED if comparison.paired else _WELCH}.</p>",
    ]
    if rows := _chart_rows(comparison, stages):
        body.append("<h2>Ratio new/base</h2>\n<p>Each stage's geometric-mean ratio (a dot) "
                    "with its 95 % interval (a line); left of the dashed line the new side "
                    "is faster. Regressions first, in red; improvements in blue.</p>")
        body.append(_ratio_chart(rows))
    body.append("<h2>Stages</h2>")
    body.append(_table(comparison))
    body.append(_differences(comparison))
    return page(f"stagetimer compare: {base} \N{RIGHTWARDS ARROW} {new}", "\n".join(body))
