"""Reading sidecar bytes and parsing them into the plain mappings the writers and loaders use.

Whatever a sidecar holds, these functions return its mapping or raise
``SidecarCorruptError`` naming the file and what is wrong: never a raw
``RecursionError``/``ValueError``, never a read that blocks or has no end.

Corrupt is structure that does not fit the format (see docs/format.md): not a
regular file, larger than ``MAX_BYTES``, not UTF-8, not JSON, nesting deeper than
``MAX_FILE_DEPTH``, an integer literal Python refuses to convert, a key twice in
one object, a lone surrogate escape, a stage (a top-level object with a ``runs``
key) whose ``runs`` is not a list, a run that is not an object, or a known field of
the wrong JSON type. A value of the right type that no writer could have written
(negative or non-finite ``seconds``, one beyond a float, a negative ``run_idx``, a
``total_seconds`` that is not the sum) parses: the report flags it, the writers
keep it verbatim.
"""

from __future__ import annotations

import errno
import itertools
import json
import os
import re
import stat
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from stagetimer._errors import SchemaVersionError, SidecarCorruptError
from stagetimer._errors import short_repr as _short
from stagetimer._format import MAX_BYTES, MAX_FILE_DEPTH, SCHEMA_VERSION
from stagetimer._store.shape import check_hardware_shape, check_timings_shape, json_type
from stagetimer._system.openflags import READ

__all__ = [
    "DuplicateKey",
    "decode_unique",
    "file_kind",
    "is_utf8",
    "open_sidecar",
    "parse_hardware",
    "parse_json",
    "parse_timings",
    "read_all",
    "read_bytes",
    "read_with_stat",
    "retry_replaced",
]

_T = TypeVar("_T")


