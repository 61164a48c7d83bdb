"""A path under a directory the user may not read is reported as such ("Permission
denied"), not as missing, by every reader command. Run as another user (root reads
everything), in a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _python() -> str:
    """An interpreter the other user may run (the venv's lives under root's home)."""
    for candidate in (sys.executable, "/usr/bin/python3"):
        if not os.path.realpath(candidate).startswith("/root/"):
            return candidate
    pytest.skip("no interpreter outside /root for another user to run")


@pytest.fixture
def locked() -> Iterator[Path]:
    """``<base>/secret/a/timings.json`` with ``secret`` readable by root alone."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run as another user")
    base = Path(tempfile.mkdtemp(prefix="stagetimer-unreadable-"))
    try:
        base.chmod(0o755)
        artifact = base / "secret" / "a"
        artifact.mkdir(parents=True)
        runs = [{"seconds": 1.0, "run_idx": 0}, {"seconds": 2.0, "run_idx": 1}]
        (artifact / "timings.json").write_text(json.dumps({"s": {"runs": runs}}))
        (base / "secret").chmod(0o700)
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _as_nobody(*args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8",
        "PYTHONPATH": os.pathsep.join([str(REPO), *site.getsitepackages()]),
    }
    command = [
        "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
        _python(), "-m", "stagetimer", *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=60,
                          cwd="/tmp", check=False)


@pytest.mark.parametrize("command", [["report"], ["table"], ["report", "--json"]])
@pytest.mark.parametrize("below", ["secret/a", "secret/a/timings.json", "secret"])
def test_a_path_under_an_unreadable_directory_is_permission_denied(
    locked: Path, command: list[str], below: str
) -> None:
    result = _as_nobody(*command, str(locked / below))
    if "ModuleNotFoundError" in result.stderr:
        pytest.skip(f"the other user cannot import stagetimer here: {result.stderr[-200:]}")

    assert (1, [f"stagetimer {command[0]}: {locked / below}: Permission denied"]) == (
        result.returncode, result.stderr.splitlines(),
    )


def test_compare_names_the_unreadable_side(locked: Path) -> None:
    result = _as_nobody("compare", str(locked / "secret" / "a"), str(locked / "secret" / "a"))
    if "ModuleNotFoundError" in result.stderr:
        pytest.skip(f"the other user cannot import stagetimer here: {result.stderr[-200:]}")

    assert (1, [f"stagetimer compare: {locked / 'secret' / 'a'}: Permission denied"]) == (
        result.returncode, result.stderr.splitlines(),
    )
