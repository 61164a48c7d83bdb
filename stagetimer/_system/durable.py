"""Writing a file whole, durably, and never through anything planted: the one way the
project writes a file.

Every file stagetimer writes (a sidecar, a rescue file, a marker replaced, an HTML page,
a picture, an export) goes through :func:`write_file`:

1. a temporary file is created new in the destination's directory (``O_CREAT | O_EXCL |
   O_NOFOLLOW``, open(2)) under a name of its own, with a random part another user
   cannot guess: a link or file planted at any predictable name is never opened, and a
   name that happens to be taken is passed over for another;
2. its permission bits are set on the descriptor (``fchmod``), so the umask or the
   directory's group never decides them where the caller does;
3. the content is written whole and ``fsync``-ed;
4. it is ``rename``-d onto the destination (a link at the destination is replaced, never
   followed), and the directory is ``fsync``-ed.

A reader of the destination sees the old file or the new one, never half of one. With
``dir_fd`` every step goes through a descriptor of the directory (opened
``O_DIRECTORY | O_NOFOLLOW`` by the caller), so a directory swapped for a link meanwhile
is not followed either.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable

from stagetimer._system.openflags import CLOEXEC, CREATE_NEW, READ

__all__ = ["fsync_directory", "random_temp_name", "read_regular", "write_all", "write_file"]

#: Names tried before giving up (each taken one was planted or another writer's).
_TRIES = 100


def random_temp_name(base: str) -> str:
    """``.<base>.tmp-<16 random hex digits>``: a temporary name no one can guess."""
    return f".{base}.tmp-{os.urandom(8).hex()}"


def write_all(fd: int, content: bytes) -> None:
    """Write ``content`` whole to ``fd`` (``os.write`` may write less than it is given)
    and ``fsync`` it."""
    view = memoryview(content)
    while view:
        view = view[os.write(fd, view) :]
    os.fsync(fd)


def fsync_directory(directory: str, dir_fd: int | None = None) -> None:
    """Make a directory's entries durable (its ``fsync``); ``dir_fd`` when already open."""
    if dir_fd is not None:
        os.fsync(dir_fd)
        return
    fd = os.open(directory or ".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _create(
    directory: str, base: str, temp_name: Callable[[str], str], dir_fd: int | None, perm: int
) -> tuple[int, str]:
    """A new temporary file of ours beside ``base``: its descriptor and its name (relative
    to ``dir_fd`` where given, else a path)."""
    for _ in range(_TRIES):
        name = temp_name(base)
        where = name if dir_fd is not None else os.path.join(directory, name)
        try:
            return os.open(where, CREATE_NEW, perm, dir_fd=dir_fd), where
        except FileExistsError:
            continue  # something is planted at that name: take another
    raise FileExistsError(errno.EEXIST, "no free temporary file name", base)


def write_file(
    path: str,
    content: bytes,
    mode: int | None = None,
    *,
    dir_fd: int | None = None,
    temp_name: Callable[[str], str] = random_temp_name,
    created: Callable[[str, int], None] | None = None,
    fence: Callable[[], None] | None = None,
    published: Callable[[], None] | None = None,
    new_mode: int = 0o666,
) -> None:
    """Replace (or create) ``path`` by ``content``, atomically and durably.

    ``mode``: the file's permission bits, set on the descriptor whatever the umask; None
    gives ``new_mode`` less the umask (``0644`` for a file no one else may write).
    ``dir_fd``: ``path`` is a name in that directory.
    ``temp_name(base)`` makes a candidate temporary name (random by default; sidecars use
    one that records their writer, for ``leftovers``). ``created(temp, inode)`` is told
    the temporary file as soon as it exists; ``fence``, called right before the rename,
    raises when the caller may no longer publish; ``published`` is called right after it.
    On any error the temporary file is removed and ``path`` is left as it was.
    """
    directory, base = os.path.split(path)
    if dir_fd is not None and directory:
        raise ValueError(f"with dir_fd, path must be a name, not {path!r}")
    fd, temp = _create(directory, base, temp_name, dir_fd, new_mode if mode is None else 0o600)
    done = False
    try:
        _fill(fd, temp, content, mode, created)
        if fence is not None:
            fence()
        os.rename(temp, path, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        done = True
        if published is not None:
            published()
    except BaseException:
        if not done:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=dir_fd)
        raise
    fsync_directory(directory, dir_fd)


def _fill(
    fd: int,
    temp: str,
    content: bytes,
    mode: int | None,
    created: Callable[[str, int], None] | None,
) -> None:
    """Give the new temporary file ``fd`` (named ``temp``) its bits and its content,
    durably, and close it; ``created`` is told it first."""
    try:
        if created is not None:
            created(temp, os.fstat(fd).st_ino)
        if mode is not None:
            os.fchmod(fd, mode)
        write_all(fd, content)
    finally:
        os.close(fd)


def read_regular(path: str) -> tuple[bytes, int] | None:
    """The bytes and permission bits of the regular file ``path`` (a file about to be
    rewritten whole), None when there is none. ``OSError`` where something else lies
    there: ``ELOOP`` for a link (never read through: what it points at would be written
    back into the file), ``EINVAL`` for a FIFO, a directory or a device."""
    try:
        fd = os.open(path, READ)
    except FileNotFoundError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        chunks: list[bytes] = []
        while chunk := os.read(fd, max(st.st_size, 65536)):
            chunks.append(chunk)
        return b"".join(chunks), stat.S_IMODE(st.st_mode)
    finally:
        os.close(fd)
