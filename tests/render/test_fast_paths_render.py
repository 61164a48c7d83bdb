"""The render layer's fast paths against plain references written here.

Each writer has a first test that decides the usual input cheaply (a float between two
constants, ASCII text, no spaces to keep, one format template for a table) beside a
general path or a plain definition of its result. Each is compared with that definition
on inputs chosen at its boundaries and at random (fixed seeds, derandomized hypothesis):

- ``three_digits`` and ``format_duration`` against a decimal reference (the float's
  exact value rounded half-even with ``decimal``) at every rounding boundary of every
  unit, and ``format_duration``'s one-test branch against its general branch (a float
  subclass takes the general one);
- ``Unit.number`` and ``unit_for`` against the same reference;
- ``indented_json`` against ``json.dumps`` where both apply, and ``json_escaped``'s
  ASCII branch against a character-by-character escape;
- ``spreadsheet_safe``/``records_csv`` against the formula rule read back with ``csv``;
- ``markdown_text`` against GitHub's renderer, ``latex_text`` against an inverse of its
  escapes;
- the text report's table (one format template per table) against ``ljust``/``rjust``.
"""

from __future__ import annotations

import csv
import io
import json
import math
import random
import re
import string
from decimal import ROUND_HALF_EVEN, Context, Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stagetimer._escape import escape_text
from stagetimer._render import duration
from stagetimer._render.csv_text import records_csv, spreadsheet_safe
from stagetimer._render.duration import UNITS, format_duration, three_digits, unit_for
from stagetimer._render.json_text import indented_json, json_escaped
from stagetimer._render.latex_text import latex_text
from stagetimer._render.markdown_text import markdown_text

_EXACT = Context(prec=2000, rounding=ROUND_HALF_EVEN)  # a float has at most 767 digits
_MICRO = "\N{MICRO SIGN}s"


# -- the decimal reference ---------------------------------------------------


def _rounded(x: Decimal, digits: int = 3) -> Decimal:
    """``x`` (> 0) rounded half-even to ``digits`` significant digits, once."""
    step = Decimal(1).scaleb(x.adjusted() - digits + 1, _EXACT)
    r = x.quantize(step, ROUND_HALF_EVEN, _EXACT)
    if r.adjusted() > x.adjusted():  # carried into the next decade: 9.9951 is 10.0
        r = x.quantize(step.scaleb(1, _EXACT), ROUND_HALF_EVEN, _EXACT)
    return r


def ref_three(x: Decimal) -> str:
    """Three significant digits of the exact ``x`` >= 0, in the forms the module
    promises: ``850``, ``77.8``, ``5.12``, ``0.0417`` (a trailing zero kept), ``1.00e-05``;
    the whole number from 100 to 99,999, ``1.23e+05`` (trailing zeros dropped) past it."""
    if x == 0:
        return "0"
    r = _rounded(x)
    e = r.adjusted()
    if e >= 2:
        whole = x.quantize(Decimal(1), ROUND_HALF_EVEN, _EXACT)
        if whole < 100000:
            return str(int(whole))
        return f"{r.scaleb(-e, _EXACT).normalize(_EXACT)}e+{e:02d}"
    if e >= -4:
        return format(r, "f")
    return f"{format(r.scaleb(-e, _EXACT), 'f')}e-{-e:02d}"


def _whole(x: Decimal) -> int:
    return int(x.quantize(Decimal(1), ROUND_HALF_EVEN, _EXACT))


