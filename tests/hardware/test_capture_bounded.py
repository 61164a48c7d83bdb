"""The software capture ends within its bound whatever the system holds: a git helper
that leaves git's process group holding its output, FIFOs and devices where the package
scan reads files, a hardware file that never ends. Each subject runs in its own process
with a timeout: the unbounded code waits for good."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers.git_repo import git, make_repo

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

CAPTURE = textwrap.dedent("""
    import json, sys, time
    from stagetimer.software import capture_software
    started = time.monotonic()
    software = capture_software(entry=sys.argv[1], timeout=float(sys.argv[2]))
    print(json.dumps({
        "took": time.monotonic() - started, "code": software.code is not None,
        "where": software.sources["code"], "packages": software.packages,
    }))
""")


def run_capture(entry: Path, timeout: float, **kwargs: object) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", CAPTURE, str(entry), str(timeout)], capture_output=True,
        text=True, timeout=30, check=False, **kwargs,  # type: ignore[call-overload]
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def _end(pid_file: Path) -> None:
    """End the helper that escaped the group (we started it)."""
    deadline = time.monotonic() + 5
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    if pid_file.exists() and pid_file.read_text().strip():
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)


def _executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@needs_git
def test_an_fsmonitor_daemon_holding_git_s_output_does_not_hold_the_capture(
    tmp_path: Path,
) -> None:
    # A real fsmonitor hook, run by the real git diff-index, starts a daemon in a session
    # of its own (out of git's process group, as watchman and git's own daemon do) that
    # keeps git's standard error, the capture's pipe, open for a minute.
    repo = make_repo(tmp_path / "repo")
    armed, pid_file = tmp_path / "armed", tmp_path / "daemon.pid"
    hook = tmp_path / "fsmonitor-hook"
    _executable(hook, textwrap.dedent(f"""\
        #!/bin/sh
        if [ -e {armed} ]; then
            setsid sh -c 'echo $$ > {pid_file}; exec sleep 60' >/dev/null &
        fi
        printf '\\0'
    """))
    git(repo, "config", "core.fsmonitor", str(hook))
    git(repo, "update-index", "--fsmonitor")
    armed.touch()
    try:
        started = time.monotonic()
        result = run_capture(repo, 1.0)
        took = time.monotonic() - started
    finally:
        _end(pid_file)

    assert pid_file.exists()  # the daemon was started by git
    assert (False, True) == (result["code"], "kept its output open past 1 s" in str(
        result["where"]))
    assert float(result["took"]) < 2.0, result  # type: ignore[arg-type]
    assert took < 10, took


@needs_git
def test_a_git_wrapper_whose_child_escapes_the_group_with_stdout_is_bounded(
    tmp_path: Path,
) -> None:
    # A git on PATH (a site wrapper) that starts a child in its own session holding
    # git's standard output, then runs the real git.
    repo = make_repo(tmp_path / "repo")
    pid_file = tmp_path / "child.pid"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    real = shutil.which("git")
    _executable(bin_dir / "git", textwrap.dedent(f"""\
        #!/bin/sh
        setsid sh -c 'echo $$ >> {pid_file}; exec sleep 60' &
        exec {real} "$@"
    """))
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    try:
        result = run_capture(repo, 1.0, env=env)
    finally:
        deadline = time.monotonic() + 5
        while (not pid_file.exists() or len(pid_file.read_text().split()) < 2) and (
            time.monotonic() < deadline
        ):
            time.sleep(0.01)
        for pid in pid_file.read_text().split() if pid_file.exists() else ():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)

    assert (False, True) == (result["code"], "kept its output open" in str(result["where"]))
    assert float(result["took"]) < 2.0, result  # type: ignore[arg-type]
