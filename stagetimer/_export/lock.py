"""The lock an export holds on its destination, around reading what the destination
holds and adding what it lacks: two exports into one destination at once (two array
tasks, two CI jobs) then run one after the other, and the second finds the first's
runs, scalars and spans instead of writing them again.

The lock is the sidecars' own (``stagetimer._store.locking``: an ``flock`` through
filelock's ``lock_descriptor`` on a file opened without following links), on a lock
file of the destination:

- a file or directory destination (an OTLP file, a TensorBoard log directory, a SQLite
  database, an MLflow file store): ``DEST.lock`` beside it;
- a destination no local file names (an MLflow server, a database server): a lock file
  named by a hash of the URI in this user's cache directory
  (``$XDG_CACHE_HOME/stagetimer/export-locks``, else ``~/.cache/...``). It orders the
  exports that share that directory: this machine's, and those of every node where the
  home directory is shared and ``flock`` works across nodes (NFSv4, Lustre, GPFS).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from stagetimer._errors import LockTimeoutError
from stagetimer._export.runs import ExportError, digest
from stagetimer._store import locking as lock

__all__ = ["LOCK_TIMEOUT", "held", "lock_beside", "lock_in_cache"]

#: How long an export waits for another export of the same destination (seconds).
LOCK_TIMEOUT = 600.0


def lock_beside(destination: str) -> str:
    """``DEST.lock``: the lock file of a file or directory destination."""
    return os.path.normpath(os.path.abspath(destination)) + ".lock"


def lock_in_cache(uri: str) -> str:
    """The lock file of a destination no local file names, in this user's cache."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(
        os.path.expanduser("~"), ".cache"
    )
    return os.path.join(cache, "stagetimer", "export-locks", f"{digest(uri, size=8)}.lock")


@contextlib.contextmanager
def held(
    lock_path: str, destination: str, failure: str, timeout: float = LOCK_TIMEOUT
) -> Iterator[None]:
    """Hold ``lock_path`` for the block; :class:`ExportError`, its message beginning with
    ``failure``, when it cannot be opened or another export holds it past ``timeout``."""
    try:
        lock.acquire(lock_path, timeout)
    except LockTimeoutError as exc:
        raise ExportError(
            f"{failure}: {lock_path!r} not acquired within {timeout:g} s: {exc.reason} "
            f"(another export into {destination!r}); try again once it has finished"
        ) from exc
    except OSError as exc:
        raise ExportError(
            f"{failure}: cannot lock it: {lock_path!r}: {exc.strerror or exc}"
        ) from exc
    try:
        yield
    finally:
        lock.release(lock_path)