def ref_duration(seconds: float) -> str:
    """``format_duration``'s promise for a duration a writer stores, from its exact value."""
    x = Decimal(seconds)
    if x == 0:
        return "0 s"
    r = _rounded(x)
    if r < 60:
        if r >= 1:
            return f"{ref_three(x)} s"
        if r >= Decimal("0.001"):
            return f"{ref_three(x.scaleb(3, _EXACT))} ms"
        return f"{ref_three(x.scaleb(6, _EXACT))} {_MICRO}"
    whole = _whole(x)
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    minutes = _whole(_EXACT.divide(x, Decimal(60)))
    if minutes < 1440:
        return f"{minutes // 60} h {minutes % 60:02d} min"
    hours = _whole(_EXACT.divide(x, Decimal(3600)))
    if hours < 2400:
        return f"{hours // 24} d {hours % 24:02d} h"
    # Past 100 days the module rounds the float quotient seconds / 86400 (one rounding
    # before the digits): the reference takes the same quotient.
    return f"{ref_three(Decimal(seconds / 86400.0))} d"


class _Float(float):
    """A float that is not exactly ``float``: ``format_duration`` takes its general branch."""


def _near(x: float, steps: int = 3) -> list[float]:
    """``x`` and the ``steps`` floats on each side of it."""
    out = [x]
    below = above = x
    for _ in range(steps):
        below, above = math.nextafter(below, -math.inf), math.nextafter(above, math.inf)
        out += [below, above]
    return [v for v in out if v >= 0]


def _ties() -> list[float]:
    """Floats at and beside the decimal ties of three digits (``x.xx5``) in every decade from
    1e-12 to 1e7, and the unit changes of format_duration (59.95, 3599.5, ...)."""
    rng = random.Random(20261202)
    mantissas = ["9.995", "9.9995", "1.005", "1.235", "1.245", "9.985", "99.95", "999.5",
                 "99999.5", "1.0005", "5.555"]
    mantissas += [f"{rng.randint(100, 999)}5e-3" for _ in range(12)]
    out: list[float] = []
    for exponent in range(-12, 8):
        for m in mantissas:
            out += _near(float(Decimal(m).scaleb(exponent)))
    for edge in (59.95, 60.0, 3599.5, 3600.0, 86370.0, 86400.0, 8638200.0, 8640000.0,
                 90.0, 3630.0, 3690.0, 5400.0, 86400.0 * 1.5, 99999.5 * 86400.0):
        out += _near(edge)
    return out


def _randoms(n: int = 4000) -> list[float]:
    rng = random.Random(4711)
    values = [math.exp(rng.uniform(math.log(1e-10), math.log(1e9))) for _ in range(n)]
    # decimal strings of four digits ending in 5: a tie once scaled into some unit
    values += [float(f"{rng.randint(100, 999)}5e{rng.randint(-12, 6)}") for _ in range(n)]
    return values


_TIES = _ties()
_RANDOMS = _randoms()


# -- three_digits, format_duration ---------------------------------------------


def test_the_bounds_are_the_least_floats_at_or_above_their_decimal_ties() -> None:
    bounds = {
        "_S_100": "99.95", "_S_10": "9.995", "_S_1": "0.9995", "_MS_100": "0.09995",
        "_MS_10": "0.009995", "_MS_1": "0.0009995", "_US_100": "0.00009995",
        "_US_10": "0.000009995", "_US_1": "0.0000009995", "_NS_100": "0.00000009995",
    }
    for name, tie in bounds.items():
        bound = getattr(duration, name)
        assert (Decimal(bound) >= Decimal(tie), Decimal(math.nextafter(bound, 0)) < Decimal(tie)) \
            == (True, True), name


def test_three_digits_is_the_decimal_rounding_at_every_boundary() -> None:
    values = [*_TIES, *_RANDOMS, 0.0, -0.0, 5e-324, 1e-300, 1e300, 1.7976931348623157e308]
    wrong = [(v, three_digits(v), ref_three(Decimal(v))) for v in values
             if three_digits(v) != ref_three(Decimal(v))]
    assert wrong[:10] == [], f"{len(wrong)} of {len(values)}"


def test_three_digits_of_an_int_is_that_of_its_float() -> None:
    for n in [0, 1, 5, 9, 10, 99, 100, 999, 1000, 99999, 100000, 123456, 10**15, 2**63]:
        assert three_digits(n) == ref_three(Decimal(n)), n


