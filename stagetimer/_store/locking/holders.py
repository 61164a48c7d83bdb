"""Who holds the ``flock`` of a lock file now: read from ``/proc/locks``, without locking.

A lock file in a shared directory can be opened by anyone who may read it, and ``flock``
needs no write permission (flock(2)): another user's reader that holds ``LOCK_EX`` (or
``LOCK_SH``) on it makes every save wait out its ``lock_timeout``. Nothing a writer can
do stops that, and nothing in the file tells a writer's lock from a reader's, so the
lock trusts no one in particular: a save that times out names the holders, and
``doctor`` names them before any save waits.

``/proc/locks`` (proc(5)) lists each lock as ``<n>: FLOCK ADVISORY WRITE <pid>
<major>:<minor>:<inode> 0 EOF`` (device numbers in hex); waiters' lines carry ``->``.
Pids are those of the reader's pid namespace (0 when the holder is in another one).
"""

from __future__ import annotations

import os

import attrs

from stagetimer._store.processes import user_name
from stagetimer._system.files import read_text

__all__ = ["LockHolder", "describe", "holders"]


@attrs.frozen
class LockHolder:
    """One process holding a lock: its pid (0 when not visible here), user and command."""

    pid: int
    uid: int | None
    command: str | None

    def __str__(self) -> str:
        if self.pid <= 0:
            return "a process in another pid namespace"
        user = "an unknown user" if self.uid is None else f"user {user_name(self.uid)}"
        command = f" ({self.command})" if self.command else ""
        return f"process {self.pid}{command} of {user}"


def _device(st: os.stat_result) -> str:
    return f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"


def holders(path: str, locks_text: str | None = None) -> list[LockHolder]:
    """The processes that hold a lock on the file ``path`` now (none when it is free,
    missing, or ``/proc/locks`` cannot be read). Waiters are left out."""
    try:
        wanted = _device(os.lstat(path))
    except OSError:
        return []
    text = read_text("/", "/proc/locks") if locks_text is None else locks_text
    lines = (text or "").splitlines()
    return [_holder(pid) for line in lines if (pid := _holding_pid(line, wanted)) is not None]


def _holding_pid(line: str, device: str) -> int | None:
    """The pid of one ``/proc/locks`` line that holds a lock on ``device``, else None."""
    fields = line.split()
    if "->" in fields or len(fields) < 6 or fields[5] != device:
        return None  # a waiter, a short line or another file
    try:
        return int(fields[4])
    except ValueError:
        return None


def _holder(pid: int) -> LockHolder:
    if pid <= 0:
        return LockHolder(pid, None, None)
    try:
        uid: int | None = os.stat(f"/proc/{pid}").st_uid
    except OSError:
        uid = None
    command = read_text("/", f"/proc/{pid}/comm")
    return LockHolder(pid, uid, command.strip() if command else None)


def describe(path: str) -> str | None:
    """Who holds the lock ``path``, in words, or None when nobody visible does."""
    found = holders(path)
    if not found:
        return None
    return "held by " + ", ".join(dict.fromkeys(str(h) for h in found))
