"""``stagetimer history --html``: one page under the rules of every page, then in Chromium.

The suite's names are hostile (markup in a stage's name, a host and a package version):
the page shows them as text. Every mark of a chart (each seed, each point's median, each
segment, each change point) carries a tooltip naming its point's commit and its value.
In Chromium (Playwright): nothing is requested, no script error or dialog, and the
tooltips and tables hold what ``--json`` says.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.cli import run_cli
from helpers.git_repo import git, make_repo

from stagetimer._render.duration import format_duration
from stagetimer.hardware import CpuInfo, Hardware, description, hardware_id
from stagetimer.software import software_id

STAGE = "<script>alert('stage')</script>"
MACHINE = Hardware(host="<img src=x onerror=alert(1)>", os="Linux", python="CPython 3.11.7",
                   machine="x86_64", cpu=CpuInfo(affinity=(0,), logical_cpus=1,
                                                 physical_cores=1, model_name="EPYC"))
SEEDS = (1.00, 1.02, 0.98)


def _write(directory: Path, commit: str, version: str, factor: float, minute: int) -> None:
    directory.mkdir(parents=True)
    sw = {"python": "CPython 3.11.7",
          "code": {"commit": commit, "dirty": False, "diff_sha256": None},
          "packages": {"torch": version}, "accelerators": {}, "sources": {}}
    hw_id, sw_id = hardware_id(MACHINE), software_id(sw)
    runs = [{"seconds": s * factor, "hardware_id": hw_id, "software_id": sw_id, "run_idx": i,
             "started_at": f"2026-03-01T10:{minute:02d}:0{i}.000Z"} for i, s in enumerate(SEEDS)]
    (directory / "timings.json").write_text(json.dumps(
        {STAGE: {"total_seconds": sum(r["seconds"] for r in runs), "runs": runs}}))
    (directory / "timings_hardware.json").write_text(json.dumps(
        {"schema_version": 1, "hardware": {hw_id: description(MACHINE)},
         "software": {sw_id: sw}}))


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """(the page, ``--json`` of the same files): 8 commits, 40 % slower from the sixth,
    with torch's version become markup."""
    root = tmp_path_factory.mktemp("history-page")
    repo = make_repo(root / "repo")
    for i in range(8):
        (repo / "train.py").write_text(f"print({i})\n")
        git(repo, "commit", "-q", "-am", f"<b>change</b> {i}")
        version = "2.4.1" if i < 5 else "<svg onload=alert(2)>"
        _write(root / "suite" / f"{i}", git(repo, "rev-parse", "HEAD"), version,
               1.4 if i >= 5 else 1.0, i)
    page = root / "history.html"
    ran = run_cli("history", root / "suite", "--repo", repo, "--html", page)
    assert ran.returncode == 0, ran.stderr
    data = json.loads(run_cli("history", root / "suite", "--repo", repo, "--json").stdout)
    return page, data


def test_the_page_loads_nothing_and_escapes_every_name(made: tuple[Path, dict[str, Any]]) -> None:
    text = made[0].read_text()
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', text)
    assert policy is not None and policy.group(1).startswith("default-src 'none';")
    assert "<script>alert" not in text and "<img src" not in text and "<svg onload" not in text
    assert "&lt;script&gt;alert(&#x27;stage&#x27;)&lt;/script&gt;" in text
    assert "&lt;svg onload=alert(2)&gt;" in text  # the package version that changed
    assert "&lt;b&gt;change&lt;/b&gt; 5" in text  # the commit's subject
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", text)


