"""The persistence protocol (SPEC section 6): locked read-apply-write with atomic replacement.

One save = take the file's advisory lock -> read -> apply one change -> write a
temporary file in the same directory -> flush and fsync -> ``os.replace`` ->
fsync the directory -> release. A file that does not parse, or a hardware
sidecar of a newer schema, is never overwritten.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from stagetimer._errors import LockTimeoutError
from stagetimer._parse import (
    open_sidecar,
    read_all,
)
from stagetimer._rules import is_stage

__all__ = [
    "HARDWARE_FILE",
    "TIMINGS_FILE",
    "TimingsCache",
    "add_hardware",
    "dumps_hardware",
    "dumps_timings",
    "locked",
    "timings_bytes",
    "update_file",
    "write_atomic",
]

TIMINGS_FILE = "timings.json"
HARDWARE_FILE = "timings_hardware.json"


# Threads of one process serialise per file on a threading.Lock; processes through the
# flock of one cached FileLock per file (building a FileLock costs more than a save's I/O).
_locks: dict[str, tuple[threading.Lock, Any]] = {}
_locks_guard = threading.Lock()


_lock_class: Any = None


def _sidecar_lock_class() -> Any:
    """filelock's flock lock, acquired without rewriting the lock file.

    ``UnixFileLock._acquire`` also creates the parent directory, truncates and chmods
    the lock file on every acquire: metadata writes that wait for the journal commit of
    the previous save's fsync (1.6 ms of a 3 ms save on ext4, measured with strace).
    Here the lock file is created once (mode from the umask) and afterwards only
    opened, and the directory is made only when it is missing; the waiting, timeout
    and release logic stay filelock's.
    """
    global _lock_class
    if _lock_class is None:
        import filelock  # imported here: import stagetimer stays light

        try:
            import fcntl
        except ImportError:  # not POSIX: filelock's own platform lock
            _lock_class = filelock.FileLock
            return _lock_class

        class SidecarLock(filelock.UnixFileLock):
            def _acquire(self) -> None:
                try:
                    fd = os.open(self.lock_file, os.O_RDWR | os.O_CREAT, 0o666)
                except FileNotFoundError:  # the artifact directory does not exist yet
                    os.makedirs(os.path.dirname(self.lock_file) or ".", exist_ok=True)
                    fd = os.open(self.lock_file, os.O_RDWR | os.O_CREAT, 0o666)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError as exc:
                    os.close(fd)
                    if exc.errno not in (errno.EAGAIN, errno.EACCES):
                        raise  # not "held by another": a real failure, not a wait
                else:
                    self._context.lock_file_fd = fd

        _lock_class = SidecarLock
    return _lock_class


def _locks_for(path: str) -> tuple[threading.Lock, Any]:
    with _locks_guard:
        pair = _locks.get(path)
        if pair is None:
            lock = _sidecar_lock_class()(path + ".lock", thread_local=False)
            pair = _locks[path] = (threading.Lock(), lock)
        return pair


@contextlib.contextmanager
def locked(path: str, timeout: float) -> Iterator[None]:
    """Hold the advisory lock ``path + ".lock"`` (and this process's lock for ``path``).

    The artifact directory is created when it is missing.
    """
    thread_lock, file_lock = _locks_for(path)
    deadline = time.monotonic() + timeout  # one budget for both locks
    if not thread_lock.acquire(timeout=timeout):
        raise LockTimeoutError(path + ".lock", timeout)
    try:
        try:
            # filelock polls a held lock every poll_interval (0.05 s by default): too coarse
            # for saves that take a millisecond.
            file_lock.acquire(timeout=max(0.0, deadline - time.monotonic()), poll_interval=0.001)
        except TimeoutError:  # filelock.Timeout
            raise LockTimeoutError(path + ".lock", timeout) from None
        try:
            yield
        finally:
            file_lock.release()
    finally:
        thread_lock.release()


# One encoder object: json.dumps with keyword arguments builds a new one per call.
# Without indent it uses the C encoder. New values are checked finite before they get
# here; a NaN read from an older file is written back as it was read.
_encode = json.JSONEncoder(ensure_ascii=False).encode


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


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


def dumps_hardware(data: dict[str, Any]) -> str:
    """``timings_hardware.json`` text."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _fsync_directory(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _temp_path(path: str) -> str:
    directory, base = os.path.split(path)
    return os.path.join(directory, f".{base}.tmp")


def write_atomic(path: str, content: bytes, mode: int | None) -> None:
    """Replace ``path`` by ``content`` atomically and durably.

    ``mode``: the permission bits of the file being replaced (kept), or None for a new
    file (the umask decides). The temporary file has a fixed name: it is only written
    under the file's lock, so whatever a killed writer left there is overwritten by the
    next save.
    """
    directory = os.path.dirname(path)
    tmp = _temp_path(path)
    if mode is None:
        # A new file: created fresh so that the umask decides its mode.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    else:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _NOFOLLOW, mode)
    try:
        try:
            if mode is not None:
                os.fchmod(fd, mode)
            view = memoryview(content)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
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
) -> None:
    """One save: under the lock, parse the file, let ``change`` edit it and write the result.

    ``change`` returns the new content, or None when nothing needs writing. With a
    ``cache``, bytes this writer wrote itself are not parsed again.
    """
    with locked(path, timeout):
        data, mode = _read_locked(path, parse, cache)
        try:
            content = change(data)
            if content is None:
                # Nothing to write; still clear what a killed writer may have left.
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(_temp_path(path))
            else:
                encoded = content.encode("utf-8") if isinstance(content, str) else content
                write_atomic(path, encoded, mode)
                if cache is not None:
                    cache.raw, cache.data = encoded, data
        except BaseException:
            if cache is not None:
                cache.clear()  # ``data`` may hold a change that did not reach the disk
            raise