def test_format_duration_is_the_decimal_reference_at_every_boundary() -> None:
    values = [*_TIES, *_RANDOMS, 0.0, -0.0, 5e-324, 1e300, 1.7976931348623157e308]
    wrong = [(v, format_duration(v), ref_duration(v)) for v in values
             if format_duration(v) != ref_duration(v)]
    assert wrong[:10] == [], f"{len(wrong)} of {len(values)}"


def test_format_duration_fast_branch_is_its_general_branch() -> None:
    """A float takes the one-test branch; the same value as a float subclass, or as an int
    where it is one, takes the general branch."""
    values = [*_TIES, *_RANDOMS]
    for v in values:
        assert format_duration(v) == format_duration(_Float(v)), v
        if v == int(v) and v < 2**53:
            assert format_duration(int(v)) == format_duration(v), v


@pytest.mark.parametrize(
    ("value", "shown"),
    [(None, "-"), (-5.0, "-5 s"), (-1e-9, "-1e-09 s"), (math.nan, "nan s"),
     (math.inf, "inf s"), (-math.inf, "-inf s"), (0, "0 s"), (0.0, "0 s"), (-0.0, "0 s"),
     (0.0009995, "999 \N{MICRO SIGN}s"), (0.9994999999999999, "999 ms"),
     (0.1235, "123 ms"), (9.995, "9.99 s"), (0.9995, "1.00 s"), (59.95, "1 min 00 s")],
)
def test_format_duration_edges(value: float | None, shown: str) -> None:
    assert (format_duration(value), format_duration(_Float(value)) if type(value) is float
            else shown) == (shown, shown)


def test_each_unit_number_is_the_decimal_reference() -> None:
    values = [*_TIES, *_RANDOMS, 0.0, -0.0]
    wrong = []
    shifts = {_MICRO: 6, "ms": 3, "s": 0}  # powers of ten: the exact value scaled
    for unit in UNITS:
        for v in values:
            if unit.name in shifts:
                expected = ref_three(Decimal(v).scaleb(shifts[unit.name], _EXACT))
            else:  # min, h, d: the float quotient, as the module divides
                expected = ref_three(Decimal(v / unit.seconds))
            if unit.number(v) != expected:
                wrong.append((unit.name, v, unit.number(v), expected))
    assert wrong[:10] == [], len(wrong)


def test_unit_number_of_a_negative_or_odd_value_is_shown_as_it_is() -> None:
    for unit in UNITS:
        assert [unit.number(v) for v in (-1.0, math.nan, math.inf)] == [
            f"{v / unit.seconds:g}" for v in (-1.0, math.nan, math.inf)
        ]


def _ref_unit(values: list[float]) -> str:
    valid = [v for v in values if 0 <= v <= 1.7976931348623157e308]
    top = max(valid, default=1.0)
    if top >= 2 * 86400:
        return "d"
    if top >= 2 * 3600:
        return "h"
    if top >= 120:
        return "min"
    if top == 0:
        return "s"
    r = _rounded(Decimal(top))
    return "s" if r >= 1 else "ms" if r >= Decimal("0.001") else _MICRO


def test_unit_for_is_the_unit_the_rounded_largest_value_says() -> None:
    rng = random.Random(7)
    pool = [*_TIES, *_RANDOMS, -1.0, math.nan, math.inf]
    cases: list[list[float]] = [[], [0.0], [-1.0], [math.nan, 0.5], *([v] for v in _TIES)]
    cases += [rng.sample(pool, rng.randint(1, 6)) for _ in range(3000)]
    wrong = [(c, unit_for(c).name, _ref_unit(c)) for c in cases if unit_for(c).name != _ref_unit(c)]
    assert wrong[:10] == [], len(wrong)


