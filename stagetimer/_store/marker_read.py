"""Reading started markers safely: whatever lies in ``timings.attempts/``, a reader gets
the markers it can trust as files and one line for each entry it cannot.

Nothing is followed through a link: the markers' directory is opened ``O_DIRECTORY |
O_NOFOLLOW`` and each marker ``O_NOFOLLOW`` through that descriptor, so a link planted in
place of either is named, never read through. Each marker is opened ``O_NONBLOCK`` (a
FIFO opens at once and is refused as not a regular file), read up to
``MARKER_MAX_BYTES`` (one larger is refused by its size, never read whole), and parsed
with the sidecars' structural checks (UTF-8, nesting, a key twice). A marker whose
content is not a marker (its id not its name, no stage, no start) is named too.

A marker is trusted no further than its file allows (``distrust``): one that others than
its owner may write, or whose content names another writer than its owner, is read but
marked untrusted, and decides nothing.

Temporary files of a writer replacing its marker (``.<id>.tmp-…``) and names that are
not ``<32 hex digits>.json`` are not markers and are passed over in silence.

A marker read is not yet a marker believed: values no writer could have written (a
negative, infinite or astronomically large ``seconds``, a start or an end outside the
years a clock of a running machine gives, a heartbeat of 1e-300 s) are named in its
``odd`` lines (``odd_values``), and every reader leaves such an attempt out of its sums
and estimates, as the report leaves out a run's impossible ``seconds``.
"""

from __future__ import annotations

import datetime
import errno
import math
import os
import stat
import time
from collections.abc import Callable
from typing import Any, TypeGuard

import attrs

from stagetimer._errors import SidecarCorruptError
from stagetimer._errors import short_repr as _short
from stagetimer._format import (
    ATTEMPT_OUTCOMES,
    HEARTBEAT_SECONDS,
    MARKER_MAX_BYTES,
    MARKER_SUFFIX,
    MarkerContent,
    stored_fields,
)
from stagetimer._store.markers import DIRECTORY_FLAGS, attempts_path, is_attempt_id
from stagetimer._store.parse import parse_json
from stagetimer._system.openflags import READ

__all__ = [
    "BadMarker", "Marker", "Writer", "distrust", "heartbeat_of", "odd_values", "parse_utc",
    "read_markers", "writer_of",
]

#: Nesting a marker may have: the marker, its ``job`` and ``writer`` objects.
_MARKER_DEPTH = 4
_NAME_LENGTH = 32 + len(MARKER_SUFFIX)


@attrs.frozen
class Marker:
    """One marker as read: its content (checked) and what its file says of it."""

    path: str
    data: dict[str, Any] = attrs.field(repr=False)
    attempt_id: str
    started_at: datetime.datetime
    #: the file's last change: its writer's last heartbeat where it beats (UTC, aware)
    mtime: datetime.datetime
    #: the file's owner, which proves who wrote it (the content only claims it)
    uid: int
    #: one line per value no writer could have written (``odd_values``): an attempt
    #: with any is counted, never summed
    odd: tuple[str, ...] = ()
    #: why its content is not trusted (another user than its writer may have written
    #: it), or None: an untrusted marker decides nothing, not even its own outcome
    distrust: str | None = None


@attrs.frozen
class BadMarker:
    """An entry of the markers' directory that could not be read as a marker."""

    path: str
    message: str


def parse_utc(text: object) -> datetime.datetime | None:
    """``2026-11-29T22:28:02.123Z`` (as runs and markers store times) as an aware UTC
    datetime; None for anything else."""
    if not isinstance(text, str) or not text.endswith("Z") or len(text) > 40:
        return None
    try:
        value = datetime.datetime.fromisoformat(text[:-1])
    except ValueError:
        return None
    if value.tzinfo is not None:
        return None
    return value.replace(tzinfo=datetime.timezone.utc)


def _utc(timestamp: float) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(timestamp, tz=datetime.timezone.utc)


