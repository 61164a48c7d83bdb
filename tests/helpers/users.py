"""Real users of one group sharing a directory (``useradd``; root only), each process
run as its user with ``setpriv`` and a timeout."""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from helpers.process_life import REPO

__all__ = ["Users", "as_user", "python", "shared_users", "start_as_user"]


class Users:
    """A group and two of its members, and a base directory every one may enter."""

    def __init__(self, group: str, alice: str, bob: str, base: Path) -> None:
        self.group, self.alice, self.bob, self.base = group, alice, bob, base

    def shared(self, name: str, mode: int) -> Path:
        """A directory of root and the group with ``mode`` (``0o3770``: sticky group)."""
        path = self.base / name
        path.mkdir()
        shutil.chown(path, "root", self.group)
        path.chmod(mode)
        return path


@contextmanager
def shared_users(tag: str) -> Iterator[Users]:
    """Create the group and users (names unique to this run), remove them after."""
    if os.geteuid() != 0:
        pytest.skip("needs root to create users and a group")
    group, alice, bob = (f"{name}{os.getpid()}" for name in (f"{tag}g", f"{tag}a", f"{tag}b"))
    subprocess.run(["groupadd", "-f", group], check=True)
    for user in (alice, bob):
        if subprocess.run(["id", user], capture_output=True).returncode != 0:
            subprocess.run(["useradd", "-M", "-N", "-g", group, user], check=True)
    base = Path(tempfile.mkdtemp(prefix="stagetimer-users-"))
    base.chmod(0o755)
    try:
        yield Users(group, alice, bob, base)
    finally:
        shutil.rmtree(base, ignore_errors=True)
        for user in (alice, bob):
            subprocess.run(["userdel", user], capture_output=True)
        subprocess.run(["groupdel", group], capture_output=True)


def python() -> str:
    """An interpreter another user may run (not one under /root)."""
    for candidate in (sys.executable, "/usr/bin/python3"):
        if not os.path.realpath(candidate).startswith("/root/"):
            return candidate
    pytest.skip("no interpreter outside /root for another user to run")


def _command(user: str, group: str, umask: str, argv: tuple[str, ...]) -> list[str]:
    return ["setpriv", f"--reuid={user}", f"--regid={group}", "--init-groups",
            "sh", "-c", f'umask {umask}; exec "$@"', "sh", *argv]


def _env(extra: dict[str, str] | None) -> dict[str, str]:
    return {
        "PATH": "/usr/bin:/bin", "HOME": "/tmp", "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": os.pathsep.join([str(REPO), *site.getsitepackages()]),
        **(extra or {}),
    }


def as_user(
    users: Users,
    user: str,
    *argv: str,
    umask: str = "022",
    env: dict[str, str] | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` as ``user`` (of the group) with ``umask``; fail the test on a hang."""
    cmd = _command(user, users.group, umask, argv)
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, env=_env(env),
                              timeout=timeout, cwd="/tmp")
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{argv[:3]} as {user} did not end within {timeout} s: {exc.stderr!r}")
    if "ModuleNotFoundError" in done.stderr:
        pytest.skip(f"the other user cannot import stagetimer here: {done.stderr[-200:]}")
    return done


def start_as_user(
    users: Users, user: str, *argv: str, umask: str = "022", env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """Start ``argv`` as ``user`` with pipes on stdin and stdout (the caller ends it)."""
    return subprocess.Popen(_command(user, users.group, umask, argv), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env(env), cwd="/tmp")
