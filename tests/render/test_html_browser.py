"""The HTML pages in a real browser: Debian's Chromium, driven by Playwright.

For the README's example suite and for hostile names: the page asks for nothing but
itself, logs no console error and opens no dialog; the tables show ``--json``'s
numbers, with JavaScript on and off; a screenshot is not blank; printed to A4, no
table is wider than the paper and every table value is in the PDF's text; the text is
legible in print. Needs the ``html-test`` extra (``pip install 'stagetimer[html-test]'``)
and a Chromium (``apt-get install chromium``); skipped with the reason otherwise.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from helpers.cli import run_cli
from helpers.html_suites import example_suite, hostile_suite

from stagetimer._analysis.compare.model import FASTER, SLOWER
from stagetimer._escape import escape_text
from stagetimer._render.compare.text import format_ratio, times
from stagetimer._render.duration import format_duration

sync_api = pytest.importorskip("playwright.sync_api", reason="needs the html-test extra")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
if not os.access(CHROMIUM, os.X_OK):
    pytest.skip("needs Chromium (apt-get install chromium)", allow_module_level=True)

# No network, no first-run or background work: the browser asks for nothing itself.
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
#: A4's width less the page's 12 mm margins, in CSS pixels (96 per inch)
A4_CONTENT_PX = int((210 - 24) / 25.4 * 96)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One Chromium for the module (Playwright starts it with a fresh profile of its own)."""
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS,
                                              headless=True)
        yield chromium
        chromium.close()


@attrs.define
class Opened:
    """A page as the browser loaded it, and everything it did while loading."""

    page: Any
    requests: list[str] = attrs.Factory(list)
    console: list[tuple[str, str]] = attrs.Factory(list)
    dialogs: list[str] = attrs.Factory(list)
    errors: list[str] = attrs.Factory(list)


@pytest.fixture
def open_page(browser: Any) -> Iterator[Any]:
    contexts: list[Any] = []

    def opened(path: Path, *, javascript: bool = True, width: int = 1100) -> Opened:
        context = browser.new_context(java_script_enabled=javascript,
                                      viewport={"width": width, "height": 900})
        contexts.append(context)
        page = context.new_page()
        seen = Opened(page)
        context.on("request", lambda r: seen.requests.append(r.url))
        page.on("console", lambda m: seen.console.append((m.type, m.text)))
        page.on("pageerror", lambda e: seen.errors.append(str(e)))

        def dialog(d: Any) -> None:
            seen.dialogs.append(d.message)
            d.dismiss()

        page.on("dialog", dialog)
        page.goto(path.as_uri(), wait_until="load")
        page.wait_for_timeout(200)  # anything a script would do after load
        return seen

    yield opened
    for context in contexts:
        context.close()


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Any]]:
    """name -> (the page, what ``--json`` said of the same files)."""
    root = tmp_path_factory.mktemp("pages")
    base = example_suite(root / "base")
    new = example_suite(root / "new", "--seeds", "5")
    hostile, other = hostile_suite(root / "hostile"), hostile_suite(root / "other", scale=1.7)
    made = {}
    for name, args in (("example report", ["report", root / "base"]),
                       ("hostile report", ["report", hostile]),
                       ("example compare", ["compare", base, new]),
                       ("hostile compare", ["compare", hostile, other])):
        path = root / (name.replace(" ", "-") + ".html")
        assert 0 == run_cli(*args, "--html", path).returncode
        made[name] = (path, json.loads(run_cli(*args, "--json").stdout))
    return made


NAMES = ["example report", "hostile report", "example compare", "hostile compare"]


def _values(cell: str) -> list[str]:
    """The words of a cell that hold a letter or a digit."""
    return [word for word in cell.split() if any(ch.isalnum() for ch in word)]


def _rows(page: Any, table: str) -> list[list[list[str]]]:
    """Each ``<tbody>`` of ``table``: its rows' cells' text, as the browser has them."""
    groups = []
    for body in page.locator(f"table#{table} tbody").all():
        rows = []
        for row in body.locator("tr").all():
            rows.append([c.text_content() for c in row.locator("th, td").all()])
        groups.append(rows)
    return groups


def _report_expected(data: dict[str, Any]) -> list[list[list[str]]]:
    groups = []
    for artifact in data["artifacts"]:
        rows = [[escape_text(artifact["path"])]]
        for s in artifact["stages"]:
            figures = [s[k] for k in ("total_seconds", "mean_seconds", "median_seconds",
                                      "stdev_seconds", "min_seconds", "max_seconds")]
            rows.append([escape_text(s["name"]), str(s["runs"]), *map(format_duration, figures)])
        groups.append(rows)
    return groups


def _ratio(value: float | None) -> str:
    return "-" if value is None else format_ratio(value)


def _compare_expected(data: dict[str, Any]) -> list[dict[str, list[str]]]:
    groups = []
    for pair in data["pairs"]:
        rows = {}
        for s in pair["stages"]:
            ci = s["ratio_ci"]
            verdict = times(s["ratio"]) if s["verdict"] in (FASTER, SLOWER) else s["verdict"]
            rows[escape_text(s["name"])] = [
                escape_text(s["name"]),
                str(s["base"]["runs"]), format_duration(s["base"]["median_seconds"]),
                str(s["new"]["runs"]), format_duration(s["new"]["median_seconds"]),
                _ratio(s["ratio"]),
                "-" if ci is None else f"{format_ratio(ci[0])} to {format_ratio(ci[1])}",
                _ratio(s["p_value"]), _ratio(s["q_value"]), verdict,
            ]
        groups.append(rows)
    return groups


