"""Other users' files in a shared directory: planted rescue files are named and never
folded unless asked for, and a planted sidecar symlink is never read or published.

Real users and a group (``useradd``, root only); each user's process runs with
``setpriv``, each with a timeout.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import site
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.process_life import REPO, stage_runs
from helpers.rescue import dead_owner

from stagetimer import recover
from stagetimer._cli import main
from stagetimer._format import RESCUE_FORMAT

# Names no other test uses, and no other run of this suite on the machine at the same time.
GROUP, ALICE, BOB = (f"{name}{os.getpid()}" for name in ("strcgrp", "strcalice", "strcbob"))

SAVE = """
import sys, warnings
from stagetimer import Recorder, record_timing
warnings.simplefilter("ignore")
rec = Recorder(sys.argv[1])
for idx in map(int, sys.argv[2:]):
    record_timing("train", 10.0 + idx, run_idx=idx, recorder=rec)
print("pending", rec.pending)
"""


@pytest.fixture
def users() -> Iterator[None]:
    if os.geteuid() != 0:
        pytest.skip("needs root to create users and a group")
    subprocess.run(["groupadd", "-f", GROUP], check=True)
    for user in (ALICE, BOB):
        if subprocess.run(["id", user], capture_output=True).returncode != 0:
            subprocess.run(["useradd", "-M", "-N", "-g", GROUP, user], check=True)
    try:
        yield
    finally:
        for user in (ALICE, BOB):
            subprocess.run(["userdel", user], capture_output=True)
        subprocess.run(["groupdel", GROUP], capture_output=True)


def _python() -> str:
    for candidate in (sys.executable, "/usr/bin/python3"):
        if not os.path.realpath(candidate).startswith("/root/"):
            return candidate
    pytest.skip("no interpreter outside /root for another user to run")


def _as(user: str, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": "/usr/bin:/bin", "HOME": "/tmp",
        "PYTHONPATH": os.pathsep.join([str(REPO), *site.getsitepackages()]),
    }
    cmd = ["setpriv", f"--reuid={user}", f"--regid={GROUP}", "--init-groups",
           "sh", "-c", 'umask 022; exec "$@"', "sh", *argv]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60, cwd="/tmp")


def _save_as(user: str, directory: Path, *runs: int) -> subprocess.CompletedProcess[str]:
    done = _as(user, _python(), "-c", SAVE, str(directory), *map(str, runs))
    if "ModuleNotFoundError" in done.stderr:
        pytest.skip(f"the other user cannot import stagetimer here: {done.stderr[-200:]}")
    return done


@pytest.fixture
def base(request: pytest.FixtureRequest) -> Path:
    # Outside pytest's base directory, which only root may enter.
    path = Path(tempfile.mkdtemp(prefix="stagetimer-users-"))
    path.chmod(0o755)
    request.addfinalizer(lambda: shutil.rmtree(path, ignore_errors=True))
    return path


FORGED = [
    {"stage": "train", "run": {"seconds": 999.0, "run_idx": 0}},  # would reset the stage
    {"stage": "train", "run": {"seconds": "soon", "run_idx": 7}},  # would corrupt the file
    {"stage": "planted", "run": {"seconds": 1.0}},
]


@pytest.mark.root
def test_rescue_files_another_user_planted_are_named_and_not_folded_unless_asked(
    users: None, base: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shared = base / "exports"
    shared.mkdir()
    shared.chmod(0o1777)  # sticky and world-writable, like /tmp
    assert 0 == _save_as(ALICE, shared, 0, 1, 2).returncode
    before = (shared / "timings.json").read_bytes()
    payload = {"format": RESCUE_FORMAT, "owner": dead_owner(), "policy": "sequential",
               "hardware": {},
               "records": FORGED}
    planted = shared / "timings.rescue-20000101T000000000000Z-1-00000000.json"
    text = json.dumps(payload)
    assert 0 == _as(BOB, "sh", "-c", 'printf %s "$1" > "$2"', "sh", text, str(planted)).returncode
    assert BOB == pwd.getpwuid(planted.stat().st_uid).pw_name

    (done,) = recover(shared)
    status = main(["recover", str(shared)])

    assert done.skipped is not None and BOB in done.skipped and "--trust-owner" in done.skipped
    assert before == (shared / "timings.json").read_bytes()
    assert 0 == status and BOB in capsys.readouterr().err
    assert planted.exists()

    (trusted,) = recover(shared, owners=[BOB])

    # The forged reset (no started_at) cannot be ordered against the stored run 0: kept
    # in the file and named, never stored.
    assert (1, 0, 1, 1) == (
        trusted.stored, trusted.already, len(trusted.refused), len(trusted.unordered)
    )
    assert [10.0, 11.0, 12.0] == [r["seconds"] for r in stage_runs(shared, "train")]
    assert [1.0] == [r["seconds"] for r in stage_runs(shared, "planted")]


@pytest.mark.root
def test_the_recover_command_folds_another_users_files_when_told_to_trust_them(
    users: None, base: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shared = base / "exports"
    shared.mkdir()
    shared.chmod(0o1777)
    assert 0 == _save_as(ALICE, shared, 0).returncode
    payload = {"format": RESCUE_FORMAT, "owner": dead_owner(), "policy": "sequential",
               "hardware": {},
               "records": [{"stage": "by_bob", "run": {"seconds": 3.0}}]}
    planted = shared / "timings.rescue-20000101T000000000000Z-1-00000000.json"
    assert 0 == _as(BOB, "sh", "-c", 'printf %s "$1" > "$2"', "sh", json.dumps(payload),
                    str(planted)).returncode

    status = main(["recover", "--trust-owner", BOB, str(shared)])

    assert (0, "1 record(s) stored") == (status, capsys.readouterr().out.split(" into")[0][-18:])
    assert [3.0] == [r["seconds"] for r in stage_runs(shared, "by_bob")]
    assert not planted.exists()


@pytest.mark.root
def test_a_planted_sidecar_symlink_to_a_private_file_is_never_read_nor_published(
    users: None, base: Path
) -> None:
    home = base / "alice-home"
    home.mkdir()
    os.chown(home, pwd.getpwnam(ALICE).pw_uid, pwd.getpwnam(ALICE).pw_gid)
    home.chmod(0o700)  # the group cannot enter
    secret = home / "secret.json"
    secret.write_text(json.dumps({"private": {"runs": [{"seconds": 4.2, "token": "SECRET"}]}}))
    os.chown(secret, pwd.getpwnam(ALICE).pw_uid, pwd.getpwnam(ALICE).pw_gid)
    secret.chmod(0o644)
    shared = base / "group"
    shared.mkdir()
    os.chown(shared, 0, pwd.getpwnam(ALICE).pw_gid)
    shared.chmod(0o2775)  # the group may replace files here
    assert 0 == _save_as(ALICE, shared, 0).returncode
    # Bob replaces alice's timings.json by a link to her private file.
    assert 0 == _as(BOB, "ln", "-sfn", str(secret), str(shared / "timings.json")).returncode

    done = _save_as(ALICE, shared, 1)

    assert "pending 1" in done.stdout, done.stderr
    assert (shared / "timings.json").is_symlink()  # not replaced by what it points to
    published = [p.name for p in shared.iterdir()
                 if p.is_file() and not p.is_symlink() and "SECRET" in p.read_text()]
    assert [] == published
    rescued = [r for p in shared.glob("timings.rescue-*.json")
               for r in json.loads(p.read_text())["records"]]
    assert [("train", 1)] == [(r["stage"], r["run"]["run_idx"]) for r in rescued]