def _open_markers(where: str) -> int | BadMarker | None:
    """A descriptor of the markers' directory ``where``; None where there is none, or a
    ``BadMarker`` saying why it cannot be read."""
    try:
        return os.open(where, DIRECTORY_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            why = "is not a directory (a link or a file): no marker is read through it"
        else:
            why = f"cannot be opened ({exc.strerror or exc})"
        return BadMarker(where, why)


def _entry(dfd: int, where: str, name: str) -> Marker | BadMarker | None:
    """Directory entry ``name`` read as a marker, a ``BadMarker`` saying why it is none,
    or None for a name that is not ours (a writer's temporary file)."""
    if not name.endswith(MARKER_SUFFIX) or name.startswith("."):
        return None
    path = os.path.join(where, name)
    if len(name) != _NAME_LENGTH or not is_attempt_id(name[:32]):
        return BadMarker(path, "is not named <32 hex digits>.json: not a marker")
    try:
        return _read_one(dfd, name, path)
    except _Refused as exc:
        return BadMarker(path, str(exc))


def read_markers(directory: str) -> tuple[list[Marker], list[BadMarker]]:
    """The markers of artifact directory ``directory`` (none where it has no markers'
    directory), in name order, and one ``BadMarker`` per entry that is not one.

    Never raises ``OSError`` and never blocks: what cannot be opened or read is named.
    """
    where = attempts_path(directory)
    dfd = _open_markers(where)
    if not isinstance(dfd, int):
        return [], [] if dfd is None else [dfd]
    try:
        entries = _entries(dfd, where)
    finally:
        os.close(dfd)
    found = [entry for entry in entries if isinstance(entry, Marker)]
    return found, [entry for entry in entries if isinstance(entry, BadMarker)]


def _entries(dfd: int, where: str) -> list[Marker | BadMarker]:
    """The entries of the open markers' directory ``where`` read as markers, in name
    order; one ``BadMarker`` where it cannot be listed."""
    try:
        names = sorted(os.listdir(dfd))
    except OSError as exc:
        return [BadMarker(where, f"cannot be listed ({exc.strerror or exc})")]
    return [entry for name in names if (entry := _entry(dfd, where, name)) is not None]


class _Refused(Exception):
    """Why one entry is not read as a marker."""


#: What a file that is not a regular one is, by the test of its mode that says so.
_KINDS: tuple[tuple[Callable[[int], bool], str], ...] = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
)


def _kind(mode: int) -> str:
    return next((kind for test, kind in _KINDS if test(mode)), "not a regular file")


def _read_capped(fd: int) -> bytes:
    """The file's bytes up to one past ``MARKER_MAX_BYTES`` (a read may return less than
    asked: read until the end or the cap)."""
    chunks: list[bytes] = []
    total = 0
    while total <= MARKER_MAX_BYTES:
        chunk = os.read(fd, MARKER_MAX_BYTES + 1 - total)
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


#: Why a marker cannot be opened, by ``errno``.
_OPEN_REFUSALS = {
    errno.ELOOP: "is a symbolic link, not a marker (never read through)",
    errno.ENXIO: "is a socket, not a marker",
    errno.ENOENT: "was removed while it was read (its attempt just ended)",
}


def _open_marker(dfd: int, name: str) -> int:
    try:
        return os.open(name, READ, dir_fd=dfd)
    except OSError as exc:
        why = _OPEN_REFUSALS.get(exc.errno or 0, f"cannot be opened ({exc.strerror or exc})")
        raise _Refused(why) from None


