"""Which process wrote a file, and whether it still runs: the one definition.

Rescue files (their ``owner``), claims (their holder) and temporary files (their name)
record the process that wrote them, so that a later reader can tell a live writer's file
from one a killed writer left. A pid alone is not a process: pids are reused, and a pid
from before a reboot names nothing. So a writer records, besides its pid:

- its host (``gethostname``) and its boot: ``/proc/sys/kernel/random/boot_id``, a random
  UUID the kernel draws at each boot (random(4));
- its pid namespace: the inode of ``/proc/self/ns/pid`` (namespaces(7)); a pid means
  something only in its own namespace (another container's pid 7 is not ours);
- its start time: field 22 of ``/proc/<pid>/stat``, ``starttime``, in clock ticks after
  boot (proc(5)), which tells a reused pid from the process that had it.

:func:`liveness` judges such a record: ``"elsewhere"`` when it names another machine
(whose processes this one cannot see), ``"hidden"`` when its pid runs as another user
whose ``/proc/<pid>`` is hidden (``hidepid``), else ``"live"`` or ``"dead"``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Literal, TypeGuard

import attrs

from stagetimer._system.files import read_text
from stagetimer._system.text import json_text

__all__ = [
    "UNRECORDED",
    "Identity",
    "Liveness",
    "alive",
    "boot_id",
    "identity",
    "is_pid",
    "liveness",
    "pid_namespace",
    "proc_stat",
    "record",
    "start_time",
    "user_name",
    "where",
]

_BOOT_ID = "/proc/sys/kernel/random/boot_id"

#: ``"live"``: the writer runs; ``"dead"``: it does not (or no longer on this boot);
#: ``"elsewhere"``: written on another machine, whose processes this one cannot see;
#: ``"hidden"``: its pid runs as another user whose ``/proc/<pid>`` this process may not
#: read (``/proc`` mounted ``hidepid=1`` or ``2``, proc(5)), so whether it is the writer
#: (its start time) is unknown: neither live nor dead is proven.
Liveness = Literal["live", "dead", "elsewhere", "hidden"]


class _Unrecorded:
    """The type of :data:`UNRECORDED` (a record that has no such field at all)."""

    def __repr__(self) -> str:
        return "UNRECORDED"


#: A field a kind of record does not hold (rescue files record no pid namespace).
UNRECORDED = _Unrecorded()


@attrs.frozen
class Identity:
    """Who a process is, as the files it writes record it (see the module docstring)."""

    host: str  # as gethostname() returns it
    boot_id: str | None
    pidns: int | None
    pid: int
    start_time: int | None
    uid: int | None


_cache: Identity | None = None


def identity() -> Identity:
    """This process's identity: read once per process (a forked child reads its own)."""
    global _cache
    pid = os.getpid()
    if _cache is None or _cache.pid != pid:
        _cache = Identity(
            host=os.uname().nodename,  # gethostname(2) is uname(2)'s nodename on Linux
            boot_id=boot_id(),
            pidns=pid_namespace(),
            pid=pid,
            start_time=start_time(pid),
            uid=os.geteuid() if hasattr(os, "geteuid") else None,
        )
    return _cache


_records: dict[Callable[[Identity], dict[str, Any]], tuple[Identity, dict[str, Any]]] = {}


def record(make: Callable[[Identity], dict[str, Any]]) -> dict[str, Any]:
    """This process's identity as ``make`` writes it into a file (rescue files and claims
    each keep their own keys), made once per identity: a save's hot path reads it."""
    made = _records.get(make)
    if made is None or made[0].pid != os.getpid():  # a forked child reads its own
        me = identity()
        made = _records[make] = (me, make(me))
    return made[1]


def user_name(uid: int) -> str:
    """A user in words: ``name (uid N)``, or ``uid N`` when the name is unknown."""
    import pwd

    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def _read(path: str) -> str | None:
    """The text of a small kernel file, stripped; None when it is missing or empty."""
    text = read_text("/", path)
    return None if text is None else text.strip() or None


def boot_id() -> str | None:
    """This boot's random UUID (random(4)), or None without ``/proc``."""
    return _read(_BOOT_ID)


