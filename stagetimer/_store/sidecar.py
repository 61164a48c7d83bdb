"""The persistence protocol (docs/guarantees.md): locked read-apply-write with atomic replacement.

One save = take the file's advisory lock -> read -> apply one change -> write a
temporary file in the same directory -> flush and fsync -> ``os.replace`` ->
fsync the directory -> release. A file that does not parse, or a hardware
sidecar of a newer schema, is never overwritten.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import json
import os
import re
import time
from collections.abc import Callable
from typing import Any

from stagetimer._format import TIMINGS_FILE
from stagetimer._store.lock import acquire, release
from stagetimer._store.parse import (
    open_sidecar,
    read_all,
)
from stagetimer._store.rules import is_stage

__all__ = [
    "Attempt",
    "TimingsCache",
    "add_hardware",
    "add_software",
    "clear_leftovers",
    "dumps_hardware",
    "dumps_timings",
    "locked",
    "reset_after_fork",
    "timings_bytes",
    "update_file",
    "write_atomic",
]



class locked:  # lower case: used like a function, ``with locked(path, timeout):``
    """Hold the advisory lock ``path + ".lock"`` (see ``stagetimer._store.lock``).

    The artifact directory is created when it is missing. ``timeout`` may be infinite.
    A class, not a generator: an interrupt in its exit never lands in a generator's
    finaliser (where Python only prints it).
    """

    __slots__ = ("lock_path", "timeout")

    def __init__(self, path: str, timeout: float) -> None:
        self.lock_path = path + ".lock"
        self.timeout = timeout

    def __enter__(self) -> None:
        acquire(self.lock_path, self.timeout)

    def __exit__(self, *exc_info: object) -> None:
        release(self.lock_path)


# One encoder object: json.dumps with keyword arguments builds a new one per call.
# Without indent it uses the C encoder. New values are checked finite before they get
# here; a NaN read from an older file is written back as it was read.
_encode = json.JSONEncoder(ensure_ascii=False).encode


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def _indented(value: Any, depth: int) -> str:
    if value is None or isinstance(value, (str, int, float)):
        return _encode(value)  # a scalar needs no indentation (and json.dumps is slow)
    return json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n" + "  " * depth)


_RUN_SEPARATOR = b",\n      "


def _runs_pieces(runs: list[Any], cached: tuple[list[Any], list[bytes]] | None) -> list[bytes]:
    # The runs list of a stage only ever grows in place (sequential appends); any other
    # change replaces the list object. So the pieces cached for the same list object are
    # the text of its first runs: encode only the rest.
    pieces = cached[1] if cached is not None and cached[0] is runs else []
    done = (len(pieces) + 1) // 2  # run, separator, run, ...
    if done > len(runs):
        pieces, done = [], 0
    for run in runs[done:]:
        if pieces:
            pieces.append(_RUN_SEPARATOR)
        pieces.append(_encode(run).encode("utf-8"))
    return pieces


def _stage_pieces(
    name: str, stage: dict[str, Any], cache: TimingsCache | None, out: list[bytes]
) -> None:
    out.append(b"{\n")
    first = True
    for key, value in stage.items():
        out.append(b"    " if first else b",\n    ")
        first = False
        if key == "runs" and value:
            pieces = _runs_pieces(value, cache.runs_text.get(name) if cache else None)
            if cache is not None:
                cache.runs_text[name] = (value, pieces)
            out.append(b'"runs": [\n      ')
            out.extend(pieces)
            out.append(b"\n    ]")
        else:
            out.append(f"{_encode(key)}: {_indented(value, 2)}".encode())
    out.append(b"\n  }")


def timings_bytes(data: dict[str, Any], cache: TimingsCache | None = None) -> bytes:
    """``timings.json`` as UTF-8: indented, one run per line (readable, diffable, C-encoded).

    With a ``cache``, the runs a stage already had are not encoded again.
    """
    if not data:
        return b"{}\n"
    out = [b"{\n"]
    for i, (key, value) in enumerate(data.items()):
        out.append(f"  {_encode(key)}: ".encode() if i == 0 else f",\n  {_encode(key)}: ".encode())
        if is_stage(value):
            _stage_pieces(key, value, cache, out)
        else:
            out.append(_indented(value, 1).encode())
    out.append(b"\n}\n")
    return b"".join(out)


def dumps_timings(data: dict[str, Any]) -> str:
    """``timings.json`` text (see ``timings_bytes``)."""
    return timings_bytes(data).decode("utf-8")


def add_hardware(data: dict[str, Any], entries: dict[str, Any]) -> dict[str, Any]:
    """Add to a parsed hardware sidecar the entries it lacks; return those added.

    An entry already there is never replaced: equal ids describe equal hardware.
    """
    known = data["hardware"]
    missing = {k: v for k, v in entries.items() if k not in known}
    known.update(missing)
    return missing


def add_software(data: dict[str, Any], entries: dict[str, Any]) -> dict[str, Any]:
    """Add to a parsed hardware sidecar the software descriptions it lacks; return those added.

    The ``software`` map is created at the first one (a file without software stays
    byte for byte as an older writer left it). An entry is never replaced.
    """
    if not entries:
        return {}
    known = data.setdefault("software", {})
    missing = {k: v for k, v in entries.items() if k not in known}
    known.update(missing)
    return missing


def dumps_hardware(data: dict[str, Any]) -> str:
    """``timings_hardware.json`` text."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _fsync_directory(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Attempt:
    """One write's bookkeeping, from which an interrupted save learns whether it happened.

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


_token_cache: tuple[int, str] | None = None
_counter = itertools.count()
_TMP_MARK = ".tmp"
_RESCUE_TMP = ".timings.rescue-"
_FOREIGN_AGE = 3600.0  # seconds after which another host's temporary file is a leftover
_unclean: set[str] = set()  # sidecars whose last save by this process did not finish


def _token() -> str:
    """``host-pid-random`` of this process (a fork gets its own)."""
    global _token_cache
    pid = os.getpid()
    if _token_cache is None or _token_cache[0] != pid:
        import socket

        host = re.sub(r"[^A-Za-z0-9_.]", "_", socket.gethostname())[:64] or "host"
        _token_cache = (pid, f"{host}-{pid}-{os.urandom(4).hex()}")
    return _token_cache[1]


def _temp_path(path: str) -> str:
    """A name of its own beside ``path``: ``.<name>.tmp-<host>-<pid>-<random>-<n>``."""
    directory, base = os.path.split(path)
    return os.path.join(directory, f".{base}{_TMP_MARK}-{_token()}-{next(_counter)}")


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
    parts = rest[1:].rsplit("-", 3)
    mine = _token().rsplit("-", 2)
    if len(parts) == 4 and parts[0] == mine[0] and parts[1].isdigit():
        pid = int(parts[1])
        if pid == os.getpid():
            return locked  # ours, from an interrupted save (we hold the lock now)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True  # its writer is gone
        except OSError:
            return False  # alive, someone else's
        return False
    # Another host's: only on file systems whose locks are per client could a live writer
    # still be using it; past an hour it is a leftover.
    try:
        age = time.time() - os.lstat(os.path.join(directory, name)).st_mtime
    except OSError:
        return False
    return age > _FOREIGN_AGE


def clear_leftovers(path: str) -> None:
    """Remove the temporary files killed or interrupted writers left beside ``path``.

    Called under ``path``'s lock: no live writer of this file system's locks is writing.
    """
    directory, base = os.path.split(path)
    directory = directory or "."
    prefix = f".{base}{_TMP_MARK}"
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        if name.startswith(prefix):
            gone = _is_leftover(directory, name, prefix)
        elif base == TIMINGS_FILE and name.startswith(_RESCUE_TMP) and _TMP_MARK + "-" in name:
            # A rescue file's temporary file, left by a writer that was killed.
            head = name[: name.index(_TMP_MARK + "-") + len(_TMP_MARK)]
            gone = _is_leftover(directory, name, head, locked=False)
        else:
            continue
        if gone:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(directory, name))
    _unclean.discard(path)


def reset_after_fork() -> None:
    """In a forked child: the parent's unfinished saves are not the child's to clear."""
    _unclean.clear()


def write_atomic(
    path: str, content: bytes, mode: int | None, attempt: Attempt | None = None
) -> None:
    """Replace ``path`` by ``content`` atomically and durably.

    ``mode``: the permission bits of the file being replaced (kept), or None for a new
    file (the umask decides). The temporary file is created new (``O_EXCL``, no link
    followed) under a name of its own in the same directory, so nothing planted there
    and no other writer's file is ever written through. ``attempt`` records the progress
    (see ``Attempt``).
    """
    if attempt is None:
        attempt = Attempt()
    directory = os.path.dirname(path)
    _unclean.add(path)
    attempt.path = path
    for _ in range(100):
        attempt.tmp = tmp = _temp_path(path)
        try:
            fd = os.open(tmp, _CREATE, 0o666 if mode is None else 0o600)
        except FileExistsError:
            continue  # something is planted at that name: take another
        break
    else:
        raise FileExistsError(errno.EEXIST, "no free temporary file name", path)
    try:
        try:
            attempt.ino = os.fstat(fd).st_ino
            if mode is not None:
                os.fchmod(fd, mode)
            view = memoryview(content)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        attempt.done = True
    except BaseException:
        attempt.replaced()  # removes the temporary file
        raise
    _unclean.discard(path)
    _fsync_directory(directory or ".")


class TimingsCache:
    """What one writer last saved to a file, reused while the file still holds those bytes.

    Saves of large files are dominated by parsing and encoding; when the bytes on disk
    are the bytes this writer wrote, its parsed data and encoded runs are still exact.
    """

    def __init__(self) -> None:
        self.raw: bytes | None = None
        self.data: dict[str, Any] | None = None
        #: stage -> (its runs list, the UTF-8 of its runs: run, separator, run, ...)
        self.runs_text: dict[str, tuple[list[Any], list[bytes]]] = {}
        #: stages whose total_seconds this writer computed from their runs
        self.trusted_totals: set[str] = set()
        self.buffer = bytearray()

    def clear(self) -> None:
        self.raw, self.data = None, None
        self.runs_text.clear()
        self.trusted_totals.clear()


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
    try:
        mode = st.st_mode & 0o7777
        known = cache.raw if cache is not None else None
        if cache is not None and known is not None and cache.data is not None and (
            st.st_size == len(known)
        ):
            # Read into a reused buffer: a fresh megabyte per save costs page faults.
            if len(cache.buffer) != len(known):
                cache.buffer = bytearray(len(known))
            count = os.readv(fd, [cache.buffer])
            if count == len(known) and cache.buffer == known:
                return cache.data, mode
            raw = bytes(cache.buffer[:count]) + read_all(fd, 0)
        else:
            raw = read_all(fd, st.st_size)
    finally:
        os.close(fd)
    if cache is not None:
        cache.clear()
    return parse(path, raw), mode


def update_file(
    path: str,
    parse: Callable[[str, bytes | None], dict[str, Any]],
    change: Callable[[dict[str, Any]], str | bytes | None],
    timeout: float,
    cache: TimingsCache | None = None,
    attempt: Attempt | None = None,
    sweep: bool = True,
) -> None:
    """One save: under the lock, parse the file, let ``change`` edit it and write the result.

    ``change`` returns the new content, or None when nothing needs writing. With a
    ``cache``, bytes this writer wrote itself are not parsed again. ``attempt`` records
    whether the file was replaced, for a caller that an interrupt may reach. ``sweep``:
    clear what killed writers left (a recorder does at its first save of each file, and
    after an interrupted save of this process).
    """
    with locked(path, timeout):
        if sweep or path in _unclean:
            clear_leftovers(path)
        data, mode = _read_locked(path, parse, cache)
        if cache is not None:
            # ``change`` edits ``data`` in place: until the new bytes are on disk the
            # cache must not claim to hold what the file holds.
            cache.raw = None
        content = change(data)
        if content is None:
            return
        encoded = content.encode("utf-8") if isinstance(content, str) else content
        write_atomic(path, encoded, mode, attempt)
        if cache is not None:
            cache.raw, cache.data = encoded, data


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=reset_after_fork)