def _read_regular(fd: int) -> tuple[os.stat_result, bytes]:
    """The status and the bytes of an open marker: a regular file of at most
    ``MARKER_MAX_BYTES`` (``_Refused`` else)."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise _Refused(f"is {_kind(st.st_mode)}, not a marker (a regular file)")
    if st.st_size > MARKER_MAX_BYTES:
        raise _Refused(
            f"is {st.st_size} bytes, larger than the {MARKER_MAX_BYTES}-byte limit of a marker"
        )
    try:
        raw = _read_capped(fd)
    except OSError as exc:
        raise _Refused(f"cannot be read ({exc.strerror or exc})") from None
    if len(raw) > MARKER_MAX_BYTES:
        raise _Refused(f"grew past the {MARKER_MAX_BYTES}-byte limit of a marker")
    return st, raw


def _read_one(dfd: int, name: str, path: str) -> Marker:
    fd = _open_marker(dfd, name)
    try:
        st, raw = _read_regular(fd)
    finally:
        os.close(fd)
    try:
        data = parse_json(path, raw, _MARKER_DEPTH)
    except SidecarCorruptError as exc:
        raise _Refused(exc.problem) from None
    started = _check(name, data)
    return Marker(path, data, name[:32], started, _utc(st.st_mtime), st.st_uid,
                  odd_values(data, started, time.time()),
                  distrust(st.st_mode, st.st_uid, data))


#: The earliest start a writer's clock gives (a clock never set reads 1970; year 1 is no
#: clock's), and how far past the time of reading a clock may run ahead of ours.
_EARLIEST = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_AHEAD = datetime.timedelta(days=1)
#: Heartbeats a writer may be asked for (a writer refuses any other).
_BEATS = HEARTBEAT_SECONDS


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def heartbeat_of(marker: Marker) -> float | None:
    """The seconds between the beats of ``marker``'s writer, where it beats at an interval
    a writer can keep (else None: its mtime says nothing then)."""
    value = marker.data.get("heartbeat")
    if not _is_number(value):
        return None
    return float(value) if _BEATS[0] <= value <= _BEATS[1] else None


#: A writer: (host, boot id, pid namespace, pid, process start time).
Writer = tuple[str, str, Any, int, int]


def writer_of(data: dict[str, Any]) -> Writer | None:
    """The process that wrote marker content ``data``, where its ``writer`` names one
    fully (a host, boot id, pid and start time: a pid alone is no process, pids are
    reused); None else."""
    writer = data.get("writer")
    if type(writer) is not dict:
        return None
    if any(type(writer.get(key)) is not kind for key, kind in _WRITER_TYPES):
        return None
    pidns = writer.get("pidns")
    return (writer["host"], writer["boot_id"], pidns if type(pidns) is int else None,
            writer["pid"], writer["start_time"])


#: The fields of a marker's ``writer`` that name its process, with their types.
_WRITER_TYPES = (("host", str), ("boot_id", str), ("pid", int), ("start_time", int))


def _shown(value: object) -> str:
    if type(value) is int and abs(value) >= 10**20:
        return f"an integer of {len(str(abs(value)))} digits"
    return _short(value)


def _moment_odd(key: str, moment: datetime.datetime, latest: datetime.datetime) -> str | None:
    if moment < _EARLIEST or moment > latest:
        return (f"{key} {moment.year:04d}-{moment:%m-%d %H:%M:%S} UTC is no time a writer's "
                "clock gives")
    return None


def _ended_odd(
    ended: datetime.datetime | None, started: datetime.datetime, latest: datetime.datetime
) -> str | None:
    if ended is None:
        return None
    line = _moment_odd("ended_at", ended, latest)
    if line is None and ended < started:
        return "ended_at is before started_at"
    return line


def _seconds_odd(seconds: object, span: float) -> str | None:
    """A ``seconds`` that is negative, not finite or longer than ``span``."""
    if not _is_number(seconds):
        return None
    try:
        value = float(seconds)
    except OverflowError:
        value = math.inf
    if math.isfinite(value) and 0 <= value <= max(span, 0.0):
        return None
    return f"seconds {_shown(seconds)} is no duration this block could have taken"


def _beat_odd(beat: object) -> str | None:
    if not _is_number(beat) or _BEATS[0] <= beat <= _BEATS[1]:
        return None
    return f"heartbeat {_shown(beat)} s is no interval a writer beats at"


def odd_values(
    data: dict[str, Any], started: datetime.datetime, now: float
) -> tuple[str, ...]:
    """One line per value of marker ``data`` (started at ``started``) no writer could have
    written, as of ``now`` (seconds since the epoch, the reader's clock): ``seconds``
    negative, not finite, or longer than the time since the start; ``started_at`` or
    ``ended_at`` before 1970 or more than a day past ``now``, an end before the start; a
    ``heartbeat`` under a millisecond or over 1e9 s. Never raises."""
    latest = datetime.datetime.fromtimestamp(now, datetime.timezone.utc) + _AHEAD
    ended = parse_utc(data.get("ended_at"))
    times = [line for line in (_moment_odd("started_at", started, latest),
                               _ended_odd(ended, started, latest)) if line]
    # A duration is measured against the start only where the times are believable.
    span = (latest - started).total_seconds() if not times else math.inf
    others = (_seconds_odd(data.get("seconds"), span), _beat_odd(data.get("heartbeat")))
    return (*times, *(line for line in others if line))


def distrust(mode: int, uid: int, data: dict[str, Any]) -> str | None:
    """Why a marker's content (a file of permission bits ``mode`` owned by ``uid``) is
    not to be trusted, or None.

    A marker is written by its writer alone (``0644``): one that others may write
    (group- or world-writable, as markers were once made) may have been rewritten in
    place by any of them, and one owned by another user than the writer its content
    names was written by that user. Its owner is the only writer the file proves.
    """
    return _writable_by_others(mode) or _names_other_writer(uid, data)


def _writable_by_others(mode: int) -> str | None:
    if not mode & 0o022:
        return None
    who = "everyone" if mode & 0o002 else "its group"
    return (f"is writable by {who} (mode {stat.S_IMODE(mode):04o}), so anyone of them "
            "may have rewritten it: nothing it says is trusted")


def _names_other_writer(uid: int, data: dict[str, Any]) -> str | None:
    writer = data.get("writer")
    claimed = writer.get("uid") if type(writer) is dict else None
    if type(claimed) is int and claimed != uid:
        return (f"names a writer of uid {claimed} but belongs to uid {uid}: nothing it "
                "says is trusted")
    return None


def _check(name: str, data: Any) -> datetime.datetime:
    """The marker's start, or ``_Refused`` saying why ``data`` is no marker."""
    if type(data) is not dict:
        raise _Refused("holds no JSON object: not a marker")
    if data.get("attempt_id") != name[:32]:
        raise _Refused(
            f"holds attempt_id {_short(data.get('attempt_id'))}, not the one its name gives"
        )
    if type(data.get("stage")) is not str or not data["stage"]:
        raise _Refused(f"holds stage {_short(data.get('stage'))}, expected a stage name")
    started = _started(data)
    _check_outcome(data.get("outcome"))
    _check_types(data)
    return started


def _started(data: dict[str, Any]) -> datetime.datetime:
    """The marker's ``started_at``; ``_Refused`` when it is no UTC time."""
    started = parse_utc(data.get("started_at"))
    if started is None:
        raise _Refused(
            f"holds started_at {_short(data.get('started_at'))}, expected a UTC time "
            "such as 2026-11-29T22:28:02.123Z"
        )
    return started


def _check_outcome(outcome: object) -> None:
    if outcome is not None and outcome not in ATTEMPT_OUTCOMES:
        raise _Refused(
            f"holds outcome {_short(outcome)}, expected one of {', '.join(ATTEMPT_OUTCOMES)}"
        )


#: ``(key, allowed types)`` of each key of a marker (``MarkerContent``) whose value, where
#: not null, must have its type: a marker that holds another is refused.
_MARKER_TYPES = tuple(
    (key, spec.kinds) for key, spec in stored_fields(MarkerContent) if spec.strict
)


def _check_types(data: dict[str, Any]) -> None:
    for key, kinds in _MARKER_TYPES:
        value = data.get(key)
        if value is not None and type(value) not in kinds:
            raise _Refused(f"holds {key} {_short(value)} of the wrong type")