def test_the_top_of_a_column_reads_between_1_and_999_in_its_unit() -> None:
    """What the unit is chosen for: the largest value of a column below two minutes never
    reads ``0.999 ms`` or ``1000 µs``."""
    for v in [*_TIES, *_RANDOMS]:
        if 0 < v < 120:
            unit = unit_for([v])
            shown = float(unit.number(v))
            assert 1 <= shown < 1000 or (unit.name == _MICRO and shown < 1), (v, unit, shown)


# -- JSON --------------------------------------------------------------------

_JSON_RAW = set(range(0x7F, 0xA0)) | {0x061C} | set(range(0x200B, 0x2010)) \
    | set(range(0x2028, 0x202F)) | set(range(0x2060, 0x2070)) | {0xFEFF}


def _ref_json_escaped(text: str) -> str:
    """Each character a terminal acts on, and each lone surrogate, as its ``\\uXXXX``."""
    return "".join(
        f"\\u{ord(c):04x}" if ord(c) in _JSON_RAW or 0xD800 <= ord(c) <= 0xDFFF else c
        for c in text
    )


_CHARS = st.sampled_from(
    [*string.printable, "\x00", "\x1b", "\x7f", "\x80", "\x9b", "\x9f", "\xa0", "\xe9",
     "\u061c", "\u200b", "\u200f", "\u2028", "\u202e", "\u2060", "\u2066", "\ufeff",
     "\udc80", "\udcff", "\ud800", "\N{SNOWMAN}", "\U0001f600", "\N{MICRO SIGN}", '"', "\\"]
)
_TEXT = st.text(_CHARS, max_size=12)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True) | _TEXT
    | st.sampled_from([math.nan, math.inf, 0.5]).map(_Float),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=12,
)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


@settings(derandomize=True, max_examples=400, deadline=None)
@given(_TEXT)
def test_json_escaped_is_the_character_by_character_escape(text: str) -> None:
    dumped = json.dumps(text, ensure_ascii=False)
    assert json_escaped(dumped) == _ref_json_escaped(dumped)


@settings(derandomize=True, max_examples=400, deadline=None)
@given(_JSON)
def test_indented_json_is_json_dumps_where_both_apply(value: Any) -> None:
    text = indented_json(value)
    finite = _finite(value)
    expected = json.dumps(finite, indent=2, ensure_ascii=False)
    assert text == _ref_json_escaped(expected) + "\n"
    if expected == _ref_json_escaped(expected):  # nothing to escape: json.dumps itself
        assert text == expected + "\n"
    text.encode("utf-8")  # any stream takes it
    back = json.loads(text)
    assert back == json.loads(json.dumps(finite, ensure_ascii=True))


