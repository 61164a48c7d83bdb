"""The page shows ``lost``'s summary (per cause, the effective-time ratio, the same
figures as ``lost --json``), and draws a killed attempt whose end nothing bounds up to its
last sign of life with an open end, never stretched to the moment of reading."""

from __future__ import annotations

import html
import json
import re
import signal
from pathlib import Path

from helpers.cli import run_cli
from helpers.html_suites import attempts_suite
from helpers.process_life import run_script

from stagetimer._render.html.svg import WIDTH

#: A fit killed in its second epoch (argv[1]): its last sign of life the epoch's marker.
NESTED_KILL = """
import os, signal, sys, time
from stagetimer import Recorder, stage
rec = Recorder(sys.argv[1], policy="upsert")
with stage("fit", run_idx=0, recorder=rec):
    with stage("epoch", run_idx=0, label="0", recorder=rec):
        time.sleep(0.6)
    with stage("epoch", run_idx=0, label="1", recorder=rec):
        time.sleep(0.1)
        os.kill(os.getpid(), signal.SIGKILL)
"""


def _page(tmp_path: Path, suite: Path) -> str:
    done = run_cli("report", suite, "--html", tmp_path / "r.html")
    assert 0 == done.returncode, done.stderr
    return (tmp_path / "r.html").read_text(encoding="utf-8")


def test_the_page_shows_lost_by_cause_and_the_effective_ratio(tmp_path: Path) -> None:
    suite = attempts_suite(tmp_path / "suite")

    raw = _page(tmp_path, suite)
    total = json.loads(run_cli("lost", suite, "--json").stdout)["total"]

    section = raw.split("<h2>Lost time</h2>")[1].split("<h2>")[0]
    assert f"{total['effective_ratio']:.3f} in all" in section
    (row,) = re.findall(r'<tr><th scope="row">all</th>(.*?)</tr>', section)
    cells = [html.unescape(c) for c in re.findall(r"<td[^>]*>([^<]*)</td>", row)]
    assert f"{total['effective_ratio']:.3f}" == cells[5]
    assert "killed" in cells[4] and "raised" in cells[4]


def test_a_killed_attempt_without_an_upper_end_is_drawn_open_at_its_last_sign_of_life(
    tmp_path: Path,
) -> None:
    done = run_script(NESTED_KILL, tmp_path / "suite", check=False)
    assert -signal.SIGKILL == done.returncode

    raw = _page(tmp_path, tmp_path / "suite")

    (fit,) = re.findall(r'<rect class="killed" x="([\d.]+)" y="[\d.]+" width="([\d.]+)"'
                        r'[^>]*><title>(fit, [^<]*)</title>', raw)
    opened = re.findall(r'<line class="one" x1="([\d.]+)" x2="([\d.]+)"[^>]*>'
                        r"<title>(fit, [^<]*)</title>", raw)
    assert 1 == len(opened)
    x1, x2, title = opened[0]
    assert float(fit[0]) + float(fit[1]) == float(x1)  # from its last sign of life
    assert float(x2) <= WIDTH  # a stub, not a bar to the moment of reading
    assert float(fit[1]) > 100  # the fit ran most of the axis: its scale is what ran
    assert "ended after" in html.unescape(title)
