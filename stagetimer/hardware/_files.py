"""Tiny helpers that read ``/proc`` and ``/sys`` files under a root without raising.

Paths are written as the system sees them (``/proc/self/cgroup``) and joined to
``root`` only when read, so a fixture tree in ``tmp_path`` and the live system
are read the same way, and the ``sources`` of a description name the path a
person would look at on the machine, not the fixture's temporary directory.
"""

from __future__ import annotations

import os

__all__ = [
    "find_field",
    "host_path",
    "kernel_lines",
    "parse_cpu_list",
    "read_int",
    "read_int_or_reason",
    "read_or_reason",
    "read_text",
]


def host_path(root: str, path: str) -> str:
    """Where the system path ``path`` (absolute, POSIX) lies under ``root``."""
    return os.path.join(root, path.lstrip("/"))


def read_or_reason(root: str, path: str) -> tuple[str | None, str]:
    """The text of ``path`` under ``root`` and ``""``, or None and a short reason from the error.

    The reason is ``<path> does not exist`` or ``<path> is unreadable (<strerror>)``.
    """
    try:
        # newline="": the text as the kernel wrote it. Universal newlines would turn a
        # carriage return in a mount point (mountinfo escapes only space, tab, newline
        # and backslash) into a line break.
        with open(host_path(root, path), encoding="utf-8", errors="replace", newline="") as f:
            return f.read(), ""
    except (FileNotFoundError, NotADirectoryError, ValueError):
        # ValueError: a NUL in the path, which names no file either.
        return None, f"{path} does not exist"
    except OSError as err:
        return None, f"{path} is unreadable ({err.strerror or type(err).__name__})"


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
        part = part.strip()
        lo, sep, hi = part.partition("-")
        try:
            if sep:
                first, last = int(lo), int(hi)
                if last < first:
                    return None
                cpus.update(range(first, last + 1))
            else:
                cpus.add(int(lo))
        except ValueError:
            return None
    return tuple(sorted(cpus))

