"""``report --html`` and ``compare --html`` read as a file: self-contained, the same bytes
for the same files, every name escaped, bad input giving a page or one clear error. The
browser's view of the pages is in ``test_html_browser``."""

from __future__ import annotations

import base64
import hashlib
import html.parser
import json
import os
import re
import sys
from pathlib import Path

import pytest
from helpers.cli import run_cli
from helpers.html_suites import attempts_suite, hostile_suite
from helpers.trees import write_artifact

#: every element the pages are made of: anything else came from a file
ELEMENTS = {
    "html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "span", "br",
    "table", "thead", "tbody", "tr", "th", "td", "ul", "li", "label", "input", "script",
    "svg", "desc", "line", "text", "circle", "rect",
}


class _Parsed(html.parser.HTMLParser):
    """Each element and attribute of a page, as a browser's tokenizer meets them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str | None]] = []
        self.text: list[str] = []
        self.comments: list[str] = []
        self.raw: dict[str, list[str]] = {"script": [], "style": []}
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes.extend(attrs)
        self._in = tag if tag in self.raw else None

    def handle_endtag(self, tag: str) -> None:
        self._in = None

    def handle_data(self, data: str) -> None:
        if self._in is not None:
            self.raw[self._in].append(data)
        else:
            self.text.append(data)

    def handle_comment(self, data: str) -> None:
        self.comments.append(data)


def parsed(path: Path) -> _Parsed:
    page = _Parsed()
    page.feed(path.read_bytes().decode("utf-8"))
    page.close()
    return page


def _sha(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    return hostile_suite(tmp_path / "hostile")


def test_report_page_is_byte_identical_for_the_same_files(tmp_path: Path) -> None:
    write_artifact(tmp_path / "suite" / "a", {"train": [1.0, 2.0, 3.0], "eval": [0.1]})

    first = run_cli("report", tmp_path / "suite", "--html", tmp_path / "1.html")
    second = run_cli("report", tmp_path / "suite", "--html", tmp_path / "2.html")

    assert (0, 0) == (first.returncode, second.returncode)
    assert (tmp_path / "1.html").read_bytes() == (tmp_path / "2.html").read_bytes()


def test_compare_page_is_byte_identical_for_the_same_files(tmp_path: Path) -> None:
    write_artifact(tmp_path / "base", {"train": [1.0, 1.1, 1.2], "eval": [0.1, 0.2]})
    write_artifact(tmp_path / "new", {"train": [2.0, 2.1, 2.2], "eval": [0.1, 0.2]})

    for name in ("1.html", "2.html"):
        assert 0 == run_cli("compare", tmp_path / "base", tmp_path / "new",
                            "--html", tmp_path / name).returncode

    assert (tmp_path / "1.html").read_bytes() == (tmp_path / "2.html").read_bytes()


def test_the_page_allows_only_its_own_style_and_script_by_their_hashes(tmp_path: Path) -> None:
    write_artifact(tmp_path / "a", {"train": [1.0, 2.0]})
    run_cli("report", tmp_path / "a", "--html", tmp_path / "r.html")

    page = parsed(tmp_path / "r.html")
    [policy] = [v for k, v in page.attributes if k == "content" and v and "default-src" in v]
    [style], [script] = page.raw["style"], page.raw["script"]

    assert policy.startswith("default-src 'none'; ")
    assert f"style-src {_sha(style)};" in policy
    assert f"script-src {_sha(script)};" in policy
    assert "unsafe" not in policy
    # nothing that could load: no src, href, url() or @import anywhere
    assert [] == [k for k, _ in page.attributes if k in ("src", "href", "srcset", "action")]
    assert "url(" not in style and "@import" not in style


@pytest.mark.parametrize("command", ["report", "compare"])
def test_hostile_names_make_no_markup_and_show_as_text(
    hostile: Path, tmp_path: Path, command: str
) -> None:
    other = hostile_suite(tmp_path / "other", scale=2.0)
    args = [hostile] if command == "report" else [hostile, other]

    result = run_cli(command, *args, "--html", tmp_path / "page.html")
    page = parsed(tmp_path / "page.html")

    assert 0 == result.returncode, result.stderr
    assert set(page.tags) <= ELEMENTS
    assert ["script"] == [t for t in page.tags if t == "script"]
    assert [] == [k for k, _ in page.attributes if k.startswith("on") or k in ("src", "href")]
    assert [] == page.comments
    text = "".join(page.text)
    for name in ("<script>alert(1)</script>", "</svg><script>alert(2)</script><svg>",
                 "\"' onmouseover=alert(4) x='"):
        assert name in text  # shown as the text it is
    assert "\\u202egnp.exe\\u202c" in text  # the override shown, not obeyed
    assert "\\x1b[2Jcleared \\u2028line" in text
    assert "\N{RIGHT-TO-LEFT OVERRIDE}" not in text and "\x1b" not in text
    assert "caf\\udce9-\\udcff" in text  # bytes that are not UTF-8, as their escapes


def test_a_name_that_is_an_end_tag_of_svg_stays_inside_its_title(tmp_path: Path) -> None:
    name = "</title></svg></script>"
    write_artifact(tmp_path / "a", {name: [1.0, 2.0]})
    run_cli("report", tmp_path / "a", "--html", tmp_path / "r.html")

    raw = (tmp_path / "r.html").read_text(encoding="utf-8")

    assert name not in raw
    assert "&lt;/title&gt;&lt;/svg&gt;&lt;/script&gt;" in raw
    assert raw.count("</svg>") == raw.count("<svg ")


def test_a_failed_and_a_killed_attempt_are_drawn_marked(tmp_path: Path) -> None:
    suite = attempts_suite(tmp_path / "suite" / "a")

    result = run_cli("report", suite, "--html", tmp_path / "r.html")
    raw = (tmp_path / "r.html").read_text(encoding="utf-8")

    assert 0 == result.returncode, result.stderr
    failed = re.findall(r'<rect class="failed"[^>]*><title>([^<]*)</title>', raw)
    killed = re.findall(r'<rect class="killed"[^>]*><title>([^<]*)</title>', raw)
    finished = re.findall(r'<rect class="ok"[^>]*><title>([^<]*)</title>', raw)
    assert 1 == len(failed) and "evaluate, run 0" in failed[0]
    assert "failed (raised), ValueError" in failed[0]
    assert 1 == len(killed) and "train, run 3" in killed[0] and "killed" in killed[0]
    assert 3 == len(finished)
    assert "5 attempts (3 finished, 1 failed, 1 killed)" in raw


def test_the_killed_attempt_page_does_not_change_with_the_clock(tmp_path: Path) -> None:
    suite = attempts_suite(tmp_path / "suite")
    run_cli("report", suite, "--html", tmp_path / "1.html")
    os.utime(suite / "timings.json")  # time passes; the files say the same
    run_cli("report", suite, "--html", tmp_path / "2.html")

    assert (tmp_path / "1.html").read_bytes() == (tmp_path / "2.html").read_bytes()


@pytest.mark.parametrize("seconds", [
    [0.0, 5e-324], [1e-300, 1e300], [sys.float_info.max, 1.0], [sys.float_info.max] * 2,
    [0.0], [5e-324, sys.float_info.max],
])
def test_durations_at_the_ends_of_the_float_range_give_a_page(
    tmp_path: Path, seconds: list[float]
) -> None:
    write_artifact(tmp_path / "a", {"train": seconds})

    result = run_cli("report", tmp_path / "a", "--html", tmp_path / "r.html")
    raw = (tmp_path / "r.html").read_text(encoding="utf-8")

    assert 0 == result.returncode, result.stderr
    assert not re.search(r'="[^"]*(nan|inf)', raw)  # every coordinate a number
    assert raw.endswith("</html>\n")


def test_a_run_no_writer_stores_is_named_and_the_page_loads(tmp_path: Path) -> None:
    write_artifact(tmp_path / "a", {"train": [1.0, float("nan"), -1.0, float("inf")]})

    result = run_cli("report", tmp_path / "a", "--html", tmp_path / "r.html")
    raw = (tmp_path / "r.html").read_text(encoding="utf-8")

    assert 0 == result.returncode
    assert "<td>4*</td>" in raw and "left out of the figures" in raw


def test_one_run_gives_a_page_and_no_runs_say_so(tmp_path: Path) -> None:
    write_artifact(tmp_path / "one", {"train": [1.0]})
    (tmp_path / "empty").mkdir()

    one = run_cli("report", tmp_path / "one", "--html", tmp_path / "one.html")
    none = run_cli("report", tmp_path / "empty", "--html", tmp_path / "none.html")
    pair = run_cli("compare", tmp_path / "one", tmp_path / "one", "--html", tmp_path / "c.html")

    assert (0, 0) == (one.returncode, pair.returncode)
    assert "too few runs" in (tmp_path / "c.html").read_text(encoding="utf-8")
    assert "No timings.json was found" in (tmp_path / "none.html").read_text(encoding="utf-8")
    assert "Traceback" not in none.stderr


def test_a_compare_of_a_side_that_cannot_be_read_is_one_error(tmp_path: Path) -> None:
    write_artifact(tmp_path / "base", {"train": [1.0]})

    result = run_cli("compare", tmp_path / "base", tmp_path / "missing",
                     "--html", tmp_path / "c.html")

    assert 1 == result.returncode
    assert 1 == len(result.stderr.splitlines()) and "Traceback" not in result.stderr
    assert not (tmp_path / "c.html").exists()


@pytest.mark.parametrize("command", ["report", "compare"])
def test_a_page_path_that_cannot_be_written_is_named_before_any_work(
    tmp_path: Path, command: str
) -> None:
    write_artifact(tmp_path / "a", {"train": [1.0]})
    args = [tmp_path / "a"] if command == "report" else [tmp_path / "a", tmp_path / "a"]

    result = run_cli(command, *args, "--html", tmp_path / "no" / "such" / "p.html")

    assert result.returncode in (1, 2)
    assert "--html" in result.stderr and "does not exist" in result.stderr
    assert "" == result.stdout


def test_ten_thousand_stages_give_a_page_whose_chart_says_what_it_left_out(
    tmp_path: Path,
) -> None:
    write_artifact(tmp_path / "a", {f"stage{i}": [1.0 + i * 1e-4, 2.0] for i in range(10_000)})

    result = run_cli("report", tmp_path / "a", "--html", tmp_path / "r.html")
    raw = (tmp_path / "r.html").read_text(encoding="utf-8")

    assert 0 == result.returncode
    assert raw.count("<tr><th scope=\"row\">") == 10_000  # every stage in the table
    assert "The first 200 of 10000 stages are drawn; all are in the table." in raw
    assert len(raw.encode()) < 5_000_000


def test_a_stage_of_many_runs_is_drawn_as_a_histogram_and_says_so(tmp_path: Path) -> None:
    write_artifact(tmp_path / "a", {"train": [1.0 + i / 500 for i in range(500)],
                                    "eval": [0.5, 0.6]})

    run_cli("report", tmp_path / "a", "--html", tmp_path / "r.html")
    raw = (tmp_path / "r.html").read_text(encoding="utf-8")

    assert "drawn as a histogram" in raw
    bins = re.findall(r'<rect class="bin"[^>]*><title>(\d+) runs from', raw)
    assert 500 == sum(map(int, bins))
    assert 2 == raw.count('<circle class="run"')  # eval's two runs, each a mark


def test_every_chart_is_an_image_with_a_text_alternative(tmp_path: Path) -> None:
    suite = attempts_suite(tmp_path / "suite")
    run_cli("report", suite, "--html", tmp_path / "r.html")
    raw = (tmp_path / "r.html").read_text(encoding="utf-8")

    charts = re.findall(r'<svg [^>]*>\s*<desc>[^<]+</desc>', raw)
    assert len(charts) == raw.count("<svg ") >= 3
    assert all('role="img"' in c and re.search(r'aria-label="[^"]+"', c) for c in charts)
    assert re.findall(r"<th(?=[\s>])(?! scope=)", raw) == []  # every header cell says what it heads
    assert json.dumps(sorted(set(re.findall(r'<th scope="(\w+)"', raw)))) == \
        '["col", "row", "rowgroup"]'


@pytest.mark.parametrize("command", ["report", "compare"])
def test_every_mark_has_a_tooltip(hostile: Path, tmp_path: Path, command: str) -> None:
    args = [hostile] if command == "report" else [hostile, hostile_suite(tmp_path / "o", 2.0)]
    run_cli(command, *args, "--html", tmp_path / "p.html")
    raw = (tmp_path / "p.html").read_text(encoding="utf-8")

    marks = re.findall(r"<(circle|rect)[^>]*>(<title>)?", raw)
    assert marks and all(title for _, title in marks)


def test_start_times_at_the_ends_of_the_calendar_give_a_page(tmp_path: Path) -> None:
    runs = [
        {"seconds": sys.float_info.max, "run_idx": 0, "started_at": "0001-01-01T00:00:00.000Z"},
        {"seconds": 0.0, "run_idx": 1, "started_at": "9999-12-31T23:59:59.999Z"},
        {"seconds": 5e-324, "run_idx": 2, "started_at": "not a time"},
    ]
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "timings.json").write_text(json.dumps(
        {"train": {"total_seconds": sys.float_info.max, "runs": runs}}))

    result = run_cli("report", tmp_path / "a", "--html", tmp_path / "r.html")
    raw = (tmp_path / "r.html").read_text(encoding="utf-8")

    assert 0 == result.returncode, result.stderr
    assert "2 attempts (2 finished) on 1 node and rank lane, from 0001-01-01 00:00:00 UTC" in raw
    assert not re.search(r'="[^"]*(nan|inf)', raw)


def test_a_compare_of_many_stages_adds_a_histogram_of_every_ratio(tmp_path: Path) -> None:
    write_artifact(tmp_path / "base", {f"s{i}": [1.0, 1.1] for i in range(250)})
    write_artifact(tmp_path / "new", {f"s{i}": [1.0 + i / 250, 1.2] for i in range(250)})

    run_cli("compare", tmp_path / "base", tmp_path / "new", "--html", tmp_path / "c.html")
    raw = (tmp_path / "c.html").read_text(encoding="utf-8")

    assert "The first 200 of 250 stages are drawn above" in raw
    bins = re.findall(r'<rect class="bin"[^>]*><title>(\d+) stages from', raw)
    assert 250 == sum(map(int, bins))
    assert 250 == raw.count('<tr><th scope="row">')


def test_a_file_holding_a_lone_surrogate_is_one_error_and_the_rest_a_page(
    tmp_path: Path,
) -> None:
    write_artifact(tmp_path / "suite" / "good", {"train": [1.0, 2.0]})
    (tmp_path / "suite" / "bad").mkdir()
    (tmp_path / "suite" / "bad" / "timings.json").write_text(
        '{"lone \\udcff": {"total_seconds": 1.0, "runs": [{"seconds": 1.0}]}}')

    result = run_cli("report", tmp_path / "suite", "--html", tmp_path / "r.html")
    raw = (tmp_path / "r.html").read_text(encoding="utf-8")

    assert 1 == result.returncode
    [line] = [x for x in result.stderr.splitlines() if "bad" in x]
    assert "lone surrogate" in line and "Traceback" not in result.stderr
    assert "suite/good</th>" in raw and "suite/bad" not in raw