def test_every_mark_has_a_tooltip_with_its_commit_and_value(
    made: tuple[Path, dict[str, Any]],
) -> None:
    text = made[0].read_text()
    [series] = made[1]["series"]
    circles = re.findall(r"<circle [^>]*><title>([^<]*)</title></circle>", text)
    expected = [f"{p['commit'][:10]} (2026-03-01 10:{i:02d}): seed {format_duration(s)}"
                for i, p in enumerate(series["points"]) for s in p["seeds"]]
    assert circles == expected
    medians = re.findall(r'<line class="med"[^>]*><title>([^<]*)</title>', text)
    assert medians == [f"{p['commit'][:10]} (2026-03-01 10:{i:02d}): median "
                       f"{format_duration(p['median_seconds'])}"
                       for i, p in enumerate(series["points"])]
    changes = re.findall(r'<line class="limit"[^>]*><title>([^<]*)</title>', text)
    assert changes == [f"{series['changes'][0]['after']['commit'][:10]} (2026-03-01 10:05): "
                       "change point, 1.40x slower"]
    assert text.count("<line ") == text.count("</title></line>") + 2  # the two axes


def test_the_same_files_give_the_same_page(
    made: tuple[Path, dict[str, Any]], tmp_path: Path,
) -> None:
    page, _ = made
    suite, repo = page.parent / "suite", page.parent / "repo"
    again = tmp_path / "again.html"
    assert run_cli("history", suite, "--repo", repo, "--html", again).returncode == 0
    assert again.read_bytes() == page.read_bytes()


# --- in Chromium -----------------------------------------------------------------------

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs the html-test extra")
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip("needs Chromium (apt-get install chromium)")
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS,
                                              headless=True)
        yield chromium
        chromium.close()


@pytest.mark.parametrize("javascript", [True, False])
def test_in_chromium_nothing_is_requested_and_the_marks_say_their_values(
    browser: Any, made: tuple[Path, dict[str, Any]], javascript: bool,
) -> None:
    page_path, data = made
    context = browser.new_context(java_script_enabled=javascript)
    try:
        page = context.new_page()
        requests: list[str] = []
        problems: list[str] = []
        context.on("request", lambda r: requests.append(r.url))
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.on("dialog", lambda d: (problems.append(d.message), d.dismiss()))
        page.goto(page_path.as_uri(), wait_until="load")
        page.wait_for_timeout(200)
        assert requests == [page_path.as_uri()]
        assert problems == []
        [series] = data["series"]
        titles = page.locator("svg circle title").all_text_contents()
        assert len(titles) == sum(len(p["seeds"]) for p in series["points"])
        assert all(t.startswith(p["commit"][:10]) for t, p in zip(
            titles, [p for p in series["points"] for _ in p["seeds"]], strict=True))
        heading = page.locator("h2").nth(1).text_content()
        assert heading is not None and heading.startswith(f"{STAGE} on hw-")
        cells = page.locator("table tbody tr").first.locator("th, td").all_text_contents()
        change = series["changes"][0]
        assert cells[2] == f"{change['after']['commit'][:10]} (2026-03-01 10:05)"
        assert cells[5] == "1.40x slower"
        assert "torch 2.4.1 → <svg onload=alert(2)>" in cells[8]
        box = page.locator("svg").first.bounding_box()
        assert box is not None and box["width"] > 300
    finally:
        context.close()


def test_past_two_thousand_seeds_each_point_shows_its_range_with_a_tooltip(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo")
    hw_id = hardware_id(MACHINE)
    for i in range(5):
        (repo / "train.py").write_text(f"print({i})\n")
        git(repo, "commit", "-q", "-am", f"change {i}")
        _write(tmp_path / "suite" / f"{i}", git(repo, "rev-parse", "HEAD"), "2.4.1", 1.0, i)
        data = json.loads((tmp_path / "suite" / f"{i}" / "timings.json").read_text())
        [stage] = data.values()
        stage["runs"] = [{**stage["runs"][0], "run_idx": r, "seconds": 1.0 + r * 1e-4}
                         for r in range(401)]
        (tmp_path / "suite" / f"{i}" / "timings.json").write_text(json.dumps(data))
    page = tmp_path / "big.html"
    assert run_cli("history", tmp_path / "suite", "--repo", repo, "--html", page).returncode == 0
    text = page.read_text()
    assert "<circle" not in text
    spreads = re.findall(r'<line class="spread"[^>]*><title>([^<]*)</title>', text)
    assert len(spreads) == 5
    assert all(t.endswith(": 401 seeds from 1.00 s to 1.04 s") for t in spreads)
    assert hw_id[:15] in text
