"""What killed or interrupted writers leave beside a sidecar, and clearing it.

Each save's temporary file is named ``.<sidecar>.tmp-<host>-<pid>-<random>-<n>``, so the
next save (under the lock and the claim) can tell a dead writer's file from a live one's;
a claim moved aside by a breaker that was killed is judged like the claim it was. The
host part names the pid namespace too (``<host>.ns<inode>``): a container's pid 9 is not
ours, so its file is judged as another host's (kept for ``FOREIGN_AGE``).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import time
from typing import Any

from stagetimer._format import RESCUE_PREFIX, TIMINGS_FILE
from stagetimer._settings import claim_stale_seconds
from stagetimer._store.locking.claims import (
    CLAIM_SUFFIX,
    breakable,
    read_claim,
    this_machine,
)
from stagetimer._store.processes import Identity, identity, liveness
from stagetimer._system import process_state

__all__ = [
    "FOREIGN_AGE",
    "clear_leftovers",
    "reset_after_fork",
    "temp_path",
    "token",
    "unclean",
    "written_ago",
]


_token_cache: tuple[Identity, str] | None = None
_counter = itertools.count()
_TMP_MARK = ".tmp"
_RESCUE_TMP = "." + RESCUE_PREFIX  # a rescue file's temporary file (``.<its name>.tmp-…``)
#: Seconds after its last write past which another host's file (a temporary file, a
#: rescue file) is taken as its writer's leftover: this host cannot see that host's
#: processes, and only on file systems whose locks are per client could a live writer
#: still be using it.
FOREIGN_AGE = 3600.0
#: sidecars whose last save by this process did not finish (``write_atomic`` adds them)
unclean: set[str] = set()


def token() -> str:
    """``host.ns<pidns>-pid-random`` of this process (a fork gets its own)."""
    global _token_cache
    me = identity()
    if _token_cache is None or _token_cache[0] is not me:
        host = re.sub(r"[^A-Za-z0-9_.]", "_", me.host)[:64] or "host"
        if me.pidns is not None:
            host = f"{host}.ns{me.pidns}"
        _token_cache = (me, f"{host}-{me.pid}-{os.urandom(4).hex()}")
    return _token_cache[1]


def temp_path(path: str) -> str:
    """A name of its own beside ``path``: ``.<name>.tmp-<host>-<pid>-<random>-<n>``."""
    directory, base = os.path.split(path)
    return os.path.join(directory, f".{base}{_TMP_MARK}-{token()}-{next(_counter)}")


def _is_leftover(directory: str, name: str, prefix: str, locked: bool = True) -> bool:
    """Whether the temporary file ``name`` is what a writer left.

    ``locked``: it is written under the lock we hold (a sidecar's), so this process's own
    are leftovers too; a rescue file's is written without a lock, by its recorder alone.
    """
    rest = name[len(prefix) :]
    if rest == "":
        return True  # the fixed name older versions used
    if not rest.startswith("-"):
        return False
    pid = _pid_of_this_host(rest[1:])
    if pid is not None:
        return _writer_gone(pid, locked)
    return _foreign_and_old(os.path.join(directory, name))


def _pid_of_this_host(tail: str) -> int | None:
    """The writer's pid a temporary name's ``<host>-<pid>-<random>-<n>`` gives where its
    host is this one; None for another host's (or a name of another form)."""
    parts = tail.rsplit("-", 3)
    mine = token().rsplit("-", 2)
    if len(parts) == 4 and parts[0] == mine[0] and parts[1].isdigit():
        return int(parts[1])
    return None


def _writer_gone(pid: int, locked: bool) -> bool:
    """Whether the writer ``pid`` of this host is gone (``locked``: see ``_is_leftover``).

    The name records no start time: a live process that reused the pid keeps the file
    (a leftover kept a while is harmless, a live writer's file removed is not).
    """
    if pid == identity().pid:
        return locked  # ours, from an interrupted save (we hold the lock now)
    return liveness(pid, None) == "dead"


def written_ago(mtime: float) -> float:
    """Seconds since a file of modification time ``mtime`` was written, by this host's
    clock (compare with ``FOREIGN_AGE``)."""
    return time.time() - mtime


def _foreign_and_old(path: str) -> bool:
    """Whether another host's temporary file is a leftover (older than ``FOREIGN_AGE``)."""
    try:
        return written_ago(os.lstat(path).st_mtime) > FOREIGN_AGE
    except OSError:
        return False


def _claim_leftover(directory: str, name: str, me: dict[str, Any]) -> bool:
    """Whether ``name``, a claim's own file or one moved aside, belongs to no live writer."""
    info = read_claim(os.path.join(directory, name))
    return info is not None and breakable(info, me, claim_stale_seconds(), time.monotonic())


def _left_by_dead_writer(directory: str, base: str, name: str) -> bool:
    """Whether ``name``, beside the sidecar ``base``, is a file a gone writer left there:
    a claim (or one moved aside), a temporary file of a save or of a rescue file."""
    if name.startswith(f".{base}{CLAIM_SUFFIX}-"):
        return _claim_leftover(directory, name, this_machine())
    prefix = f".{base}{_TMP_MARK}"
    if name.startswith(prefix):
        return _is_leftover(directory, name, prefix)
    if base == TIMINGS_FILE and name.startswith(_RESCUE_TMP) and _TMP_MARK + "-" in name:
        # A rescue file's temporary file, left by a writer that was killed.
        head = name[: name.index(_TMP_MARK + "-") + len(_TMP_MARK)]
        return _is_leftover(directory, name, head, locked=False)
    return False


def clear_leftovers(path: str) -> None:
    """Remove the temporary files killed or interrupted writers left beside ``path``.

    Called under ``path``'s lock: no live writer of this file system's locks is writing.
    """
    directory, base = os.path.split(path)
    directory = directory or "."
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        # Every name a writer leaves starts with a dot: the others are not looked at.
        if name.startswith(".") and _left_by_dead_writer(directory, base, name):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(directory, name))
    unclean.discard(path)


def reset_after_fork() -> None:
    """In a forked child: the parent's unfinished saves are not the child's to clear."""
    unclean.clear()


process_state.register_at_fork("store.leftovers", after_in_child=reset_after_fork)
