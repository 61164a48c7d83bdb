"""Cross-client exclusion: a claim file created with ``O_EXCL``, fenced before each publish.

``flock`` excludes the writers of one client only on some shared file systems (NFS
mounted ``nolock`` or ``local_lock=flock|all``, Lustre ``localflock``, FUSE file systems
that keep locks in the client's kernel, CIFS ``nobrl``): a second client's save then
reads the old file and replaces the first one's change. A save that another client's
writer may meet (``stagetimer._store.locking.policy`` decides which) therefore also holds
a *claim*, ``<sidecar>.claim``, which rests only on what such file systems make atomic
across clients:

- **Take**: create the claim's name with ``O_CREAT | O_EXCL`` and write who we are into
  it. The creation fails with ``EEXIST`` on every client when the name exists (atomic on
  NFSv3 and later, open(2) "O_EXCL"; NFSv2 is not supported). Writing a file of our own
  first and ``link``-ing it costs two more metadata operations per save, which a local
  disk's save budget does not have room for.
- **Fence**: right before the ``rename`` that publishes, the holder touches the claim (a
  sign of life; a claim younger than a second needs none) and checks that its name still
  holds the holder's token; a holder whose claim was broken publishes nothing (its save
  fails and its record stays pending). The claim is released right after the
  ``rename``.
- **Break**: a stale claim is renamed away to a name of the breaker's own; only one
  ``rename`` of one name succeeds, and the breaker checks that what it moved is the
  claim it judged stale (a fresh claim taken in between is put back with ``link``).

Stale: on the same machine (same ``/proc/sys/kernel/random/boot_id`` and the same pid
namespace) at once, when the holder's pid is gone or now belongs to a process with
another start time (``/proc/<pid>/stat`` field 22, see proc(5)); a claim of another
machine, or one whose content cannot be read, once this process has seen it unchanged
(same token, inode, size and mtime) for ``STAGETIMER_CLAIM_STALE_SECONDS`` (default 30)
seconds of its own monotonic clock, so clocks of different hosts never need to agree.

A claim found at a name is read without trusting it (:class:`ClaimInfo`): it is opened
without following a link and without blocking (a FIFO), and a claim this user may not
open is still a claim: its existence alone says it is held. A directory, a FIFO, a
device or a link at the name is something no writer makes (:func:`blocked`).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import time
from collections.abc import Callable
from typing import Any

from stagetimer._errors import LockTimeoutError
from stagetimer._settings import claim_stale_seconds
from stagetimer._store.parse import file_kind
from stagetimer._store.processes import (
    Identity,
    Liveness,
    is_pid,
    liveness,
    record,
    user_name,
    where,
)
from stagetimer._system import process_state
from stagetimer._system.openflags import CREATE_NEW, READ

__all__ = [
    "CLAIM_SUFFIX",
    "NO_CLAIM",
    "POLL_FIRST",
    "Claim",
    "ClaimInfo",
    "NoClaim",
    "blocked",
    "breakable",
    "claim_path",
    "forget",
    "pause",
    "read_claim",
    "take",
    "this_machine",
]

#: ``<sidecar>.claim``: held by the writer of any client whose save is under way.
CLAIM_SUFFIX = ".claim"

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
    holder = _holder_record(raw)
    key = (holder.get("token") if holder else raw, st.st_ino, st.st_size, st.st_mtime_ns)
    return ClaimInfo(path, holder, key, uid=st.st_uid)


def _holder_record(raw: bytes) -> dict[str, Any] | None:
    """A claim's content as its holder's record; None when it is not a JSON object."""
    try:
        holder = json.loads(raw)
    except ValueError:
        return None
    return holder if isinstance(holder, dict) else None


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


#: The first wait between tries of a held lock or claim, doubled up to a most: a save
#: takes about a millisecond, a hung writer holds the lock for minutes.
POLL_FIRST = 0.0005
_POLL_MAX = 0.05
#: Seconds after which a claim seen empty (or unparsable) all along is stale.
_UNREADABLE_STALE = 1.0
#: Seconds after its creation during which a claim needs no other sign of life (at most
#: a quarter of the stale time: breakers wait at least that long).
_QUIET = 1.0

#: claim path -> (what we saw: token, inode, size, mtime_ns; monotonic time first seen)
# No thread lock guards it (an interrupt between a ``with lock:`` body and its exit
# leaves the lock held): each step is one atomic dict operation, and a first sighting
# two threads race to record only moves the time a claim counts as stale from later.
_seen: dict[str, tuple[tuple[Any, ...], float]] = {}


def claim_path(sidecar: str) -> str:
    """The claim file of ``sidecar``."""
    return sidecar + CLAIM_SUFFIX


def this_machine() -> dict[str, Any]:
    """Who this process is, as a claim records it (host, boot id, pid namespace, pid, start).

    Read once per process (a forked child reads its own, see ``processes.identity``).
    """
    return record(_claim_record)


def _claim_record(me: Identity) -> dict[str, Any]:
    return {
        "host": me.host,
        "boot_id": me.boot_id,
        "pidns": me.pidns,
        "pid": me.pid,
        "start": me.start_time,
    }


def forget() -> None:
    """In a forked child: the parent's claims and observations are not the child's."""
    held.clear()
    _seen.clear()


def breakable(info: ClaimInfo, me: dict[str, Any], stale: float, now: float) -> bool:
    """Whether the claim ``info`` may be broken now (see the module docstring)."""
    if info.kind not in ("file", "unreadable"):
        return False  # no writer makes it: see ``blocked``
    if info.same_machine():
        state = info.holder_liveness(me)
        if state != "hidden":
            return state == "dead"
        # Another user's process hidden by hidepid holds that pid: whether it is the
        # holder is unknown, so the stale rule decides, as for another machine's.
    return _stale(info, stale, now)


def _stale(info: ClaimInfo, stale: float, now: float) -> bool:
    """The stale rule: whether ``info`` has been seen unchanged for ``stale`` seconds (a
    first sighting, or a change, starts the count at ``now``)."""
    if info.kind == "file" and info.holder is None:
        # Empty or not ours to parse: a live writer fills its claim right after creating
        # it, so one that stays so died in between (a wrong guess costs that writer only
        # a retry: its fence refuses to publish). A claim we may not read at all may be a
        # live writer's (one with another umask): it gets the whole stale time.
        stale = min(stale, _UNREADABLE_STALE)
    seen = _seen.get(info.path)
    if seen is None or seen[0] != info.key:
        _seen[info.path] = (info.key, now)
        return False
    return now - seen[1] >= stale


def _unlink(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def _break(info: ClaimInfo, token: str) -> str | None:
    """Move the stale claim ``info`` away; put back a fresh one moved by mistake.

    None when it is gone (moved by us or by another breaker, or released); ``""`` when
    it was not moved for a reason that may pass (wait before looking again); else why
    it cannot be moved (``EPERM``/``EACCES``: another user's claim in a sticky
    directory, or a directory this user may not write), with what to do.
    """
    directory, base = os.path.split(info.path)
    aside = os.path.join(directory, f".{base}-broken-{token}")
    try:
        os.rename(info.path, aside)
    except OSError as exc:
        if exc.errno in (errno.EPERM, errno.EACCES, errno.EROFS):
            return (
                f"{info.path}: a stale claim held by {info.whose()}, which this user may "
                f"not remove ({exc.strerror}): saves here cannot proceed until it is "
                f"removed (rm '{info.path}', by its owner or root)"
            )
        if exc.errno in (errno.ENOENT, errno.ESTALE):
            return None  # another breaker was first, or its holder released it
        return ""  # not moved, for a reason that may pass: wait, then look again
    moved = read_claim(aside)
    if moved is not None and moved.key != info.key:
        # A claim taken (or touched) after we judged: give it back (EEXIST when a third
        # writer took the name meanwhile; its holder's fence then refuses to publish).
        with contextlib.suppress(OSError):
            os.link(aside, info.path)
    _unlink(aside)
    _seen.pop(info.path, None)
    return None


def _holds(path: str, token: str) -> bool:
    """Whether the claim file ``path`` holds ``token`` (raw bytes: a save's hot path)."""
    try:
        fd = os.open(path, READ)
    except OSError:
        return False
    try:
        raw = os.read(fd, MAX_CLAIM_BYTES)
    except OSError:
        return False
    finally:
        os.close(fd)
    return f'"token": "{token}"'.encode("ascii") in raw


class Claim:
    """A claim this thread holds on one sidecar: :meth:`fence` before publishing, then release."""

    __slots__ = ("fenced", "path", "quiet", "released", "taken", "token")

    def __init__(self, path: str, token: str, quiet: float = _QUIET) -> None:
        self.path = path
        self.token = token
        self.taken = time.monotonic()  # reset when the claim exists
        self.quiet = quiet  # seconds after ``taken`` before the fence touches the claim
        self.fenced = False  # the fence found the claim ours a moment ago
        self.released = False

    def fence(self) -> None:
        """Show a sign of life, and raise unless the claim is still ours (before ``rename``).

        A claim made less than a second ago is its own sign of life (its creation): it is
        touched only when the save has taken longer, which saves a metadata write per save.
        """
        if time.monotonic() - self.taken > self.quiet:
            with contextlib.suppress(OSError):
                os.utime(self.path, follow_symlinks=False)
        self.fenced = _holds(self.path, self.token)
        if not self.fenced:
            raise OSError(
                errno.ENOLCK,
                "the claim of this save was broken as stale by another writer; "
                "nothing was written (the record stays pending)",
                self.path,
            )

    def release(self) -> None:
        """Remove the claim when it is still ours. May be interrupted and done again.

        Right after a fence that found it ours (and touched it), it is still ours: nobody
        breaks a claim that showed a sign of life within the stale time, so the check is
        not read again.
        """
        if self.released:
            return
        if self.fenced or _holds(self.path, self.token):
            self.fenced = False
            _unlink(self.path)
        self.released = True
        held.discard(self.token)


class NoClaim:
    """What a save holds where it takes no claim (``policy.needed``): the same
    ``fence`` and ``release`` as a :class:`Claim`, which have nothing to do, so that
    writers call them alike either way."""

    __slots__ = ()

    def fence(self) -> None:
        """Nothing to check: the flock alone excludes every writer here."""

    def release(self) -> None:
        """Nothing to remove."""


#: The one ``NoClaim`` (it holds nothing).
NO_CLAIM = NoClaim()


def _create(path: str, token: str, me: dict[str, Any]) -> bool:
    """Create the claim ``path`` holding who we are; False when it exists already.

    One ``open(O_CREAT | O_EXCL)`` and one ``write``: between the two the claim is empty,
    which a breaker treats as a holder that died there (see ``breakable``).
    """
    body = json.dumps({**me, "token": token, "at": time.time()}).encode("ascii")
    try:
        fd = os.open(path, CREATE_NEW, 0o644)
    except FileExistsError:
        return False
    try:
        try:
            # Readable by every writer of the directory whatever our umask: a claim its
            # breaker cannot read waits out the whole stale time.
            os.fchmod(fd, 0o644)
            if os.write(fd, body) != len(body):
                raise OSError(errno.ENOSPC, "short write of a claim", path)
        finally:
            os.close(fd)
    except BaseException:
        _unlink(path)  # a full disk: leave no empty claim behind
        raise
    return True


def pause(
    delay: float,
    deadline: float,
    path: str,
    timeout: float,
    most: float = _POLL_MAX,
    reason: Callable[[], str | None] | None = None,
) -> float:
    """Wait ``delay`` seconds (never past the monotonic ``deadline``) before the next
    try of the held lock or claim ``path``; the next delay, doubled up to ``most``.
    Raises ``LockTimeoutError`` naming ``path`` (and who holds it, from ``reason``) once
    the deadline has passed."""
    now = time.monotonic()
    if now >= deadline:
        raise LockTimeoutError(path, timeout, reason() if reason is not None else None)
    time.sleep(min(delay, deadline - now))
    return min(delay * 2, most)


def take(sidecar: str, deadline: float, timeout: float, *, on_token: Any = None) -> Claim:
    """Hold the claim of ``sidecar`` before the monotonic ``deadline``.

    Raises ``LockTimeoutError`` naming the claim file when another writer holds it past
    the deadline. ``on_token`` (a callable) learns the claim before it can exist, so that
    an interrupt anywhere leaves something its caller can release.
    """
    path = claim_path(sidecar)
    token = f"{os.getpid()}-{os.urandom(8).hex()}"
    me = this_machine()
    stale = claim_stale_seconds()
    held.add(token)
    claim = Claim(path, token, min(_QUIET, stale / 4))
    if on_token is not None:
        on_token(claim)
    delay = POLL_FIRST
    try:
        while not _create(path, token, me):
            info = read_claim(path)
            if info is not None:
                why = blocked(info)
                if why is None and breakable(info, me, stale, time.monotonic()):
                    why = _break(info, token)
                    if why is None:
                        continue  # gone: take it now
                if why:
                    # Nothing waiting can change: said once, at once (the save's record
                    # stays pending and is rescued).
                    raise LockTimeoutError(path, timeout, why, blocked=True)
            delay = pause(delay, deadline, path, timeout, reason=_holder_of(info))
    except BaseException:
        held.discard(token)
        raise
    claim.taken = time.monotonic()
    return claim


def _holder_of(info: ClaimInfo | None) -> Callable[[], str | None]:
    return lambda: None if info is None else f"the claim is held by {info.whose()}"


process_state.register_at_fork("store.claims", after_in_child=forget)
