"""Values no writer could have written in a marker (a ``seconds`` of 1e308 or 10**400,
a negative one, a start in year 1 or 9999, a heartbeat of 1e-300 s) are flagged and left
out of every sum: ``attempts`` names them, ``lost``, ``compute``, the page and its
timeline count the attempt and sum nothing of it; none of them crashes."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pytest
from helpers.attempt_markers import iso, marker, plant, write_timings
from helpers.cli import run_cli
from helpers.compute_trees import GPU_NODE

from stagetimer import attempts
from stagetimer._store.markers import encode

NOW = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
START = NOW - datetime.timedelta(hours=2)
ELSEWHERE = {"host": "node-elsewhere", "boot_id": "b" * 36}
FAILED = {"outcome": "raised", "exception": "ValueError",
          "ended_at": iso(START + datetime.timedelta(seconds=5))}

ODD: list[tuple[str, dict[str, Any]]] = [
    ("seconds 1e308", {**FAILED, "seconds": 1e308}),
    ("seconds 10**400", {**FAILED, "seconds": 10**400}),
    ("seconds -5", {**FAILED, "seconds": -5.0}),
    ("start in year 1", {"started_at": "0001-01-01T00:00:00.000Z"}),
    ("start in year 9999", {"started_at": "9999-12-31T23:59:59.999Z"}),
    ("failed start in year 9999", {**FAILED, "seconds": 5.0,
                                   "started_at": "9999-12-31T23:59:59.999Z"}),
    ("heartbeat 1e-300", {"heartbeat": 1e-300}),
]


def tree(tmp_path: Path, odd: dict[str, Any]) -> Path:
    art = tmp_path / "suite" / "a"
    write_timings(art, {"prepare": [{"seconds": 10.0, "hardware_id": "hw-gpu", "run_idx": 0,
                                     "started_at": iso(START)}]})
    (art / "timings_hardware.json").write_text(
        json.dumps({"schema_version": 1, "hardware": {"hw-gpu": GPU_NODE}}))
    content = marker("train", started_at=iso(START), hardware_id="hw-gpu", writer=ELSEWHERE)
    content.update(odd)
    plant(art, content)  # an int of 400 digits is JSON: written as given
    return art


@pytest.mark.parametrize(("what", "odd"), ODD, ids=[w for w, _ in ODD])
def test_an_odd_value_is_flagged_and_summed_nowhere(
    tmp_path: Path, what: str, odd: dict[str, Any]
) -> None:
    art = tree(tmp_path, odd)

    (train,) = [a for a in attempts(art, now=NOW) if a.stage == "train"]
    lost = run_cli("lost", art, "--json")
    compute = run_cli("compute", art, "--json")
    page = run_cli("report", tmp_path / "suite", "--html", tmp_path / "r.html")

    assert train.odd and "\n" not in "".join(train.odd)
    assert (0, 0, 0) == (lost.returncode, compute.returncode, page.returncode), (
        lost.stderr + compute.stderr + page.stderr)
    total = json.loads(lost.stdout)["total"]
    assert {} == {k: v for k, v in total["lost_seconds"].items() if v}
    assert total["lost_seconds_upper"] in (0.0, None)
    statement = json.loads(compute.stdout)
    (hardware,) = statement["hardware"]
    assert (0, 0.0) == (hardware["lost"]["attempts"], hardware["lost"]["wall_seconds"])
    raw = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "left out of the sums" in raw
    assert "9999-" not in raw.split("<h2>Timeline</h2>")[1].split("<h2>")[0]


def test_lost_text_says_how_many_attempts_it_left_out(tmp_path: Path) -> None:
    art = tree(tmp_path, {**FAILED, "seconds": 1e308})

    done = run_cli("lost", art)

    assert "1 attempt left out of the sums: its marker holds values no writer" in done.stdout
    assert "1e+308" not in done.stdout.split("Attempts lost")[0]


def test_a_sound_marker_is_not_flagged(tmp_path: Path) -> None:
    art = tree(tmp_path, {**FAILED, "seconds": 5.0, "heartbeat": 10})

    (train,) = [a for a in attempts(art, now=NOW) if a.stage == "train"]

    assert () == train.odd
    assert b"1e308" not in encode(marker())