def _ref_layout(value: Any, level: int = 0) -> str:
    """compare --json's layout: indented as ``json.dumps(indent=2)`` down to level 4, each
    value from there on one line as ``json.dumps`` writes it."""
    if level >= 4 or not isinstance(value, (dict, list)) or not value:
        return json.dumps(value, ensure_ascii=False)
    pad, inner = "  " * level, "  " * (level + 1)
    if isinstance(value, dict):
        items = [f"{inner}{json.dumps(k, ensure_ascii=False)}: {_ref_layout(v, level + 1)}"
                 for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    return "[\n" + ",\n".join(f"{inner}{_ref_layout(v, level + 1)}" for v in value) \
        + f"\n{pad}]"


@settings(derandomize=True, max_examples=300, deadline=None)
@given(st.recursive(_JSON, lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(_TEXT, inner, max_size=3), max_leaves=20))
def test_compare_json_layout_is_json_dumps_cut_at_level_4(value: Any) -> None:
    from stagetimer._render.json_text import _layered as _layout
    from stagetimer._render.json_text import strict_json

    finite = _finite(value)
    assert strict_json(_layout, value) == _ref_json_escaped(_ref_layout(finite)) + "\n"


def test_indented_json_of_values_past_a_float() -> None:
    value = {"sum": 1e308 * 10, "ratio": [math.nan, -math.inf, 1.5], "n": 10**40}
    assert indented_json(value) == json.dumps(
        {"sum": None, "ratio": [None, None, 1.5], "n": 10**40}, indent=2
    ) + "\n"


# -- CSV ---------------------------------------------------------------------

_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def _ref_safe(text: str) -> str:
    shown = escape_text(text)
    return "'" + shown if shown[:1] in _FORMULA and shown else shown


@settings(derandomize=True, max_examples=400, deadline=None)
@given(st.lists(st.one_of(_TEXT, st.sampled_from(["=1+1", "+1", "-1", "@A1", "\t=1", "\r=1",
                                                   " =1", "'=1", "=", ""])), min_size=1,
                max_size=4),
       st.lists(st.one_of(st.none(), st.integers(-5, 5), st.floats(allow_nan=False),
                          st.just({"=x": [1]}), st.just(["-y"])), min_size=1, max_size=4))
def test_csv_cells_are_the_formula_rule_read_back(texts: list[str], others: list[Any]) -> None:
    columns = [f"c{i}" for i in range(len(texts) + len(others))]
    row = dict(zip(columns, [*texts, *others], strict=True))
    back = list(csv.reader(io.StringIO(records_csv([row]))))
    assert back[0] == columns
    expected_texts = [_ref_safe(t) for t in texts]
    expected_others = [
        "" if v is None else _ref_safe(json.dumps(v, ensure_ascii=False, sort_keys=True))
        if isinstance(v, (dict, list)) else str(v) if not isinstance(v, float) else repr(v)
        for v in others
    ]
    assert back[1] == [*expected_texts, *expected_others]
    for cell in expected_texts:
        assert not cell.startswith(_FORMULA)
    assert [spreadsheet_safe(t) for t in texts] == expected_texts


# -- Markdown ----------------------------------------------------------------


@settings(derandomize=True, max_examples=300, deadline=None)
@given(st.text(st.sampled_from([*string.punctuation, " ", " ", "a", "b", "\xe9", "\x1b",
                                "\u202e", "\N{SNOWMAN}", "\t", "1", "#"]), max_size=10))
def test_markdown_text_renders_as_its_escaped_text(text: str) -> None:
    from helpers.markdown import rendered, table_rows

    shown = escape_text(text)
    cell = markdown_text(text)
    # as a table cell (the table, compare --markdown) and as a paragraph (compute)
    rows = table_rows(f"| h |\n|---|\n| {cell} |\n")
    assert rows[1] == [shown]
    if shown.strip(" "):
        paragraph = [t for tag, t in rendered(f"**{cell}**\n").blocks if tag == "p"]
        assert paragraph == [shown]
    # the fast branch (no space to keep) is the text escaped, nothing more
    if shown == shown.strip(" "):
        assert "&#32;" not in cell


# -- LaTeX -------------------------------------------------------------------

_UNLATEX = [
    (r"\textbackslash{}", "\\"), (r"\textasciitilde{}", "~"), (r"\textasciicircum{}", "^"),
    (r"\textless{}", "<"), (r"\textgreater{}", ">"), (r"\textbar{}", "|"),
    (r"\texttt{\char34}", '"'), (r"\textasciigrave{}", "`"), (r"\textquotesingle{}", "'"),
    (r"$\mu$", "\N{MICRO SIGN}"), (r"$\pm$", "\N{PLUS-MINUS SIGN}"),
    (r"$\times$", "\N{MULTIPLICATION SIGN}"), ("{[}", "["), ("{]}", "]"), ("-{}", "-"),
    *((f"\\{c}", c) for c in "&%$#_{}"),
]
_TOKEN = re.compile("|".join(re.escape(k) for k, _ in _UNLATEX) + "|.", re.S)


def _unlatex(text: str) -> str:
    """What pdflatex prints for ``latex_text``'s output, as characters (the escapes read
    back; a code written as ``\\textbackslash{}u2603`` reads as that text)."""
    table = dict(_UNLATEX)
    return "".join(table.get(m.group(), m.group()) for m in _TOKEN.finditer(text))


def _printed(text: str) -> str:
    """``escape_text(text)`` with each character past ASCII as ``\\xNN``/``\\uNNNN``,
    except the three signs written as math."""
    kept = "\N{MICRO SIGN}\N{PLUS-MINUS SIGN}\N{MULTIPLICATION SIGN}"
    return "".join(
        c if " " <= c <= "~" or c in kept
        else "\\" + (f"x{ord(c):02x}" if ord(c) < 0x100 else f"u{ord(c):04x}")
        for c in escape_text(text)
    )


@settings(derandomize=True, max_examples=400, deadline=None)
@given(st.text(st.sampled_from([*string.printable, "\xe9", "\N{MICRO SIGN}",
                                "\N{PLUS-MINUS SIGN}", "\N{MULTIPLICATION SIGN}",
                                "\N{SNOWMAN}", "\u202e", "\x1b", "\U0001f600"]), max_size=12))
def test_latex_text_reads_back_as_the_text(text: str) -> None:
    out = latex_text(text)
    assert _unlatex(out) == _printed(text)
    assert out.isascii()
    # nothing TeX acts on is left bare: every special character sits inside an escape
    bare = _TOKEN.sub(lambda m: "" if len(m.group()) > 1 else m.group(), out)
    assert not set(bare) & set("\\&%$#_{}~^[]<>|\"`'")


# -- the text report's table -------------------------------------------------


def _ref_table(report: Any) -> list[str]:
    """The table's lines built cell by cell with ``ljust``/``rjust`` from the report's own
    figures (escaped as ``render_text`` escapes each line)."""
    several = len(report.hardware) > 1
    rows = [["stage", "runs", "total", "mean", "median", "sd", "min", "max"]
            + (["hardware"] if several else [])]
    for s in report.stages:
        rows.append([
            s.name, f"{s.runs}*" if s.flagged_runs else str(s.runs),
            *map(format_duration, (s.total_seconds, s.mean_seconds, s.median_seconds,
                                   s.stdev_seconds, s.min_seconds, s.max_seconds)),
            *([", ".join(s.hardware_ids) or "-"] if several else []),
        ])
    widths = [max(len(r[i]) for r in rows) for i in range(8)]
    return [
        escape_text(("  " + "  ".join(
            [r[0].ljust(widths[0]), *(c.rjust(w) for c, w in zip(r[1:8], widths[1:],
                                                                  strict=True)), *r[8:]]
        )).rstrip())
        for r in rows
    ]


_NAMES = ["{0}", "{", "}", "{:>99}", "ippo_train", "caf\xe9", "\N{SNOWMAN}x", "a" * 40, "x",
          "\x1b[2J", "%s", "nashconv", "\u202eevil"]


@pytest.mark.parametrize("seed", range(10))
def test_report_table_is_its_cells_padded_with_ljust_and_rjust(
    tmp_path: Path, seed: int
) -> None:
    from stagetimer._analysis.report import build_report
    from stagetimer._render.report_text import render_text

    rng = random.Random(seed)
    hardware = ["hw_a", "hw_b"][: rng.randint(1, 2)]
    stages = {
        name: {"runs": [
            {"seconds": rng.choice([0.0, 1e-7, 0.0009995, 0.25, 59.96, 3600.0, 1e6, -1.0])
             * rng.uniform(0.5, 2), "run_idx": i, "hardware_id": rng.choice(hardware)}
            for i in range(rng.randint(1, 4))]}
        for name in rng.sample(_NAMES, rng.randint(1, 6))
    }
    (tmp_path / "timings.json").write_text(json.dumps(stages))
    [report], problems = build_report([tmp_path])
    assert problems == []
    lines = render_text([report]).split("\n")
    expected = _ref_table(report)
    start = lines.index(expected[0])
    assert lines[start : start + len(expected)] == expected