def _check_numbers(page: Any, name: str, data: dict[str, Any]) -> None:
    if name.endswith("report"):
        assert _report_expected(data) == _rows(page, "stages")
        return
    shown = _rows(page, "compare")
    expected = _compare_expected(data)
    assert len(expected) == len(shown)
    for rows, group in zip(expected, shown, strict=True):
        assert {row[0]: row[:10] for row in group[1:]} == rows


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_the_page_loads_alone_quietly_and_shows_the_json_numbers(
    open_page: Any, pages: dict[str, tuple[Path, Any]], name: str
) -> None:
    path, data = pages[name]

    seen = open_page(path)

    assert [path.as_uri()] == seen.requests
    assert [] == [text for kind, text in seen.console if kind in ("error", "warning")]
    assert ([], []) == (seen.dialogs, seen.errors)
    assert 1 == seen.page.locator("script").count()
    _check_numbers(seen.page, name, data)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_without_javascript_the_tables_still_show_the_json_numbers(
    open_page: Any, pages: dict[str, tuple[Path, Any]], name: str
) -> None:
    path, data = pages[name]

    seen = open_page(path, javascript=False)

    assert [path.as_uri()] == seen.requests
    assert seen.page.locator("input[data-filter]").is_hidden()  # the script's box is not there
    _check_numbers(seen.page, name, data)


@pytest.mark.slow
def test_the_filter_box_hides_the_rows_that_do_not_match(
    open_page: Any, pages: dict[str, tuple[Path, Any]]
) -> None:
    seen = open_page(pages["example report"][0])
    page = seen.page

    page.fill("input[data-filter]", "evaluate")

    visible = [r.text_content() for r in page.locator("table#stages tbody tr").all()
               if r.is_visible()]
    assert 2 == len(visible) and visible[1].startswith("evaluate")


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_a_screenshot_of_the_page_is_not_blank(
    open_page: Any, pages: dict[str, tuple[Path, Any]], name: str, tmp_path: Path
) -> None:
    from PIL import Image

    seen = open_page(pages[name][0])

    image = Image.open(io.BytesIO(seen.page.screenshot(full_page=True))).convert("RGB")
    colours = image.getcolors(maxcolors=1 << 24) or []
    inked = sum(n for n, rgb in colours if sum(rgb) < 600)
    assert len(colours) > 20  # text, marks, bars: not one flat colour
    assert inked > 0.01 * image.width * image.height
    # the charts are drawn: the marks' blue is there
    assert any(b > r + 60 and b > 120 for _, (r, g, b) in colours)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_printed_on_a4_no_table_is_clipped_and_text_is_dark(
    open_page: Any, pages: dict[str, tuple[Path, Any]], name: str
) -> None:
    seen = open_page(pages[name][0], width=A4_CONTENT_PX)
    page = seen.page
    page.emulate_media(media="print")

    widths = page.eval_on_selector_all(
        "table", "ts => ts.map(t => [t.getBoundingClientRect().right, t.scrollWidth])")
    room = page.evaluate("document.documentElement.clientWidth")
    colours = page.eval_on_selector_all(
        "th, td, p, li, h1, h2, h3, svg text",
        "es => es.map(e => getComputedStyle(e).color + '|' + getComputedStyle(e).fill)")

    assert widths and all(right <= room + 0.5 and scroll <= room for right, scroll in widths)
    assert min(_contrast(c) for c in colours) >= 7.0


def _contrast(colours: str) -> float:
    """WCAG contrast against white of the text colour (an SVG text's fill)."""
    color, fill = colours.split("|")
    chosen = fill if fill.startswith("rgb(") and color == "rgb(0, 0, 0)" else color
    r, g, b = (int(v) / 255 for v in chosen[chosen.index("(") + 1 : -1].split(",")[:3])
    lum = sum(w * (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4)
              for w, c in zip((0.2126, 0.7152, 0.0722), (r, g, b), strict=True))
    return 1.05 / (lum + 0.05)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="needs pdftotext (poppler-utils)")
@pytest.mark.parametrize("name", ["example report", "example compare"])
def test_the_a4_pdf_holds_every_table_value(
    open_page: Any, pages: dict[str, tuple[Path, Any]], name: str, tmp_path: Path
) -> None:
    seen = open_page(pages[name][0])
    pdf = tmp_path / "page.pdf"
    seen.page.pdf(path=str(pdf), format="A4")

    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True,
                          check=True, timeout=60).stdout
    cells = [c for group in _rows(seen.page, "stages" if "report" in name else "compare")
             for row in group for c in row]

    # A cell may wrap onto lines of its own (the text reads row by row across the
    # columns): each of its words is looked for, whole. Words of punctuation alone
    # ("->", "-" for a value one side lacks) are not values, and pdftotext does not
    # give them back as drawn ("peak 27.3 MiB -> -" comes out as "peak 27.3 MiB >-").
    words = set(text.split())
    assert cells and [] == [c for c in cells if not set(_values(c)) <= words]
