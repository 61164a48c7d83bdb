"""Tiny helpers that read ``/proc`` and ``/sys`` files under a root without raising.

Paths are written as the system sees them (``/proc/self/cgroup``) and joined to
``root`` only when read, so a fixture tree in ``tmp_path`` and the live system
are read the same way, and the ``sources`` of a description name the path a
person would look at on the machine, not the fixture's temporary directory.
"""

from __future__ import annotations

import os

__all__ = [
    "host_path",
    "parse_cpu_list",
    "read_int",
    "read_text",
    "why_unreadable",
]


def host_path(root: str, path: str) -> str:
    """Where the system path ``path`` (absolute, POSIX) lies under ``root``."""
    return os.path.join(root, path.lstrip("/"))


def read_text(root: str, path: str) -> str | None:
    """The text of ``path`` under ``root``, or None when it cannot be read for any reason."""
    try:
        with open(host_path(root, path), encoding="utf-8", errors="replace") as f:
            return f.read()
    except (OSError, ValueError):
        return None


def read_int(root: str, path: str) -> int | None:
    """The integer held by ``path`` (a sysfs value like ``3200000``), or None."""
    text = read_text(root, path)
    if text is None:
        return None
    try:
        return int(text.strip())
    except ValueError:
        return None


def why_unreadable(root: str, path: str) -> str:
    """A short reason ``path`` could not be read: missing, or present but unreadable."""
    full = host_path(root, path)
    if not os.path.lexists(full):
        return f"{path} does not exist"
    try:
        with open(full, "rb"):
            pass
    except OSError as err:
        return f"{path} is unreadable ({err.strerror or type(err).__name__})"
    return f"{path} does not hold the expected value"


def parse_cpu_list(text: str) -> tuple[int, ...] | None:
    """Parse a kernel CPU list (``0-3,8,10-11``) into sorted CPU numbers; None if malformed.

    The format is the kernel's ``cpulist`` (``Documentation/admin-guide/cputopology.rst``),
    used by ``Cpus_allowed_list`` and ``topology/*_list``.
    """
    cpus: set[int] = set()
    text = text.strip()
    if not text:
        return ()
    for part in text.split(","):
        part = part.strip()
        lo, sep, hi = part.partition("-")
        try:
            if sep:
                first, last = int(lo), int(hi)
                if first < 0 or last < first:
                    return None
                cpus.update(range(first, last + 1))
            else:
                number = int(lo)
                if number < 0:
                    return None
                cpus.add(number)
        except ValueError:
            return None
    return tuple(sorted(cpus))
