"""Locking: how a save keeps out every other writer of its file, behind one lock object.

``with locked(path, timeout) as claim:`` holds the lock of the file ``path`` for one
save. The ``flock`` of ``path + ".lock"`` keeps out the writers of this client; the
claim ``path + ".claim"`` keeps out the writers of other clients, where a shared file
system's ``flock`` does not reach them. The claim is taken only where another client may
write. The block gets the claim (or ``NO_CLAIM``): a writer calls its ``fence`` right
before it publishes and its ``release`` right after. The lock holds no claim when it
names a plain lock file, as the exports' lock does (``acquire`` and ``release``).

Parts of the room:

- ``lock``: the ``flock`` and the per-thread gate of each lock file (what an interrupt
  leaves held is recorded there and undone by ``release_mine``);
- ``claims``: a claim file as read (trusting none of it), and taking, fencing,
  releasing and breaking a claim;
- ``policy``: which directories need the claim (``STAGETIMER_CLAIM``);
- ``holders``: who holds a lock file's ``flock`` now, from ``/proc/locks``.
"""

from __future__ import annotations

from stagetimer._store.locking.claims import NO_CLAIM, Claim, NoClaim
from stagetimer._store.locking.lock import acquire, release, release_mine

__all__ = ["NO_CLAIM", "Claim", "NoClaim", "acquire", "locked", "release", "release_mine"]


class locked:  # lower case: used like a function, ``with locked(path, timeout):``
    """Hold the advisory lock ``path + ".lock"`` and, where needed, the claim.

    The claim is ``path + ".claim"`` (see the package docstring). ``with`` gives the
    claim (or ``NO_CLAIM``). The artifact directory is created when it is missing.
    ``timeout`` (one budget for both) may be infinite; a monotonic ``deadline``, given
    instead, bounds the wait, and ``timeout`` is then what a ``LockTimeoutError`` names.
    A class, not a generator: an interrupt in its exit never lands in a generator's
    finaliser (where Python only prints it).
    """

    __slots__ = ("deadline", "lock_path", "path", "timeout")

    def __init__(self, path: str, timeout: float, deadline: float | None = None) -> None:
        self.path = path
        self.lock_path = path + ".lock"
        self.timeout = timeout
        self.deadline = deadline

    def __enter__(self) -> Claim | NoClaim:
        claim = acquire(self.lock_path, self.timeout, self.path, self.deadline)
        assert claim is not None
        return claim

    def __exit__(self, *exc_info: object) -> None:
        release(self.lock_path)
