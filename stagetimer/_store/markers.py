"""Started markers: one small file per attempt, ``timings.attempts/<attempt_id>.json``.

An attempt is one entry into a recorded stage. Its marker is written before the block
runs and says who started what; the run a finished attempt saves holds its
``attempt_id`` and the marker is removed once that save has published; a failed
attempt's marker is replaced by one that says how it ended. What a marker holds is
``stagetimer._format.MarkerContent``, its keys in order ``MARKER_FIELDS``.

Every operation rests on what shared file systems make atomic across clients, as saves
do (``claims.py``), and none needs a lock: each marker has one writer, the process whose
attempt it is, under a random name of its own.

- **Create**: ``O_CREAT | O_EXCL`` without following links, through a descriptor of the
  markers' directory opened ``O_DIRECTORY | O_NOFOLLOW`` (a planted link in place of the
  directory or of the name is never followed), ``fchmod``-ed ``0644`` whatever the umask
  (only its writer may change it), written, ``fsync``-ed, and the directory ``fsync``-ed:
  the marker is durable before the block runs. The markers' directory is made as open
  as its parent, and sticky wherever others may write in it (``_shared_mode``): only a
  marker's writer may replace, rename or remove it.
- **Replace** (a failed attempt): ``durable.write_file`` through the directory's
  descriptor: a temporary file of our own (``.<attempt_id>.tmp-<random>``, never a
  ``.json`` name), ``0644``, ``fsync``-ed, ``rename``-d onto the marker, the directory
  ``fsync``-ed.
- **Remove**: ``unlink`` through the directory's descriptor. Not ``fsync``-ed: a marker
  that comes back after a crash names an id already in ``timings.json``, which counts as
  finished, and the next save removes it.

A leftover marker (its writer was killed between the publish and the removal) names a run
``timings.json`` holds, and reads as that finished run. The save that drops that run
(replaced, or reset) removes it, found by the run's ``attempt_id``, never by listing the
directory, and only when it is a regular file owned by the saving user (``DroppedRuns``,
``remove_owned``).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import uuid
from collections.abc import Iterable
from typing import Any

from stagetimer._format import ATTEMPTS_DIR, MARKER_FIELDS, MARKER_SUFFIX
from stagetimer._system.durable import fsync_directory, write_all, write_file
from stagetimer._system.openflags import CLOEXEC, CREATE_NEW, NOFOLLOW, NONBLOCK

__all__ = [
    "DIRECTORY_FLAGS",
    "MARKER_MODE",
    "MARKER_TEXT_CHARS",
    "DroppedRuns",
    "attempt_ids",
    "attempts_path",
    "bounded_text",
    "create",
    "encode",
    "is_attempt_id",
    "new_attempt_id",
    "remove",
    "remove_owned",
    "replace",
]

#: Opening the markers' directory: never through a link, never a file.
DIRECTORY_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | NOFOLLOW | CLOEXEC | NONBLOCK
_HEX = frozenset("0123456789abcdef")
_ID_LENGTH = 32
_NAME_LENGTH = _ID_LENGTH + len(MARKER_SUFFIX)


def attempts_path(directory: str) -> str:
    """The markers' directory of artifact directory ``directory``."""
    return os.path.join(directory, ATTEMPTS_DIR)


def new_attempt_id() -> str:
    """A new attempt's id: random, 32 lower-case hex digits (a UUID4's ``hex``)."""
    return uuid.uuid4().hex


def is_attempt_id(text: object) -> bool:
    """Whether ``text`` is an attempt id as writers make them (32 lower-case hex digits)."""
    return isinstance(text, str) and len(text) == _ID_LENGTH and _HEX.issuperset(text)


#: The most characters a text of a marker keeps (a label, a stage name, an exception's
#: type name): a marker stays far below ``MARKER_MAX_BYTES`` whatever it was given
#: (each character at most 6 bytes of JSON, a few such texts), so readers never refuse
#: it. A longer text keeps its head and says it was cut (``bounded_text``).
MARKER_TEXT_CHARS = 1024


def bounded_text(text: str) -> str:
    """``text``, or its first ``MARKER_TEXT_CHARS`` characters followed by
    ``… [70000 characters, truncated]``."""
    if len(text) <= MARKER_TEXT_CHARS:
        return text
    return f"{text[:MARKER_TEXT_CHARS]}\u2026 [{len(text)} characters, truncated]"


def _bounded(value: Any) -> Any:
    if isinstance(value, str):
        return bounded_text(value)
    if isinstance(value, dict):
        return {key: _bounded(item) for key, item in value.items()}
    return value