def file_kind(mode: int) -> str:
    """What a file of ``st_mode`` ``mode`` is, in words ("a directory", "a FIFO (named
    pipe)", "a regular file"...)."""
    for test, name in (
        (stat.S_ISREG, "a regular file"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "of an unknown file type"


def _too_large(path: str, size: int) -> SidecarCorruptError:
    return SidecarCorruptError(
        path, f"is {size} bytes, larger than the {MAX_BYTES}-byte limit of a sidecar"
    )


def open_sidecar(path: str) -> tuple[int, os.stat_result] | None:
    """A read-only descriptor on ``path`` and its stat, or None when it does not exist.

    Opening never blocks (a FIFO opens at once), and anything but a regular file
    (FIFO, device, directory, socket), or one larger than ``MAX_BYTES``, raises
    ``SidecarCorruptError``. A symbolic link is never followed: it is refused as not a
    regular file (nothing is read through it). The caller closes the descriptor.
    """
    fd = _open(path)
    if fd is None:
        return None
    try:
        return fd, _regular_stat(path, fd)
    except BaseException:
        os.close(fd)
        raise


#: Why a sidecar cannot be opened, by ``errno``; any other error is raised as it is.
_OPEN_REFUSALS = {
    errno.ENXIO: "is a socket, not a regular file",  # open(2) of a UNIX socket
    errno.ELOOP: (  # O_NOFOLLOW on a symbolic link
        "is a symbolic link, not a regular file (sidecars are never read through links; "
        "replace it by the file itself)"
    ),
}


def _open(path: str) -> int | None:
    """A read-only descriptor on ``path``, None when it does not exist."""
    try:
        try:
            return os.open(path, READ)
        except FileNotFoundError:
            # Once more at once: on a network file system a name being replaced by another
            # client can be missing for one lookup. A file that is really missing costs one
            # system call more.
            return os.open(path, READ)
    except FileNotFoundError:
        return None
    except OSError as exc:
        why = _OPEN_REFUSALS.get(exc.errno or 0)
        if why is None:
            raise
        raise SidecarCorruptError(path, why) from None


def _regular_stat(path: str, fd: int) -> os.stat_result:
    """The stat of open sidecar ``fd``: a regular file of at most ``MAX_BYTES``."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise SidecarCorruptError(path, f"is {file_kind(st.st_mode)}, not a regular file")
    if st.st_size > MAX_BYTES:
        raise _too_large(path, st.st_size)
    return st


def read_all(fd: int, size: int) -> bytes:
    """The rest of ``fd``'s bytes, ``size`` the expected count; at most ``MAX_BYTES + 1``.

    A file that grows past ``MAX_BYTES`` while it is read is cut there; the parse
    functions then refuse it by its length.
    """
    chunks: list[bytes] = []
    total = 0
    while total <= MAX_BYTES:
        chunk = os.read(fd, min(max(size - total, 0) + 65536, MAX_BYTES + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


#: How often a read that a concurrent replace made fail is tried, the waits doubling
#: from 1 ms (about 30 ms in all).
_STALE_TRIES = 6


def retry_replaced(read: Callable[[], _T]) -> _T:
    """``read()``, tried again when it fails with ``ESTALE``.

    On NFS, a file that another client replaced after this client looked it up answers
    ``ESTALE`` to the open, the stat or a read (nfs(5)); looking the name up again finds
    the new file. ``read`` must open the file itself, so that each try looks it up anew.
    """
    delay = 0.001
    for _ in range(_STALE_TRIES - 1):
        try:
            return read()
        except OSError as exc:
            if exc.errno != errno.ESTALE:
                raise
        time.sleep(delay)
        delay *= 2
    return read()


def read_bytes(path: str) -> bytes | None:
    """The file's bytes, or None when it does not exist (see ``open_sidecar`` for refusals).

    A read that a concurrent replace made fail is tried again (``retry_replaced``).
    """
    read = read_with_stat(path)
    return None if read is None else read[0]


def read_with_stat(path: str) -> tuple[bytes, os.stat_result] | None:
    """``read_bytes`` with the stat of the file the bytes came from."""
    return retry_replaced(lambda: _read_once(path))


def _read_once(path: str) -> tuple[bytes, os.stat_result] | None:
    opened = open_sidecar(path)
    if opened is None:
        return None
    fd, st = opened
    try:
        return read_all(fd, st.st_size), st
    finally:
        os.close(fd)


# -- nesting ------------------------------------------------------------------------

# Every byte but the brackets and the quote: deleted to see the structure alone. Braces
# become brackets: depth does not depend on the kind (a mismatch is the parser's error),
# and one kind lets each pass remove exactly one level.
_NOT_STRUCTURE = bytes(c for c in range(256) if c not in b'[]{}"')
_ONE_KIND = bytes.maketrans(b"{}", b"[]")
_STEP = {ord("["): 1, ord("]"): -1}


def _brackets(raw: bytes) -> bytes:
    """The brackets of ``raw`` that lie outside JSON strings, in order, braces as brackets."""
    if b"\\" in raw:
        # Escapes pair up left to right inside strings: drop escaped backslashes first,
        # then escaped quotes, so that every quote left delimits a string.
        raw = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    view = raw.translate(_ONE_KIND, _NOT_STRUCTURE)
    if view.count(b'""') * 2 == view.count(b'"'):
        # Every string held no bracket (the usual case): only the quotes to remove. The
        # test is exact: quotes then come in runs of pairs; a string holding a bracket
        # leaves a run of odd length (its opening quote after the pairs of any empty
        # strings before it), and non-overlapping counting finds one pair less there.
        return view.translate(None, b'"')
    return b"".join(view.split(b'"')[::2])


def _nesting_exceeds(raw: bytes, limit: int) -> bool:
    """Whether the JSON text ``raw`` nests arrays and objects deeper than ``limit``.

    A scan of bytes, so that no parser recursion is involved: each pass removes the
    innermost bracket pairs, hence one level.
    """
    brackets = _brackets(raw)
    if brackets.count(b"[") <= limit:
        return False  # fewer openers than levels allowed
    for passes in range(limit):
        if not brackets:
            return False
        reduced = brackets.replace(b"[]", b"")
        if passes + 1 + reduced.count(b"[") <= limit:
            # Each pass lowers the deepest point by at most one, and what is left nests
            # no deeper than it has openers: the usual file stops after one pass.
            return False
        if len(reduced) == len(brackets):
            # Brackets that do not pair up (the JSON error is reported by the parser):
            # the depth is at most the levels removed plus what the rest opens.
            rest = max(itertools.accumulate(_STEP[c] for c in brackets))
            return passes + rest > limit
        brackets = reduced
    return bool(brackets)  # still brackets after ``limit`` levels removed


# -- parsing ------------------------------------------------------------------------


class DuplicateKey(Exception):
    """A JSON object holds ``key`` twice (``decode_unique``); the caller says where."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(key)
            seen.add(key)
    return result


#: ``json.loads(text)`` that raises ``DuplicateKey`` for a key twice in one object (the
#: plain decoder keeps the last one silently): a sidecar's or a metadata value's. Built
#: once, as ``json.loads`` keeps one for calls without options.
decode_unique = json.JSONDecoder(object_pairs_hook=_no_duplicates).decode

_BOM = b"\xef\xbb\xbf"
# A \uD800-\uDFFF escape: a surrogate; a lone one has no UTF-8 form and no writer made it.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _strings(value: Any) -> Iterator[str]:
    """Every key and string value inside ``value`` (its depth is bounded by the scan)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def is_utf8(text: str) -> bool:
    """Whether ``text`` has a UTF-8 form: no lone surrogate (from a ``\\ud800`` escape, or
    ``os.fsdecode`` of bytes that are not UTF-8)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _lone_surrogate(value: Any) -> str | None:
    return next((text for text in _strings(value) if not is_utf8(text)), None)


def _loads(path: str, raw: bytes, depth: int = MAX_FILE_DEPTH) -> Any:
    """The JSON value of ``raw``, or ``SidecarCorruptError`` saying what is wrong."""
    if len(raw) > MAX_BYTES:
        raise _too_large(path, len(raw))
    if raw.startswith(_BOM):
        # RFC 8259 section 8.1: a parser may ignore a byte order mark (editors add one);
        # the next rewrite drops it.
        raw = raw[len(_BOM) :]
    text = _utf8(path, raw)
    if _nesting_exceeds(raw, depth):
        raise SidecarCorruptError(path, f"nests arrays and objects deeper than {depth} levels")
    data = _decode(path, text)
    if b"\\" in raw and _SURROGATE_ESCAPE.search(raw) is not None:  # no escape: none
        _refuse_lone_surrogate(path, data)
    return data


def _utf8(path: str, raw: bytes) -> str:
    """``raw`` decoded, or ``SidecarCorruptError`` naming the first byte that is not UTF-8."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A character cut in two at the end: the bytes may be a read cut short.
        raise SidecarCorruptError(
            path,
            f"is not UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})",
            cut_short=exc.end == len(raw),
        ) from None


def _decode(path: str, text: str) -> Any:
    """The JSON value of ``text`` (nesting already checked), each parser error in words."""
    try:
        if text.startswith("\ufeff"):  # a second mark: json.loads says what is wrong
            return json.loads(text, object_pairs_hook=_no_duplicates)
        return decode_unique(text)
    except json.JSONDecodeError as exc:
        raise SidecarCorruptError(
            path, f"does not parse as JSON ({exc})", cut_short=_unfinished(text, exc)
        ) from None
    except DuplicateKey as exc:
        raise SidecarCorruptError(
            path,
            f"holds the key {_short(exc.key)} twice in one object (a file stagetimer "
            "wrote never does; one of them would be lost)",
        ) from None
    except ValueError as exc:  # int(): more digits than sys.get_int_max_str_digits()
        raise SidecarCorruptError(path, f"holds a number Python refuses to read ({exc})") from None
    except RecursionError:  # the caller's own stack was already deep
        raise SidecarCorruptError(path, "is nested too deeply to parse here") from None


#: What may be left of the last value of a text cut short: part of a number or a literal.
_PARTIAL_TOKEN = re.compile(r"[-+.0-9eE]*|t(r(ue?)?)?|f(a(l(se?)?)?)?|n(u(ll?)?)?")
#: The rest of a text cut inside (or right after) a ``\uXXXX`` escape, from its ``u``.
_PARTIAL_ESCAPE = re.compile(r"u[0-9a-fA-F]{0,4}")


def _unfinished(text: str, exc: json.JSONDecodeError) -> bool:
    """Whether the parser failed only because ``text`` ends too soon."""
    if exc.msg.startswith("Unterminated string"):
        return True
    if exc.msg == "Extra data":  # a whole value, then more: never a cut
        return False
    if exc.msg.startswith("Invalid \\uXXXX escape"):  # the position is the escape's ``u``
        return _PARTIAL_ESCAPE.fullmatch(text, exc.pos) is not None
    return _PARTIAL_TOKEN.fullmatch(text[exc.pos :].rstrip()) is not None


def _refuse_lone_surrogate(path: str, data: Any) -> None:
    """``SidecarCorruptError`` when a string inside ``data`` holds a lone surrogate."""
    lone = _lone_surrogate(data)
    if lone is not None:
        raise SidecarCorruptError(
            path, f"holds the string {_short(lone)} with a lone surrogate escape (not UTF-8)"
        )


def parse_json(path: str, raw: bytes, depth: int = MAX_FILE_DEPTH) -> Any:
    """The JSON value of ``raw`` with a sidecar's structural checks (size, UTF-8, nesting
    deeper than ``depth``, keys twice, lone surrogates): for other files of the protocol
    (rescue files, whose records are then checked one by one)."""
    return _loads(path, raw, depth)


def parse_timings(path: str, raw: bytes | None) -> dict[str, Any]:
    """The top-level mapping of ``timings.json`` (empty when the file is missing)."""
    if raw is None:
        return {}
    data = _loads(path, raw)
    if type(data) is not dict:
        raise SidecarCorruptError(path, f"top level is {json_type(data)}, expected an object")
    check_timings_shape(path, data)
    return data


def parse_hardware(path: str, raw: bytes | None) -> dict[str, Any]:
    """The mapping of ``timings_hardware.json``; newer schemas raise ``SchemaVersionError``."""
    if raw is None:
        return {"schema_version": SCHEMA_VERSION, "hardware": {}}
    data = _loads(path, raw)
    if type(data) is not dict:
        raise SidecarCorruptError(path, f"top level is {json_type(data)}, expected an object")
    _check_version(path, data.get("schema_version"))
    check_hardware_shape(path, data)
    return data


def _check_version(path: str, version: object) -> None:
    """Refuse a ``schema_version`` other than this one (``SchemaVersionError`` when newer)."""
    if type(version) is int and version > SCHEMA_VERSION:
        raise SchemaVersionError(path, version, SCHEMA_VERSION)
    # The integer itself: ``true`` and ``1.0`` equal 1 in Python, not in the format.
    if type(version) is not int or version != SCHEMA_VERSION:
        raise SidecarCorruptError(
            path, f"schema_version is {_short(version)}, expected {SCHEMA_VERSION}"
        )
