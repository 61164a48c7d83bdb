"""Who wrote a rescue file, and whether that process still lives.

A rescue file records its writer: the host, the boot (``/proc/sys/kernel/random/boot_id``,
a random UUID the kernel draws at each boot, see random(4)), the pid and the process's
start time (field 22 of ``/proc/<pid>/stat``, ``starttime``, in clock ticks after boot,
see proc(5)). A pid alone is not a process: pids are reused, and a pid from before a
reboot names nothing. The writer lives when, on this host and this boot, its pid exists
with the same start time. ``recover`` leaves a live writer's file alone: that writer
still owns the records in it and saves or rewrites them itself.
"""

from __future__ import annotations

import os
import socket
from typing import Any

from stagetimer.hardware._text import json_text

__all__ = ["Liveness", "liveness", "this_process"]

_BOOT_ID = "/proc/sys/kernel/random/boot_id"
_cache: tuple[int, dict[str, Any]] | None = None


def _read(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return f.read(4096).decode("ascii", "replace").strip() or None
    except OSError:
        return None


def _stat(pid: int) -> tuple[str, int] | None:
    """Fields 3 (state) and 22 (``starttime``) of ``/proc/<pid>/stat`` (proc(5)). The
    command name, field 2, may hold spaces and parentheses, so the fields are counted
    after its last ``)``."""
    text = _read(f"/proc/{pid}/stat")
    if text is None or ")" not in text:
        return None
    fields = text[text.rindex(")") + 1 :].split()
    # fields[0] is field 3: field 22 is fields[19].
    try:
        return fields[0], int(fields[19])
    except (IndexError, ValueError):
        return None


def _start_time(pid: int) -> int | None:
    stat = _stat(pid)
    return None if stat is None else stat[1]


def _host() -> str:
    return json_text(socket.gethostname())


def this_process() -> dict[str, Any]:
    """The ``owner`` record of this process (computed once per pid, a fork its own)."""
    global _cache
    pid = os.getpid()
    if _cache is None or _cache[0] != pid:
        _cache = (
            pid,
            {
                "host": _host(),
                "boot_id": _read(_BOOT_ID),
                "pid": pid,
                "start_time": _start_time(pid),
                "uid": os.geteuid() if hasattr(os, "geteuid") else None,
            },
        )
    return _cache[1]


#: ``"live"``: the writer runs; ``"dead"``: it does not (or no longer on this boot);
#: ``"elsewhere"``: written on another host, whose processes this one cannot see.
Liveness = str


def liveness(owner: object) -> Liveness:
    """Whether the writer an ``owner`` record names still runs (see the module docstring).

    A record that does not say enough (no boot id or start time where this host has
    them) is taken as live when its pid runs: leaving a file alone is safe, folding a
    live writer's file is not.
    """
    if not isinstance(owner, dict):
        return "dead"
    me = this_process()
    if owner.get("host") != me["host"]:
        return "elsewhere"
    boot = owner.get("boot_id")
    if boot is not None and me["boot_id"] is not None and boot != me["boot_id"]:
        return "dead"  # written before a reboot: every process of that boot is gone
    pid = owner.get("pid")
    if type(pid) is not int or pid <= 0:
        return "dead"
    if pid == me["pid"]:
        return "live" if owner.get("start_time") in (None, me["start_time"]) else "dead"
    return _pid_liveness(pid, owner.get("start_time"))


def _pid_liveness(pid: int, started: object) -> Liveness:
    """Whether process ``pid`` of this host and boot is the one that started at ``started``."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return "dead"
    except OSError:
        pass  # EPERM: it exists, another user's
    stat = _stat(pid)
    if stat is None:
        # No /proc here (or the process left meanwhile): the pid is all there is.
        return "live" if os.path.exists(f"/proc/{pid}") or not os.path.isdir("/proc") else "dead"
    state, now = stat
    if state in ("Z", "X"):
        return "dead"  # exited; only its exit status waits for its parent
    if started is not None and started != now:
        return "dead"  # the pid was reused by another process
    return "live"
