"""The advisory lock of one sidecar: an ``flock`` on a descriptor each save opens itself,
and, where another client may write (``stagetimer._store.locking.policy``), the
cross-client claim (``stagetimer._store.locking.claims``) taken under it.

The lock file ``<sidecar>.lock`` is opened without following symbolic links and with
``O_CLOEXEC``; when it may not be opened for writing (a lock file another member of a
group directory created with mode 0644, a read-only file), it is opened read-only:
``flock`` needs no write permission. The lock itself is filelock's public
``lock_descriptor``/``unlock_descriptor`` (the lock ``filelock.FileLock`` takes on the
same file), tried without blocking; the waiting, the deadline and the polling are ours.

Threads of one process take a per-file gate first (on file systems that emulate
``flock`` with POSIX record locks, such as NFS, two descriptors of one process do not
exclude each other). The gate is no thread lock: a thread owns it by one atomic
``dict.setdefault`` and gives it back by one ``dict.pop``. (A ``with lock:`` block is
not interrupt-safe: an interrupt at the bytecodes between its body and the call of the
lock's ``__exit__`` leaves the lock held, and the next save of the process waits on it
forever.) Whatever an interrupt (``KeyboardInterrupt`` or any exception raised
by a signal handler) leaves half done is recorded on the gate, owned by the thread it
interrupted, and undone by :func:`release_mine` or by that thread's next acquire. After
``fork()`` the child closes the descriptors it inherited (without unlocking them: the lock
belongs to the parent's open file description) and starts with no gate held.
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
import threading
import time
from typing import Any

from stagetimer._settings import claim_stale_seconds
from stagetimer._store.locking import claims, holders, policy
from stagetimer._system import process_state
from stagetimer._system.openflags import CLOEXEC, NOFOLLOW, NONBLOCK, READ

__all__ = ["acquire", "release", "release_mine", "reset_after_fork"]


# O_NONBLOCK: a FIFO planted as a lock file must not block the open.
_OPEN_RW = os.O_RDWR | os.O_CREAT | NOFOLLOW | CLOEXEC | NONBLOCK

#: The longest wait between tries of a held lock (see ``claims.pause``).
_POLL_MAX = 0.02


class _Gate:
    """This process's state for one lock file: which thread holds it, with which descriptor."""

    __slots__ = ("claim", "fd", "held")

    def __init__(self) -> None:
        self.claim: claims.Claim | None = None  # the cross-client claim, once it may exist
        # ``_OWNER`` -> the holder's thread ident: taken by one ``setdefault`` and given
        # back by one ``pop``, each a single step no interrupt can split.
        self.held: dict[str, int] = {}
        self.fd: int | None = None  # the holder's descriptor, locked or about to be

    @property
    def owner(self) -> int | None:
        """The thread ident of the holder, or None."""
        return self.held.get(_OWNER)


_OWNER = "owner"
_gates: dict[str, _Gate] = {}
# The gates that may have an owner: a gate joins before its owner is set and leaves after
# it is cleared, so whatever an interrupt leaves, every held gate is in it, and
# ``release_mine`` after each save looks at the few held now, not every lock ever used.
_taken: set[_Gate] = set()
_descriptor_api: tuple[Any, Any] | None = None


def _flock_nonblocking(fd: int) -> bool:
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
            return False  # held elsewhere (some file systems say EACCES)
        raise
    return True


def _lock_at_shutdown(fd: int, *, blocking: bool = True) -> bool:
    assert not blocking
    return _flock_nonblocking(fd)


def _unlock_at_shutdown(fd: int) -> None:
    import fcntl

    fcntl.flock(fd, fcntl.LOCK_UN)


def _api() -> tuple[Any, Any]:
    """filelock's ``lock_descriptor`` and ``unlock_descriptor`` (imported on first use).

    Importing filelock can fail while the interpreter shuts down (on CPython 3.10 it
    imports ``concurrent.futures.thread``, which registers an exit hook: "can't register
    atexit after shutdown"), when an exit handler makes the first save of the process.
    The same lock is then taken directly: on POSIX, ``lock_descriptor(fd,
    blocking=False)`` is ``flock(fd, LOCK_EX | LOCK_NB)`` with EAGAIN and EACCES meaning
    contention, and ``unlock_descriptor`` is ``flock(fd, LOCK_UN)`` (filelock's _unix.py).
    """
    global _descriptor_api
    if _descriptor_api is None:
        try:
            from filelock import lock_descriptor, unlock_descriptor
        except RuntimeError:
            if os.name != "posix":
                raise
            return (_lock_at_shutdown, _unlock_at_shutdown)  # not cached: only for now
        _descriptor_api = (lock_descriptor, unlock_descriptor)
    return _descriptor_api


def _gate(lock_path: str) -> _Gate:
    gate = _gates.get(lock_path)
    if gate is None:
        gate = _gates.setdefault(lock_path, _Gate())  # atomic: one gate per file
    return gate


def _drop(gate: _Gate) -> None:
    """Release what ``gate`` holds. Every step may be interrupted and done again."""
    claim = gate.claim
    if claim is not None:
        claim.release()  # first: other clients wait on it, and it is held under our flock
        gate.claim = None
    fd = gate.fd
    if fd is not None:
        # Unlock first: from here on nobody waits on this descriptor (should the unlock
        # fail, closing the descriptor releases the lock as well).
        with contextlib.suppress(OSError):
            _api()[1](fd)
        gate.fd = None
        with contextlib.suppress(OSError):
            os.close(fd)
    gate.held.pop(_OWNER, None)
    _taken.discard(gate)


