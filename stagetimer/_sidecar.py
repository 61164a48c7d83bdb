"""The persistence protocol (SPEC section 6): locked read-apply-write with atomic replacement.

One save = take the file's advisory lock -> read -> apply one change -> write a
temporary file in the same directory -> flush and fsync -> ``os.replace`` ->
fsync the directory -> release. A file that does not parse, or a hardware
sidecar of a newer schema, is never overwritten.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

from stagetimer._errors import LockTimeoutError, SchemaVersionError, SidecarCorruptError
from stagetimer._rules import is_stage

__all__ = [
    "HARDWARE_FILE",
    "SCHEMA_VERSION",
    "TIMINGS_FILE",
    "dumps_hardware",
    "dumps_timings",
    "locked",
    "parse_hardware",
    "parse_timings",
    "read_bytes",
    "update_file",
]

TIMINGS_FILE = "timings.json"
HARDWARE_FILE = "timings_hardware.json"

#: Version of ``timings_hardware.json``.
#: 1 (stagetimer 0.1): {"schema_version": 1, "hardware": {hardware_id: description}}.
SCHEMA_VERSION = 1

# Threads of one process serialise per file here; processes through the flock.
_thread_locks: dict[str, threading.Lock] = {}
_thread_locks_guard = threading.Lock()


def _thread_lock(path: str) -> threading.Lock:
    with _thread_locks_guard:
        lock = _thread_locks.get(path)
        if lock is None:
            lock = _thread_locks[path] = threading.Lock()
        return lock


@contextlib.contextmanager
def locked(path: str, timeout: float) -> Iterator[None]:
    """Hold the advisory lock ``path + ".lock"`` (and this process's lock for ``path``)."""
    import filelock  # imported here: import stagetimer stays light

    thread_lock = _thread_lock(path)
    if not thread_lock.acquire(timeout=timeout):
        raise LockTimeoutError(path + ".lock", timeout)
    try:
        lock = filelock.FileLock(path + ".lock", timeout=timeout)
        try:
            lock.acquire()
        except filelock.Timeout:
            raise LockTimeoutError(path + ".lock", timeout) from None
        try:
            yield
        finally:
            lock.release()
    finally:
        thread_lock.release()


def read_bytes(path: str) -> bytes | None:
    """The file's bytes, or None when it does not exist."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def _loads(path: str, raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SidecarCorruptError(path, f"does not parse as JSON ({exc})") from None


def parse_timings(path: str, raw: bytes | None) -> dict[str, Any]:
    """The top-level mapping of ``timings.json`` (empty when the file is missing)."""
    if raw is None:
        return {}
    data = _loads(path, raw)
    if not isinstance(data, dict):
        raise SidecarCorruptError(
            path, f"top level is a JSON {type(data).__name__}, expected an object"
        )
    return data


def parse_hardware(path: str, raw: bytes | None) -> dict[str, Any]:
    """The mapping of ``timings_hardware.json``; newer schemas raise ``SchemaVersionError``."""
    if raw is None:
        return {"schema_version": SCHEMA_VERSION, "hardware": {}}
    data = _loads(path, raw)
    if not isinstance(data, dict):
        raise SidecarCorruptError(
            path, f"top level is a JSON {type(data).__name__}, expected an object"
        )
    version = data.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        raise SchemaVersionError(path, version, SCHEMA_VERSION)
    if version != SCHEMA_VERSION:
        raise SidecarCorruptError(path, f"schema_version is {version!r}, expected 1")
    if not isinstance(data.get("hardware"), dict):
        raise SidecarCorruptError(path, "'hardware' is missing or not an object")
    return data


# One encoder object: json.dumps with keyword arguments builds a new one per call.
# Without indent it uses the C encoder.
_encode = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode


def _indented(value: Any, depth: int) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n" + "  " * depth)


def _dumps_stage(stage: dict[str, Any]) -> str:
    items = []
    for key, value in stage.items():
        if key == "runs" and value:
            runs = ",\n      ".join(map(_encode, value))
            items.append(f'    "runs": [\n      {runs}\n    ]')
        else:
            items.append(f"    {_encode(key)}: {_indented(value, 2)}")
    return "{\n" + ",\n".join(items) + "\n  }"


def dumps_timings(data: dict[str, Any]) -> str:
    """``timings.json`` text: indented, one run per line (readable, diffable, C-encoded)."""
    if not data:
        return "{}\n"
    items = [
        f"  {_encode(key)}: {_dumps_stage(value) if is_stage(value) else _indented(value, 1)}"
        for key, value in data.items()
    ]
    return "{\n" + ",\n".join(items) + "\n}\n"


def dumps_hardware(data: dict[str, Any]) -> str:
    """``timings_hardware.json`` text."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _fsync_directory(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: str, text: str) -> None:
    """Replace ``path`` by ``text`` atomically and durably, keeping an existing file's mode.

    The temporary file has a fixed name: it is only written under the file's
    lock, so whatever a killed writer left there is overwritten by the next save.
    """
    directory, base = os.path.split(path)
    tmp = os.path.join(directory, f".{base}.tmp")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # umask applies
    try:
        try:
            if mode is not None:
                os.fchmod(fd, mode)
            view = memoryview(text.encode("utf-8"))
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


def update_file(
    path: str,
    parse: Callable[[str, bytes | None], dict[str, Any]],
    change: Callable[[dict[str, Any]], str | None],
    timeout: float,
) -> None:
    """One save: under the lock, parse the file, let ``change`` edit it and write the result.

    ``change`` returns the new text, or None when nothing needs writing.
    """
    with locked(path, timeout):
        data = parse(path, read_bytes(path))
        text = change(data)
        if text is not None:
            write_atomic(path, text)
