"""Whatever lies in ``timings.attempts/``, readers name the bad entry, read the others,
never follow a link and never hang (each reader runs as a real process with a timeout)."""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.attempt_markers import marker, plant, write_timings
from helpers.cli import run_process

from stagetimer import StageTimerWarning, attempts
from stagetimer._analysis.tree import find_artifact_dirs
from stagetimer._format import ATTEMPTS_DIR, MARKER_MAX_BYTES

ELSEWHERE = {"host": "node-elsewhere", "boot_id": "b" * 36}
BAD_ID = "0123456789abcdef0123456789abcdef"


def _symlink(where: Path) -> None:
    target = where / "secret.txt"
    target.write_text("not yours")
    (where / f"{BAD_ID}.json").symlink_to(target)


def _symlink_to_marker(where: Path) -> None:
    good = marker(writer=ELSEWHERE)
    real = where.parent / "elsewhere.json"
    real.write_text(json.dumps({**good, "attempt_id": BAD_ID}))
    (where / f"{BAD_ID}.json").symlink_to(real)


def _fifo(where: Path) -> None:
    os.mkfifo(where / f"{BAD_ID}.json")


def _huge(where: Path) -> None:
    content = marker(writer=ELSEWHERE, attempt_id=BAD_ID, label="x" * MARKER_MAX_BYTES)
    (where / f"{BAD_ID}.json").write_text(json.dumps(content))


def _deep(where: Path) -> None:
    (where / f"{BAD_ID}.json").write_text("[" * 1000 + "]" * 1000)


def _not_json(where: Path) -> None:
    (where / f"{BAD_ID}.json").write_bytes(b"\xff\xfe not json {")


def _other_id(where: Path) -> None:
    (where / f"{BAD_ID}.json").write_text(json.dumps(marker(writer=ELSEWHERE)))


def _no_start(where: Path) -> None:
    content = marker(writer=ELSEWHERE, attempt_id=BAD_ID, started_at="yesterday")
    (where / f"{BAD_ID}.json").write_text(json.dumps(content))


def _directory(where: Path) -> None:
    (where / f"{BAD_ID}.json").mkdir()


def _misnamed(where: Path) -> None:
    (where / "notes.json").write_text(json.dumps(marker(writer=ELSEWHERE)))


BAD: dict[str, tuple[Callable[[Path], None], str]] = {
    "symlink": (_symlink, "symbolic link"),
    "symlink to a marker": (_symlink_to_marker, "symbolic link"),
    "fifo": (_fifo, "FIFO"),
    "huge": (_huge, f"{MARKER_MAX_BYTES}-byte limit"),
    "deep": (_deep, "deeper than"),
    "not json": (_not_json, "not UTF-8"),
    "another id inside": (_other_id, "not the one its name gives"),
    "no start": (_no_start, "expected a UTC time"),
    "a directory": (_directory, "a directory"),
    "misnamed": (_misnamed, "not named"),
}


def _tree(tmp_path: Path, plant_bad: Callable[[Path], None]) -> tuple[Path, str]:
    art = tmp_path / "art"
    write_timings(art, {"prepare": [{"seconds": 1.0}]})
    good = marker(writer=ELSEWHERE)
    plant(art, good)
    plant_bad(art / ATTEMPTS_DIR)
    return art, good["attempt_id"]


@pytest.mark.parametrize("case", list(BAD))
def test_lost_names_a_bad_marker_and_counts_the_others(tmp_path: Path, case: str) -> None:
    make, words = BAD[case]
    art, good = _tree(tmp_path, make)

    done = run_process("lost", art, "--json", timeout=60)

    assert 1 == done.returncode
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"stagetimer lost: {art / ATTEMPTS_DIR}") and words in line
    total = json.loads(done.stdout)["total"]
    assert {"finished": 1, "unknown": 1} == total["attempts"]
    assert good  # the good marker is the unknown one


@pytest.mark.parametrize("case", ["symlink", "fifo", "huge"])
def test_attempts_warns_once_per_bad_marker_and_goes_on(tmp_path: Path, case: str) -> None:
    art, good = _tree(tmp_path, BAD[case][0])

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = attempts(art)

    assert [good, None] == sorted((a.attempt_id for a in found), key=lambda i: i is None)
    (warned,) = caught
    assert issubclass(warned.category, StageTimerWarning) and BAD_ID in str(warned.message)


@pytest.mark.parametrize("kind", ["symlink", "file"])
def test_a_planted_markers_directory_is_named_and_never_read_through(
    tmp_path: Path, kind: str
) -> None:
    art = tmp_path / "art"
    write_timings(art, {"prepare": [{"seconds": 1.0}]})
    if kind == "symlink":
        elsewhere = tmp_path / "elsewhere"
        plant(elsewhere, marker(writer=ELSEWHERE))
        (art / ATTEMPTS_DIR).symlink_to(elsewhere / ATTEMPTS_DIR)
    else:
        (art / ATTEMPTS_DIR).write_text("{}")

    done = run_process("lost", art, "--json", timeout=60)

    assert 1 == done.returncode and "is not a directory" in done.stderr
    assert {"finished": 1} == json.loads(done.stdout)["total"]["attempts"]


def test_the_markers_directory_is_never_an_artifact_directory(tmp_path: Path) -> None:
    art = tmp_path / "art"
    write_timings(art, {"prepare": [{"seconds": 1.0}]})
    write_timings(art / ATTEMPTS_DIR, {"planted": [{"seconds": 5.0}]})

    found, problems = find_artifact_dirs([tmp_path])

    assert ([str(art)], []) == ([f.path for f in found], problems)
    with pytest.warns(StageTimerWarning, match="timings.json: is not named"):
        assert ["prepare"] == [a.stage for a in attempts(tmp_path)]
