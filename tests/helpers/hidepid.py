"""Running a process as a user of a group (``helpers.users``) under a ``/proc`` mounted
``hidepid=2``, as on shared login nodes: in a private mount namespace (``unshare
--mount --propagation private``) root mounts a new ``/proc`` with ``hidepid=2`` and then
drops to the user (``setpriv``), who sees no other user's ``/proc/<pid>``. Nothing
outside that namespace is changed. Root only; every run has a timeout."""

from __future__ import annotations

import subprocess

import pytest

from helpers.users import Users, _command, _env

__all__ = ["as_user_hidepid"]

_MOUNT = 'mount -t proc -o hidepid=2 proc /proc && exec "$@"'


def as_user_hidepid(
    users: Users, user: str, *argv: str, umask: str = "022",
    env: dict[str, str] | None = None, timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` as ``user`` where ``/proc`` hides other users' processes."""
    cmd = ["unshare", "--mount", "--propagation", "private", "sh", "-c", _MOUNT, "sh",
           *_command(user, users.group, umask, argv)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, env=_env(env),
                              timeout=timeout, cwd="/tmp")
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{argv[:3]} as {user} (hidepid) did not end in {timeout} s: {exc.stderr!r}")
    if "ModuleNotFoundError" in done.stderr:
        pytest.skip(f"the other user cannot import stagetimer here: {done.stderr[-200:]}")
    if "mount: " in done.stderr and done.returncode != 0:
        pytest.skip(f"cannot mount /proc with hidepid=2 here: {done.stderr[-200:]}")
    return done