def pid_namespace() -> int | None:
    """The inode of this process's pid namespace (namespaces(7)), or None without ``/proc``."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return None


def proc_stat(pid: int) -> tuple[str, int] | None:
    """Fields 3 (state) and 22 (``starttime``) of ``/proc/<pid>/stat`` (proc(5)).

    The command name, field 2, may hold spaces and parentheses, so the fields are counted
    after its last ``)``. None when there is no such process (or no ``/proc``).
    """
    text = _read(f"/proc/{pid}/stat")
    if text is None or ")" not in text:
        return None
    fields = text[text.rindex(")") + 1 :].split()
    # fields[0] is field 3: field 22 is fields[19].
    try:
        return fields[0], int(fields[19])
    except (IndexError, ValueError):
        return None


def start_time(pid: int) -> int | None:
    """Field 22 of ``/proc/<pid>/stat``: start time in clock ticks after boot (proc(5))."""
    stat = proc_stat(pid)
    return None if stat is None else stat[1]


def is_pid(value: Any) -> TypeGuard[int]:
    """Whether ``value`` is a pid a writer could have recorded (a positive integer)."""
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists: kill(2) with signal 0 sends nothing and fails with
    ESRCH when there is no such process, EPERM when it is another user's (alive)."""
    return _signal_zero(pid) != "gone"


def _signal_zero(pid: int) -> Literal["gone", "ours", "another user's"]:
    """kill(2) with signal 0: no such process, one we may signal, or another user's
    (``EPERM``: it exists, and its ``/proc/<pid>`` may be hidden from us)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return "gone"
    except OSError:
        return "another user's"  # EPERM
    return "ours"


def liveness(
    pid: object,
    started: object,
    *,
    host: object = UNRECORDED,
    boot: object = UNRECORDED,
    pidns: object = UNRECORDED,
) -> Liveness:
    """Whether the writer a record names (``pid`` started at ``started``) still runs.

    Give the fields the record holds (``host`` in its JSON text form); leave out those
    its kind of record never holds. The record names this machine when its host, its
    boot and its pid namespace are ours. Another boot under our host name may be a
    reboot, or another machine given the same name (nodes cloned from one image): it is
    ``"elsewhere"``, as is another pid namespace (a container), since no pid of ours can
    prove such a writer dead. A record that does not say enough (no start time, or no
    boot id where a host is recorded) is taken as live when its pid runs: leaving a file
    alone is safe, taking a live writer's file is not.
    """
    verdict = where(host=host, boot=boot, pidns=pidns)
    if verdict is not None:
        return verdict
    me = identity()
    if not is_pid(pid):
        return "dead"  # no writer wrote that: nothing alive holds it
    if pid == me.pid:
        return "live" if started in (None, me.start_time) else "dead"
    return _pid_liveness(pid, started)


def where(
    *, host: object = UNRECORDED, boot: object = UNRECORDED, pidns: object = UNRECORDED
) -> Liveness | None:
    """``"elsewhere"`` when a record's machine fields name another machine (see
    ``liveness``); None when they name this machine and boot, so its pid decides."""
    me = identity()
    if pidns is not UNRECORDED and pidns != me.pidns:
        return "elsewhere"  # another container's pids are not ours to look up
    return "elsewhere" if _another_boot(host, boot, me) else None


def _another_boot(host: object, boot: object, me: Identity) -> bool:
    """Whether a record's host and boot name another machine, or another boot of ours."""
    if host is UNRECORDED:
        # No host to go by: another boot may be another machine.
        return boot is not UNRECORDED and (me.boot_id is None or boot != me.boot_id)
    if host != json_text(me.host):
        return True
    # A reboot, or another machine of the same name; a boot either side lacks says nothing.
    return boot is not UNRECORDED and None not in (boot, me.boot_id) and boot != me.boot_id


def _pid_liveness(pid: int, started: object) -> Liveness:
    """Whether process ``pid`` of this machine is the one that started at ``started``."""
    signalled = _signal_zero(pid)
    if signalled == "gone":
        return "dead"
    stat = proc_stat(pid)
    if stat is None:
        return _unseen_liveness(pid, started, signalled)
    state, now = stat
    if state in ("Z", "X"):
        return "dead"  # exited; only its exit status waits for its parent
    if started is not None and started != now:
        return "dead"  # the pid was reused by another process
    return "live"


def _unseen_liveness(pid: int, started: object, signalled: str) -> Liveness:
    """Process ``pid``, which kill(2) found, when ``/proc/<pid>/stat`` shows nothing of it.

    ``/proc/<pid>`` missing or unreadable while kill(2) answers ``EPERM`` is another
    user's process hidden by ``hidepid``: it runs, but its start time is unknown, so a
    record that gives one is ``"hidden"`` (never ``"dead"``).
    """
    if _signal_zero(pid) == "gone":
        return "dead"  # it left meanwhile
    if signalled == "another user's" and os.path.isdir("/proc/self"):
        # /proc is there but shows us nothing of it: hidden (hidepid).
        return "live" if started is None else "hidden"
    # No /proc here: the pid is all there is.
    return "live" if os.path.exists(f"/proc/{pid}") or not os.path.isdir("/proc") else "dead"
