"""The persistence protocol (docs/guarantees.md): locked read-apply-write with atomic replacement.

One save = take the file's advisory lock -> read -> apply one change -> write a
temporary file in the same directory -> flush and fsync -> ``os.replace`` ->
fsync the directory -> release. A file that does not parse, or a hardware
sidecar of a newer schema, is never overwritten. The bytes written are encoded by
``stagetimer._store.encode`` (re-exported here for the writers).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import attrs

from stagetimer._errors import SidecarCorruptError
from stagetimer._store.encode import TimingsCache, dumps_hardware, dumps_timings, timings_bytes
from stagetimer._store.leftovers import clear_leftovers
from stagetimer._store.leftovers import temp_path as _temp_path
from stagetimer._store.leftovers import unclean as _unclean
from stagetimer._store.locking import locked
from stagetimer._store.parse import open_sidecar, read_all, retry_replaced
from stagetimer._system.durable import write_file
from stagetimer._system.mounts import is_local

__all__ = [
    "TimingsCache",
    "UpdateOptions",
    "WriteProgress",
    "add_descriptions",
    "dumps_hardware",
    "dumps_timings",
    "locked",
    "timings_bytes",
    "update_file",
    "write_atomic",
]



def _add_missing(known: dict[str, Any], entries: dict[str, Any]) -> bool:
    """Add to ``known`` the entries it lacks (one already there is never replaced: equal
    ids describe equal things); whether any was added."""
    missing = {k: v for k, v in entries.items() if k not in known}
    known.update(missing)
    return bool(missing)


def add_descriptions(
    data: dict[str, Any], hardware: dict[str, Any], software: dict[str, Any]
) -> str | None:
    """Add to a parsed hardware sidecar the hardware and software descriptions it lacks;
    its new text, or None when it held them all (nothing to write).

    The ``software`` map is created at the first one (a file without software stays
    byte for byte as an older writer left it).
    """
    added = _add_missing(data["hardware"], hardware)
    if software:
        added = _add_missing(data.setdefault("software", {}), software) or added
    return dumps_hardware(data) if added else None


class WriteProgress:
    """How far one write got, from which an interrupted save learns whether it happened.

    ``os.replace`` is the moment a save takes effect; an interrupt may land on either side
    of it. The temporary file has a name of its own, so after it was created its absence
    means the replacement happened (see ``replaced``).
    """

    __slots__ = ("done", "ino", "path", "tmp")

    def __init__(self) -> None:
        self.path: str | None = None  # the file replaced
        self.tmp: str | None = None  # set before the temporary file is created
        self.ino: int | None = None  # its inode, once it was created
        self.done = False  # set once os.replace returned

    def replaced(self) -> bool:
        """Whether the file was replaced; removes a temporary file left by an interrupt.

        Without ``done``: the temporary file is gone and the file is that inode. (When
        another writer replaced the file since, this answers False; the caller then
        finds its runs already stored instead of storing them twice.)
        """
        if self.done:
            return True
        if self.tmp is None or self.path is None:
            return False
        try:
            os.unlink(self.tmp)
        except FileNotFoundError:
            pass  # never created (interrupted before the open), or renamed onto the file
        except OSError:
            return False
        else:
            return False
        try:
            return self.ino is not None and os.stat(self.path).st_ino == self.ino
        except OSError:
            return False


def write_atomic(
    path: str,
    content: bytes,
    mode: int | None,
    progress: WriteProgress | None = None,
    fence: Callable[[], None] | None = None,
    published: Callable[[], None] | None = None,
    new_mode: int = 0o666,
) -> None:
    """Replace ``path`` by ``content`` atomically and durably.

    ``mode``: the permission bits of the file being replaced (kept), or None for a new
    file (``new_mode`` less the umask). The temporary file is created new (``O_EXCL``, no link
    followed) under a name of its own in the same directory, so nothing planted there
    and no other writer's file is ever written through. ``progress`` records how far
    it got (see ``WriteProgress``). ``fence``, called right before ``os.replace``, raises when this
    writer may no longer publish (its cross-client claim was broken); ``published``,
    called right after it, lets the claim go before the directory's ``fsync`` (the
    change is visible: other clients may start theirs, and the claim's own creation
    and removal are not left for that ``fsync`` to write).
    """
    if progress is None:
        progress = WriteProgress()
    _unclean.add(path)
    progress.path = path
    progress.tmp = progress.ino = None

    def temp_name(_base: str) -> str:
        # Known before the file is created: an interrupt right after its creation leaves
        # a name ``replaced`` removes.
        progress.tmp = tmp = _temp_path(path)
        return os.path.basename(tmp)

    def created(temp: str, ino: int) -> None:
        progress.tmp, progress.ino = temp, ino

    def done() -> None:
        progress.done = True
        if published is not None:
            published()

    try:
        write_file(path, content, mode, temp_name=temp_name, created=created, fence=fence,
                   published=done, new_mode=new_mode)
    except BaseException:
        progress.replaced()  # removes a temporary file an interrupt left
        raise
    _unclean.discard(path)


def _read_locked(
    path: str, parse: Callable[[str, bytes | None], dict[str, Any]], cache: TimingsCache | None
) -> tuple[dict[str, Any], int | None]:
    """The parsed file and its permission bits (None when it does not exist).

    When the file holds the bytes ``cache`` wrote, its parsed data is reused. Plain
    descriptor calls: a Python file object adds three system calls per save.
    """
    opened = open_sidecar(path)
    if opened is None:
        if cache is not None:
            cache.clear()
        return parse(path, None), None
    fd, st = opened
    mode = st.st_mode & 0o7777
    try:
        raw = read_all(fd, st.st_size) if cache is None else _read_cached(fd, st.st_size, cache)
        if raw is None:  # the bytes ``cache`` wrote
            assert cache is not None and cache.data is not None
            return cache.data, mode
    finally:
        os.close(fd)
    if cache is not None:
        cache.clear()
    return parse(path, raw), mode


def _read_cached(fd: int, size: int, cache: TimingsCache) -> bytes | None:
    """The file's bytes, or None when they are those ``cache`` wrote (its data holds them
    parsed)."""
    known = cache.raw
    if known is None or cache.data is None or size != len(known):
        return read_all(fd, size)
    # Read into a reused buffer: a fresh megabyte per save costs page faults.
    if len(cache.buffer) != len(known):
        cache.buffer = bytearray(len(known))
    count = os.readv(fd, [cache.buffer])
    if count == len(known) and cache.buffer == known:
        return None
    return bytes(cache.buffer[:count]) + read_all(fd, 0)


#: Waits before reading again a sidecar cut short on a network or FUSE file
#: system (about 3 s in all: past FUSE's default attribute timeout of 1 s).
_SETTLE_WAITS = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6)


def _read_settled(
    path: str, parse: Callable[[str, bytes | None], dict[str, Any]], cache: TimingsCache | None
) -> tuple[dict[str, Any], int | None]:
    """``_read_locked``, read again while a network or FUSE client may show a stale size.

    A FUSE client keeps a file's attributes for ``attr_timeout`` (1 s unless the mount
    says otherwise, fuse(8)); after another client replaced the file, reads through the
    old size return the new content cut short, which does not parse
    (``SidecarCorruptError.cut_short``).
    Any other corruption, and any on a local file system, is final at once.
    """
    waits = iter(_SETTLE_WAITS)
    while True:
        try:
            return retry_replaced(lambda: _read_locked(path, parse, cache))
        except SidecarCorruptError as exc:
            wait = next(waits, None)
            if wait is None or not exc.cut_short or is_local(os.path.dirname(path) or "."):
                raise
            time.sleep(wait)


@attrs.frozen
class UpdateOptions:
    """How one ``update_file`` runs beyond its file and its change; the defaults make a
    plain save.

    ``progress`` records whether the file was replaced, for a caller that an interrupt may
    reach. ``sweep``: clear what killed writers left (a recorder does at its first save of
    each file, and after an interrupted save of this process). ``deadline`` (monotonic),
    when given, bounds the wait for the lock instead of the timeout, which the error then
    names. ``after``, when given, runs once the change is durable (or nothing needed
    writing), still under the lock and the claim (``recover`` removes the rescue files it
    folded).
    """

    progress: WriteProgress | None = None
    sweep: bool = True
    deadline: float | None = None
    after: Callable[[], None] | None = None


_PLAIN = UpdateOptions()


def update_file(
    path: str,
    parse: Callable[[str, bytes | None], dict[str, Any]],
    change: Callable[[dict[str, Any]], str | bytes | None],
    timeout: float,
    cache: TimingsCache | None = None,
    options: UpdateOptions = _PLAIN,
) -> None:
    """One save: under the lock, parse the file, let ``change`` edit it and write the result.

    ``change`` returns the new content, or None when nothing needs writing. With a
    ``cache``, bytes this writer wrote itself are not parsed again. ``options``: see
    ``UpdateOptions``.
    """
    after = options.after
    with locked(path, timeout, options.deadline) as claim:
        if options.sweep or path in _unclean:
            clear_leftovers(path)
        data, mode = _read_settled(path, parse, cache)
        if cache is not None:
            # ``change`` edits ``data`` in place: until the new bytes are on disk the
            # cache must not claim to hold what the file holds.
            cache.raw = None
        content = change(data)
        if content is None:
            if after is not None:
                after()
            return
        encoded = content.encode("utf-8") if isinstance(content, str) else content
        if after is None:
            write_atomic(path, encoded, mode, options.progress, claim.fence, claim.release)
        else:
            write_atomic(path, encoded, mode, options.progress, claim.fence)
            after()  # the claim is released with the lock, after it
        if cache is not None:
            cache.raw, cache.data = encoded, data