def _open(lock_path: str) -> int:
    """The lock file's descriptor, tried again a few times when a network or FUSE client
    answers from a stale view of the directory (``ESTALE``, or ``ENOENT`` for a name
    another client removed or made since this one looked it up)."""
    for wait in (0.01, 0.05, 0.2, 0.5, 1.0):
        try:
            return _open_once(lock_path)
        except OSError as exc:
            if exc.errno not in (errno.ESTALE, errno.ENOENT):
                raise
        time.sleep(wait)
    return _open_once(lock_path)


def _open_once(lock_path: str) -> int:
    try:
        return os.open(lock_path, _OPEN_RW, 0o666)
    except FileNotFoundError:  # the artifact directory does not exist yet
        os.makedirs(os.path.dirname(lock_path) or ".", exist_ok=True)
        return os.open(lock_path, _OPEN_RW, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(
                errno.ELOOP,
                "the lock file is a symbolic link, which stagetimer does not follow; "
                "remove it",
                lock_path,
            ) from None
        if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise
        # Not writable by us: flock works on a read-only descriptor too.
        try:
            return os.open(lock_path, READ)
        except OSError:
            raise exc from None


def acquire(
    lock_path: str, timeout: float, sidecar: str | None = None, deadline: float | None = None
) -> claims.Claim | claims.NoClaim | None:
    """Hold the advisory lock ``lock_path`` for this thread; wait at most ``timeout`` s.

    ``timeout`` may be ``math.inf`` (wait as long as it takes); a monotonic ``deadline``
    given instead bounds the wait (a save's budget shared by its two files), and
    ``timeout`` is then what a ``LockTimeoutError`` names. With ``sidecar``, the
    cross-client claim of that file is taken too where its directory needs one
    (``policy.needed``), after the flock (so the writers of one client contend for
    the claim one at a time, and the directory exists) and within the same deadline; the
    claim, or ``claims.NO_CLAIM`` where none is needed, is returned for the holder's
    fence and release. Raises ``LockTimeoutError`` (naming the holders of the flock, or
    of the claim), ``InvalidSettingError`` for a bad ``STAGETIMER_CLAIM`` or
    ``STAGETIMER_CLAIM_STALE_SECONDS``, or ``OSError`` when the lock file cannot be
    opened or locked.
    Pair with :func:`release`; the gate records what an interrupt leaves held.
    """
    lock_descriptor = _api()[0]
    if deadline is None:
        deadline = math.inf if timeout == math.inf else time.monotonic() + timeout
    gate = _gate(lock_path)
    _own(gate, lock_path, timeout, deadline)
    try:
        gate.fd = _open(lock_path)
        delay = claims.POLL_FIRST
        while not lock_descriptor(gate.fd, blocking=False):
            delay = claims.pause(delay, deadline, lock_path, timeout, _POLL_MAX,
                                 lambda: holders.describe(lock_path))
        return None if sidecar is None else _claim(gate, sidecar, timeout, deadline)
    except BaseException:
        _drop(gate)
        raise


def _own(gate: _Gate, lock_path: str, timeout: float, deadline: float) -> None:
    """Make this thread the owner of ``gate``, with nothing held yet: wait for another
    thread's save to end, and undo what an interrupted save of this thread left."""
    me = threading.get_ident()
    delay = claims.POLL_FIRST
    while True:
        _taken.add(gate)
        if gate.held.setdefault(_OWNER, me) == me:
            if gate.fd is None and gate.claim is None:
                _taken.add(gate)  # again: another thread's ``release_mine`` may have
                return  # let it go while it had no owner
            _drop(gate)  # left by an interrupted save of this thread
            continue
        delay = claims.pause(delay, deadline, lock_path, timeout, _POLL_MAX)


def _claim(
    gate: _Gate, sidecar: str, timeout: float, deadline: float
) -> claims.Claim | claims.NoClaim:
    """The cross-client claim of ``sidecar``, taken under the flock ``gate`` holds, or
    ``claims.NO_CLAIM`` where its directory needs none; ``gate`` records it."""
    # Checked by every save, claim or none: a typo must fail alike on every file system.
    claim_stale_seconds()
    if not policy.needed(os.path.dirname(sidecar) or ".")[0]:
        return claims.NO_CLAIM

    def record(claim: claims.Claim) -> None:
        gate.claim = claim

    return claims.take(sidecar, deadline, timeout, on_token=record)


def release(lock_path: str) -> None:
    """Release the lock this thread holds on ``lock_path`` (nothing when it holds none)."""
    gate = _gates.get(lock_path)
    if gate is not None and gate.owner == threading.get_ident():
        _drop(gate)


def release_mine() -> None:
    """Release every lock this thread still holds: what an interrupted save left."""
    me = threading.get_ident()
    for gate in list(_taken):
        if gate.owner == me:
            _drop(gate)
        elif gate.owner is None:  # an interrupt came between joining and owning
            _taken.discard(gate)


def reset_after_fork() -> None:
    """In a forked child: forget the parent's locks and close the descriptors it copied.

    They are closed, not unlocked: an flock belongs to the open file description the
    parent shares, and unlocking it here would release the parent's lock.
    """
    global _gates
    for gate in _gates.values():
        if gate.fd is not None:
            with contextlib.suppress(OSError):
                os.close(gate.fd)
    _gates = {}
    _taken.clear()


process_state.register_at_fork("store.lock", after_in_child=reset_after_fork)
