"""A markers' directory that cannot be used: something planted at ``timings.attempts``
(a file, a link, a FIFO), another user's directory, a read-only one. The stages are
still recorded, with one warning at most, and nothing is written through a link.

Each scenario runs in its own interpreter with a timeout.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from helpers.process_life import REPO, run_script, stage_runs

from stagetimer._format import ATTEMPTS_DIR

STAGES = """
import json, sys, warnings
from stagetimer import Recorder, stage
warnings.simplefilter("always")
rec = Recorder(sys.argv[1])
with warnings.catch_warnings(record=True) as caught:
    for i in range(3):
        with stage("train", run_idx=i, recorder=rec):
            pass
print(json.dumps([str(w.message) for w in caught]))
"""


def _check(art: Path, warned: list[str]) -> None:
    runs = stage_runs(art, "train")
    assert [0, 1, 2] == [r["run_idx"] for r in runs]  # every stage recorded
    assert 1 == len(warned) and "started markers cannot be written" in warned[0], warned


@pytest.mark.parametrize("planted", ["file", "link to a directory", "dangling link", "fifo"])
def test_something_planted_at_the_markers_directory_is_never_followed(
    tmp_path: Path, planted: str
) -> None:
    art, elsewhere = tmp_path / "art", tmp_path / "elsewhere"
    art.mkdir()
    elsewhere.mkdir()
    where = art / ATTEMPTS_DIR
    if planted == "file":
        where.write_text("not a directory")
    elif planted == "link to a directory":
        where.symlink_to(elsewhere)
    elif planted == "dangling link":
        where.symlink_to(elsewhere / "missing")
    else:
        os.mkfifo(where)

    warned = json.loads(run_script(STAGES, art, timeout=30).stdout)

    _check(art, warned)
    assert [] == list(elsewhere.iterdir())  # nothing written through the link
    assert not (elsewhere / "missing").exists()
    if planted == "file":
        assert "not a directory" == where.read_text()


@pytest.mark.root
def test_a_read_only_markers_directory_costs_one_warning(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a read-only file system")
    art = tmp_path / "art"
    (art / ATTEMPTS_DIR).mkdir(parents=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(art / ATTEMPTS_DIR)],
        capture_output=True, text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr[-200:]}")
    try:
        warned = json.loads(run_script(STAGES, art, timeout=30).stdout)
    finally:
        subprocess.run(["umount", str(art / ATTEMPTS_DIR)], check=True)

    _check(art, warned)
    assert "Read-only file system" in warned[0]


def _python() -> str:
    for candidate in (sys.executable, "/usr/bin/python3"):
        if not os.path.realpath(candidate).startswith("/root/"):
            return candidate
    pytest.skip("no interpreter outside /root for another user to run")


@pytest.mark.root
def test_another_users_markers_directory_that_we_cannot_write_costs_one_warning() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to run as another user")
    # Outside pytest's own 0700 directory, which nobody cannot enter.
    top = Path(tempfile.mkdtemp(prefix="stagetimer-markers-"))
    try:
        _as_nobody(top)
    finally:
        shutil.rmtree(top)


def _as_nobody(top: Path) -> None:
    os.chmod(top, 0o755)
    art = top / "art"
    (art / ATTEMPTS_DIR).mkdir(parents=True)  # root's, 0755: nobody cannot write in it
    os.chmod(art, 0o777)
    env = {
        "PATH": "/usr/bin:/bin", "HOME": "/tmp",
        "PYTHONPATH": os.pathsep.join([str(REPO), *site.getsitepackages()]),
    }
    done = subprocess.run(
        ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
         _python(), "-c", STAGES, str(art)],
        capture_output=True, text=True, env=env, timeout=60, cwd="/tmp",
    )
    if "ModuleNotFoundError" in done.stderr:
        pytest.skip(f"nobody cannot import stagetimer here: {done.stderr[-200:]}")
    assert 0 == done.returncode, done.stderr[-2000:]

    _check(art, json.loads(done.stdout))
    assert "Permission denied" in json.loads(done.stdout)[0]
    assert [] == list((art / ATTEMPTS_DIR).iterdir())
