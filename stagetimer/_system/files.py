"""Tiny helpers that read ``/proc`` and ``/sys`` files under a root without raising.

Every read is bounded: a file is opened without blocking (a FIFO planted where a file
is read would wait for a writer for good, ``fifo(7)``), read only when it is a regular
file (``/proc``, ``/sys`` and cgroup files are; a link to ``/dev/zero`` never ends) and
at most ``MAX_BYTES`` of it.

Paths are written as the system sees them (``/proc/self/cgroup``) and joined to
``root`` only when read, so a fixture tree in ``tmp_path`` and the live system
are read the same way, and the ``sources`` of a description name the path a
person would look at on the machine, not the fixture's temporary directory.
"""

from __future__ import annotations

import os
import stat

__all__ = [
    "MAX_BYTES",
    "find_field",
    "host_path",
    "kernel_lines",
    "parse_cpu_list",
    "read_int",
    "read_int_or_reason",
    "read_ints_or_reason",
    "read_or_reason",
    "read_regular",
    "read_text",
]

#: the most bytes read of one file: 16 MiB, past the largest real ones (the mount table
#: of a node with thousands of mounts, the RECORD of the largest wheels, a few MiB)
MAX_BYTES = 16 << 20
_CHUNK = 1 << 16
_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def host_path(root: str, path: str) -> str:
    """Where the system path ``path`` (absolute, POSIX) lies under ``root``."""
    return os.path.join(root, path.lstrip("/"))


def read_regular(
    path: str, limit: int = MAX_BYTES, stop: bytes | None = None
) -> tuple[bytes | None, str]:
    """The bytes of the regular file ``path`` and ``""``, or None and a short reason.

    Opened without blocking; anything but a regular file (a FIFO, a device, a socket,
    a directory) is refused, and so is a file longer than ``limit`` bytes. ``stop``:
    read no further than the first chunk holding it (the headers of a ``METADATA``).
    """
    try:
        fd = os.open(path, _FLAGS)
    except (FileNotFoundError, NotADirectoryError, ValueError):
        # ValueError: a NUL in the path, which names no file either.
        return None, "does not exist"
    except OSError as err:
        return None, _unreadable(err)
    try:
        return _read_open(fd, limit, stop)
    except OSError as err:
        return None, _unreadable(err)
    finally:
        os.close(fd)


def _unreadable(err: OSError) -> str:
    return f"is unreadable ({err.strerror or type(err).__name__})"


def _read_open(fd: int, limit: int, stop: bytes | None) -> tuple[bytes | None, str]:
    """``read_regular`` of the file open as ``fd``; raises ``OSError``."""
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        return None, f"is unreadable ({_kind(mode)}, not a regular file)"
    data = _read_up_to(fd, limit, stop)
    if data is None:
        return None, f"is unreadable (larger than {limit} bytes)"
    return data, ""


def _read_up_to(fd: int, limit: int, stop: bytes | None) -> bytes | None:
    """The rest of ``fd``, or up to the first chunk holding ``stop``; None past ``limit``."""
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        chunk = os.read(fd, _CHUNK)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if stop is not None and stop in chunk:
            return b"".join(chunks)
    return None


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a directory"),
    ):
        if test(mode):
            return name
    return "not a file"


def read_or_reason(root: str, path: str) -> tuple[str | None, str]:
    """The text of ``path`` under ``root`` and ``""``, or None and a short reason from the error.

    The reason is ``<path> does not exist`` or ``<path> is unreadable (<why>)``: the
    error's ``strerror``, ``a FIFO, not a regular file`` or ``larger than <n> bytes``.
    """
    data, reason = read_regular(host_path(root, path))
    if data is None:
        return None, f"{path} {reason}"
    # The text as the kernel wrote it: no newline translation (universal newlines would
    # turn a carriage return in a mount point, which mountinfo does not escape, into a
    # line break).
    return data.decode("utf-8", "replace"), ""


def read_text(root: str, path: str) -> str | None:
    """The text of ``path`` under ``root``, or None when it cannot be read for any reason."""
    return read_or_reason(root, path)[0]


def read_int_or_reason(root: str, path: str) -> tuple[int | None, str]:
    """The integer held by ``path`` (a sysfs value like ``3200000``) and ``""``, or None and why."""
    text, reason = read_or_reason(root, path)
    if text is None:
        return None, reason
    try:
        return int(text.strip()), ""
    except ValueError:
        return None, f"{path} does not hold the expected value"


def read_ints_or_reason(root: str, *paths: str) -> tuple[int, ...] | str:
    """The integers held by ``paths``, in their order, or why the first that fails does
    not hold one (the files after it are not read)."""
    values: list[int] = []
    for path in paths:
        value, reason = read_int_or_reason(root, path)
        if value is None:
            return reason
        values.append(value)
    return tuple(values)


def read_int(root: str, path: str) -> int | None:
    """The integer held by ``path`` (a sysfs value like ``3200000``), or None."""
    return read_int_or_reason(root, path)[0]


def find_field(text: str, key: str, sep: str) -> str | None:
    """The value, stripped, of the first ``key<sep>value`` line of ``text``; None if none.

    ``/proc/self/status`` and ``/proc/meminfo`` separate with ``:``, ``memory.stat`` with a space.
    Lines end at ``\n`` only (see ``kernel_lines``).
    """
    for line in kernel_lines(text):
        name, _, value = line.partition(sep)
        if name == key:
            return value.strip()
    return None


def kernel_lines(text: str) -> list[str]:
    """The lines of a kernel file: split at ``\n`` alone.

    ``str.splitlines`` also splits at ``\r``, ``\x0b``, ``\x0c``, ``\x1c``-``\x1e``,
    ``\x85``, U+2028 and U+2029, which the kernel writes unescaped inside a line (a mount
    point, a cgroup name, a process name): such a line would be cut in two. A last line
    without its ``\n`` counts; the empty string after a final ``\n`` is dropped, as
    ``splitlines`` drops it.
    """
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def parse_cpu_list(text: str) -> tuple[int, ...] | None:
    """Parse a kernel CPU list (``0-3,8,10-11``) into sorted CPU numbers; None if malformed.

    The format is the kernel's ``cpulist`` (``Documentation/admin-guide/cputopology.rst``),
    used by ``Cpus_allowed_list`` and ``topology/*_list``.
    """
    cpus: set[int] = set()
    text = text.strip()
    if not text:
        return ()
    # The kernel's bitmap_parselist reads ASCII digits, no sign: int() also takes "+1",
    # "1_0" and other scripts' digits. Two scans in C leave int() only ASCII digits and
    # blanks ("-" is the range's, split off below; a second one leaves a negative end).
    if not text.isascii() or "+" in text or "_" in text:
        return None
    for part in text.split(","):
        numbers = _cpu_range(part.strip())
        if numbers is None:
            return None
        cpus.update(numbers)
    return tuple(sorted(cpus))


def _cpu_range(part: str) -> range | None:
    """The CPUs of one part of a CPU list (``8`` or ``10-11``); None if malformed."""
    lo, sep, hi = part.partition("-")
    try:
        first = int(lo)
        last = int(hi) if sep else first
    except ValueError:
        return None
    return range(first, last + 1) if first <= last else None