def encode(marker: dict[str, Any]) -> bytes:
    """A marker's bytes: one line of JSON, its keys in ``MARKER_FIELDS``' order, each
    text bounded (``bounded_text``)."""
    ordered = {key: _bounded(marker[key]) for key in MARKER_FIELDS if key in marker}
    return (json.dumps(ordered, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


#: A marker's permission bits: only its writer may change it (whatever the umask).
MARKER_MODE = 0o644


def _shared_mode(parent: int) -> int:
    """The permission bits of a new markers' directory under a parent of mode ``parent``.

    As open as its parent (whoever may write in the artifact directory may start an
    attempt there), its set-group-id bit kept, and sticky wherever someone else than its
    owner may write in it: each marker has one writer, and in a sticky directory only a
    file's owner may remove or rename it (the parent's sticky bit is always kept).
    """
    mode = parent & 0o3777
    if mode & 0o022:
        mode |= stat.S_ISVTX
    return mode


def _open_directory(directory: str, make: bool) -> int:
    """A descriptor of ``directory``'s markers' directory, made (durably) when ``make``.

    Raises ``OSError``: ``ELOOP``/``ENOTDIR`` where something else than a directory lies
    at that name (a link is never followed), ``EACCES`` where it cannot be made or opened.
    """
    path = attempts_path(directory)
    try:
        return os.open(path, DIRECTORY_FLAGS)
    except FileNotFoundError:
        if not make:
            raise
    return _make_directory(directory)


def _make_directory(directory: str) -> int:
    """A descriptor of ``directory``'s markers' directory, made now (durably, with its
    parent's permission bits) or by another writer meanwhile."""
    os.makedirs(directory or ".", exist_ok=True)
    # The artifact directory as the user named it (it may be a link of theirs).
    pfd = os.open(directory or ".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | CLOEXEC)
    try:
        try:
            os.mkdir(ATTEMPTS_DIR, 0o700, dir_fd=pfd)
        except FileExistsError:
            return os.open(ATTEMPTS_DIR, DIRECTORY_FLAGS, dir_fd=pfd)  # made meanwhile
        dfd = os.open(ATTEMPTS_DIR, DIRECTORY_FLAGS, dir_fd=pfd)
        try:
            # Set on the descriptor of the directory just made: its bits follow its
            # parent's, whatever the umask (made 0700 until then).
            os.fchmod(dfd, _shared_mode(os.fstat(pfd).st_mode))
            fsync_directory(directory, pfd)  # the new directory's entry is durable too
        except BaseException:
            os.close(dfd)
            raise
        return dfd
    finally:
        os.close(pfd)


def create(directory: str, attempt_id: str, content: bytes) -> None:
    """Write a new marker, durably; ``OSError`` when it cannot be written.

    Made new (``O_EXCL``): nothing at that name is ever written through. An interrupt or
    error after the file was created removes it again, so that a marker exists only
    where its block was about to run.
    """
    name = attempt_id + MARKER_SUFFIX
    dfd = _open_directory(directory, make=True)
    try:
        fd = os.open(name, CREATE_NEW, 0o600, dir_fd=dfd)
        try:
            try:
                os.fchmod(fd, MARKER_MODE)  # whatever the umask: only its writer may write
                write_all(fd, content)
            finally:
                os.close(fd)
            os.fsync(dfd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=dfd)
            raise
    finally:
        os.close(dfd)


def replace(directory: str, attempt_id: str, content: bytes) -> None:
    """Replace this writer's marker by ``content`` atomically and durably (``OSError``)."""
    dfd = _open_directory(directory, make=False)
    try:
        write_file(attempt_id + MARKER_SUFFIX, content, MARKER_MODE, dir_fd=dfd,
                   temp_name=lambda _base: f".{attempt_id}.tmp-{os.urandom(8).hex()}")
    finally:
        os.close(dfd)


def remove(directory: str, attempt_ids: Iterable[str]) -> None:
    """Remove this writer's markers (``OSError``; one already gone is no error)."""
    dfd = _open_directory(directory, make=False)
    try:
        for attempt_id in attempt_ids:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(attempt_id + MARKER_SUFFIX, dir_fd=dfd)
    finally:
        os.close(dfd)


def attempt_ids(data: dict[str, Any], stages: Iterable[str] | None = None) -> set[str]:
    """Every ``attempt_id`` the runs of a parsed ``timings.json`` hold (of the stages
    ``stages`` only, where given)."""
    values = data.values() if stages is None else (data.get(name) for name in stages)
    return {
        attempt_id
        for value in values
        for run in _runs(value)
        if type(run) is dict and type(attempt_id := run.get("attempt_id")) is str
    }


def _runs(value: object) -> list[Any]:
    """The ``runs`` list of a stage; none for any other value."""
    runs = value.get("runs") if type(value) is dict else None
    return runs if type(runs) is list else []


class DroppedRuns:
    """The attempt ids of the runs one save drops from ``timings.json`` (a run replaced,
    or reset), found from the file's runs, not by listing the markers' directory: a
    save's cost never grows with the markers past attempts left.

    A leftover marker (its writer was killed between its publish and the removal) names
    a run the file holds, and readers count it as that finished run; once a save drops
    that run, its marker would read as an attempt left unfinished, so the save that drops
    it removes it (``remove_owned``). ``stages``: the stages the save may drop runs of
    (None: any, as a resume that keeps a prefix does).
    """

    __slots__ = ("before", "stages")

    def __init__(self, data: dict[str, Any], stages: Iterable[str] | None) -> None:
        self.stages = None if stages is None else list(stages)
        self.before = attempt_ids(data, self.stages) if self.stages != [] else set()

    def ids(self, data: dict[str, Any], skip: set[str]) -> set[str]:
        """The ids held before and not now, but those in ``skip``."""
        if not self.before:
            return set()
        return self.before - attempt_ids(data, self.stages) - skip


def remove_owned(directory: str, ids: Iterable[str]) -> None:
    """Remove the markers ``ids`` that are regular files owned by this user; leave the
    others (another user's, a link, a FIFO) alone. Never raises ``OSError``."""
    try:
        dfd = os.open(attempts_path(directory), DIRECTORY_FLAGS)
    except OSError:
        return
    uid = os.geteuid()
    try:
        for attempt_id in ids:
            name = attempt_id + MARKER_SUFFIX
            try:
                st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
                if stat.S_ISREG(st.st_mode) and st.st_uid == uid:
                    os.unlink(name, dir_fd=dfd)
            except OSError:
                continue  # gone meanwhile (another client's save removed it), or not ours
    finally:
        os.close(dfd)
