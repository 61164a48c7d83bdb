"""What a claim file at a name is, read without trusting it: its holder, its owner,
or something else that no writer makes (see ``stagetimer._store.locking.claims``).

A claim is opened without following a link and without blocking (a FIFO), and a claim
this user may not open is still a claim: its existence alone says it is held.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from typing import Any

from stagetimer._store.parse import file_kind
from stagetimer._store.processes import Liveness, is_pid, liveness, user_name, where
from stagetimer._system.openflags import READ

__all__ = ["MAX_CLAIM_BYTES", "ClaimInfo", "blocked", "held", "read_claim"]

MAX_CLAIM_BYTES = 4096
#: Tokens of claims this process holds now (a claim of our own pid not listed here was
#: left by an interrupted save of ours and is stale).
held: set[str] = set()


class ClaimInfo:
    """What a claim file says about its holder, and what is known of its liveness.

    ``kind``: ``"file"`` (a claim whose content was read, or a planted symbolic link),
    ``"unreadable"`` (a file this user may not open: its existence alone says it is
    held) or what else the name is (``"a directory"``, ``"a FIFO (named pipe)"``... as
    ``parse.file_kind`` says), which no writer makes and no save may break.
    """

    __slots__ = ("holder", "key", "kind", "path", "uid")

    def __init__(
        self,
        path: str,
        holder: dict[str, Any] | None,
        key: tuple[Any, ...],
        kind: str = "file",
        uid: int | None = None,
    ) -> None:
        self.path = path
        self.holder = holder  # None: unreadable (being written, or not ours to parse)
        self.key = key  # what changes when its holder shows a sign of life
        self.kind = kind
        self.uid = uid  # the file's owner, when known

    @property
    def token(self) -> str | None:
        token = self.holder.get("token") if self.holder else None
        return token if isinstance(token, str) else None

    def same_machine(self) -> bool:
        """Whether the holder is a process of this machine (same boot and pid namespace,
        as ``processes.where`` decides)."""
        h = self.holder
        return h is not None and where(boot=h.get("boot_id"), pidns=h.get("pidns")) is None

    def holder_dead(self, me: dict[str, Any]) -> bool:
        """On this machine: whether the holder is gone (or is an interrupted save of ours)."""
        return self.holder_liveness(me) == "dead"

    def holder_liveness(self, me: dict[str, Any]) -> Liveness:
        """On this machine: whether the holder runs (``processes.liveness``; an
        interrupted save of ours is ``"dead"``). ``"hidden"``: its pid runs as another
        user whose ``/proc`` entry ``hidepid`` hides, so the stale rule decides."""
        assert self.holder is not None
        pid, recorded = self.holder.get("pid"), self.holder.get("start")
        if is_pid(pid) and pid == me["pid"] and recorded == me["start"]:
            return "live" if self.token in held else "dead"
        return liveness(pid, recorded)

    def whose(self) -> str:
        """Who holds it, in words: the holder it names, and the file's owner."""
        h = self.holder or {}
        user = "an unknown user" if self.uid is None else user_name(self.uid)
        if self.holder is None:
            return f"{user} (its content names no process)"
        return f"pid {h.get('pid')} on {h.get('host')!s} (a file of {user})"


def _unopened(path: str) -> ClaimInfo | None:
    """A claim that cannot be opened: what ``lstat`` tells of it (None when gone)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISLNK(st.st_mode):
        # A planted symbolic link: nobody's claim, cleared as one left empty.
        return ClaimInfo(path, None, ("link", st.st_ino, st.st_mtime_ns), uid=st.st_uid)
    kind = "unreadable" if stat.S_ISREG(st.st_mode) else file_kind(st.st_mode)
    return ClaimInfo(path, None, (kind, st.st_ino, st.st_size, st.st_mtime_ns), kind,
                     st.st_uid)


def read_claim(path: str) -> ClaimInfo | None:
    """The claim at ``path``, or None when there is none. Never follows a link, never
    blocks (a FIFO), never raises for a claim this user may not read."""
    try:
        fd = os.open(path, READ)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ESTALE:
            return None  # replaced under us: look again
        return _unopened(path)  # a link (ELOOP), another user's 0600 file or 0700 directory
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = file_kind(st.st_mode)
            return ClaimInfo(path, None, (kind, st.st_ino), kind, st.st_uid)
        raw = os.read(fd, MAX_CLAIM_BYTES)
    except OSError:
        return _unopened(path)
    finally:
        os.close(fd)
    try:
        holder = json.loads(raw)
    except ValueError:
        holder = None
    if not isinstance(holder, dict):
        holder = None
    key = (holder.get("token") if holder else raw, st.st_ino, st.st_size, st.st_mtime_ns)
    return ClaimInfo(path, holder, key, uid=st.st_uid)


def blocked(info: ClaimInfo) -> str | None:
    """Why the name of a claim holds something no save may clear, with what to do, or None.

    No writer makes a directory, a FIFO, a device or a symbolic link at a claim's name:
    waiting for it to go away is waiting for good.
    """
    if info.kind in ("file", "unreadable"):
        return None
    owner = "an unknown user" if info.uid is None else user_name(info.uid)
    remove = "rm -r" if info.kind == "a directory" else "rm"
    return (
        f"{info.path} is {info.kind} of {owner}, not a claim any writer makes: every "
        f"save into this directory stops here until it is removed ({remove} "
        f"'{info.path}', by that user or root)"
    )
