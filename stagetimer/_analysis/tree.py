"""The one walk: every artifact directory under some paths, read once, with one set of errors.

The report, ``stagetimer table``, ``to_records`` and ``compare`` all stand on
``scan_tree``. An artifact directory is one holding ``timings.json``. The walk
follows directory symlinks (an artifact directory linked into a suite is part of
it) and enters each real directory once, known by ``(st_dev, st_ino)`` whatever the
links that reach it: links to each other (a link bomb), back up the tree or to
``/`` (an ancestor of every path, never entered) cost one ``stat`` each. A directory
reached twice (``report D D``, ``report exp exp/pursuit``, or a
link to a sibling) is listed once, under the first path that reached it; repeats
are not errors. Reading never writes, not even a lock file: the sidecars are
replaced atomically, so a reader sees a whole old or a whole new file.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import attrs

from stagetimer._analysis.raw import HardwareCache, read_data
from stagetimer._errors import InvalidTypeError, SchemaVersionError, SidecarCorruptError
from stagetimer._escape import escape_text
from stagetimer._format import ATTEMPTS_DIR, HARDWARE_FILE, TIMINGS_FILE, is_rescue_name
from stagetimer._store.load import structure_timings
from stagetimer._store.records import HardwareSidecar, Timings

__all__ = [
    "Artifact",
    "Found",
    "Problem",
    "find_artifact_dirs",
    "find_tree",
    "load_tree",
    "read_found",
    "read_problem",
    "relative_paths",
    "scan_tree",
]


@attrs.frozen
class Artifact:
    """One artifact directory and its two sidecars, as read.

    ``timings`` is what ``load_timings`` returns for the directory, built from the bytes
    read by the walk on first use: the report and the table summarise ``data`` (the
    parsed file) directly, and never pay for 100,000 run objects they do not show.
    """

    #: the artifact directory: the given path joined with ``relpath``
    path: str
    #: the given path it was found under (its directory when a ``timings.json`` was given)
    root: str
    #: ``path`` relative to ``root``, ``"."`` for the root itself, ``/``-separated
    relpath: str
    #: empty when ``timings_hardware.json`` is missing or could not be read (see the problems)
    hardware: HardwareSidecar
    #: the mapping of ``timings.json`` as parsed (its shape checked), never to be changed
    data: dict[str, Any] = attrs.field(repr=False)
    _structured: list[Timings] = attrs.field(factory=list, init=False, eq=False, repr=False)

    @property
    def timings(self) -> Timings:
        """``timings.json`` as ``load_timings`` returns it (``Timings``)."""
        if not self._structured:
            self._structured.append(structure_timings(self.data))
        return self._structured[0]


@attrs.frozen
class Problem:
    """Something that could not be read: ``path`` names the file, ``message`` says what."""

    path: str
    message: str
    #: the exception ``load_tree`` raises for it
    error: Exception | None = attrs.field(default=None, eq=False, repr=False)

    def line(self) -> str:
        """The problem on one line, for standard error, control characters escaped."""
        return escape_text(" ".join(f"{self.path}: {self.message}".split("\n")))


class Found(NamedTuple):
    """An artifact directory the walk found, not read yet (``Artifact`` names the same
    three first)."""

    #: the artifact directory
    path: str
    #: the given path it was found under
    root: str
    #: ``path`` relative to ``root``, ``"."`` for the root itself, ``/``-separated
    relpath: str


_Key = tuple[int, int]  # (st_dev, st_ino): a directory however it is reached


def _ancestors(root: str) -> set[_Key]:
    """The keys of ``root``'s real directory and of every directory above it, up to ``/``.

    A link to any of them leads back to a directory the walk is already in.
    """
    keys: set[_Key] = set()
    path = os.path.realpath(root)
    while True:
        with contextlib.suppress(OSError):
            st = os.stat(path)
            keys.add((st.st_dev, st.st_ino))
        parent = os.path.dirname(path)
        if parent == path:
            return keys
        path = parent


def _walk(
    root: str, problems: list[Problem], rescued: list[str], attempted: list[str]
) -> list[tuple[tuple[str, ...], str]]:
    """``(relative parts, directory)`` of every directory holding ``timings.json`` under
    ``root``, following directory links; each real directory is entered once.

    Directories holding rescue files (records a failed save kept) go to ``rescued``, those
    holding started markers (``timings.attempts/``, never entered: it is no artifact
    directory) to ``attempted``.
    Iterative (a stack, not recursion): depth costs no Python frames.
    """
    found: list[tuple[tuple[str, ...], str]] = []
    visited = _ancestors(root)
    stack: list[tuple[str, tuple[str, ...]]] = [(root, ())]
    while stack:
        directory, parts = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError as exc:
            problems.append(_os_problem(exc, directory))
            continue
        subdirs: list[tuple[str, os.DirEntry[str]]] = []
        rescue_here = False
        for entry in entries:
            if entry.name == TIMINGS_FILE:
                found.append((parts, directory))
                continue
            if is_rescue_name(entry.name):
                rescue_here = True
                continue
            if entry.name == ATTEMPTS_DIR:
                attempted.append(directory)
                continue
            try:
                if entry.is_dir():  # follows links
                    subdirs.append((entry.name, entry))
            except OSError:  # pragma: no cover - a dangling or unreadable entry
                continue
        if rescue_here:
            rescued.append(directory)
        subdirs.sort()
        below: list[tuple[str, tuple[str, ...]]] = []
        for name, entry in subdirs:
            try:
                st = entry.stat()
            except OSError as exc:  # a link that vanished or points nowhere readable
                problems.append(_os_problem(exc, entry.path))
                continue
            key = (st.st_dev, st.st_ino)
            if key in visited:  # reached before, by this path or a link
                continue
            visited.add(key)
            below.append((entry.path, (*parts, name)))
        stack.extend(reversed(below))  # depth first, in name order
    found.sort()
    return found


def _os_problem(exc: OSError, fallback: str) -> Problem:
    path = str(exc.filename or fallback)
    return Problem(path, exc.strerror or str(exc), exc)


class _Walked:
    """The artifact directories found so far, each real directory once, and the problems
    and rescue directories met on the way."""

    def __init__(self) -> None:
        self.dirs: list[Found] = []
        self.seen: set[_Key] = set()
        self.problems: list[Problem] = []
        self.rescue_dirs: list[str] = []
        self.attempt_dirs: list[str] = []
        #: whether a directory holding only markers is something found (``attempts``)
        self.count_attempts = False

    def add(self, directory: str, root: str, parts: tuple[str, ...]) -> None:
        """``directory`` (found under ``root`` at ``parts``), unless already listed."""
        try:
            st = os.stat(directory)
        except OSError as exc:  # pragma: no cover - removed while walking
            self.problems.append(_os_problem(exc, directory))
            return
        key = (st.st_dev, st.st_ino)
        if key not in self.seen:
            self.seen.add(key)
            self.dirs.append(Found(directory, root, "/".join(parts) or "."))


def find_artifact_dirs(
    paths: Iterable[str | os.PathLike[str]],
    rescued: list[str] | None = None,
    attempted: list[str] | None = None,
) -> tuple[list[Found], list[Problem]]:
    """Every artifact directory at or under ``paths``, in the report's order, each
    directory once; and what could not be walked.

    A path may be an artifact directory, any folder above some, or a ``timings.json``.
    The directories holding rescue files are appended to ``rescued`` (each once): a
    directory whose first save failed may hold nothing else. Those holding started
    markers are appended to ``attempted`` when it is given (a directory whose first stage
    runs holds nothing else; a path with such a directory under it is then no problem).
    """
    found = _Walked()
    found.count_attempts = attempted is not None
    for given in paths:
        path = os.path.normpath(os.fspath(given))
        try:
            # os.path.isdir and isfile say False for a path they may not look at, which
            # read as "no such file"; stat says why (EACCES: a directory above is unreadable)
            os.stat(path)
        except FileNotFoundError:
            pass  # said below, in the words every reader uses
        except OSError as exc:
            found.problems.append(_os_problem(exc, path))
            continue
        if os.path.isfile(path):
            _find_in_file(path, found)
        elif not os.path.isdir(path):
            missing = FileNotFoundError(errno.ENOENT, "no such file or directory", path)
            found.problems.append(Problem(path, "no such file or directory", missing))
        else:
            _find_under(path, found)
    if rescued is not None:
        rescued.extend(_once_each(found.rescue_dirs))
    if attempted is not None:
        attempted.extend(_once_each(found.attempt_dirs))
    return found.dirs, found.problems


def _find_in_file(path: str, found: _Walked) -> None:
    """A given file: a ``timings.json`` names its directory; any other file is a problem."""
    if os.path.basename(path) == TIMINGS_FILE:
        directory = os.path.dirname(path) or "."
        found.add(directory, directory, ())
        with contextlib.suppress(OSError):
            names = os.listdir(directory)
            if any(is_rescue_name(n) for n in names):
                found.rescue_dirs.append(directory)
            if ATTEMPTS_DIR in names:
                found.attempt_dirs.append(directory)
    else:
        message = f"not a directory nor a {TIMINGS_FILE}"
        not_dir = NotADirectoryError(errno.ENOTDIR, message, path)
        found.problems.append(Problem(path, message, not_dir))


def _find_under(path: str, found: _Walked) -> None:
    """A given directory: every artifact directory under it; a problem when the walk met
    neither one nor a problem nor a rescue file."""
    before, rescues_before = len(found.problems), len(found.rescue_dirs)
    attempts_before = len(found.attempt_dirs)
    hits = _walk(path, found.problems, found.rescue_dirs, found.attempt_dirs)
    for parts, directory in hits:
        found.add(directory, path, parts)
    markers = found.count_attempts and len(found.attempt_dirs) > attempts_before
    if (not hits and not markers and len(found.problems) == before
            and len(found.rescue_dirs) == rescues_before):
        message = f"no {TIMINGS_FILE} at or under this path"
        found.problems.append(
            Problem(path, message, FileNotFoundError(errno.ENOENT, message, path))
        )


def _once_each(directories: list[str]) -> list[str]:
    """``directories`` without those whose real path came before (links to one directory)."""
    known: set[str] = set()
    unique: list[str] = []
    for directory in directories:
        real = os.path.realpath(directory)
        if real not in known:
            known.add(real)
            unique.append(directory)
    return unique


def read_problem(
    exc: SidecarCorruptError | SchemaVersionError | OSError, fallback: str
) -> Problem:
    """What a reader says of ``exc`` (``Problem.line()`` prints it); ``fallback`` names
    the path where an ``OSError`` names none."""
    if isinstance(exc, SidecarCorruptError):
        return Problem(exc.path, exc.problem, exc)
    if isinstance(exc, SchemaVersionError):
        return Problem(exc.path, f"{exc.problem}; upgrade stagetimer to report on it", exc)
    return _os_problem(exc, fallback)


def scan_tree(
    paths: Iterable[str | os.PathLike[str]], rescued: list[str] | None = None
) -> tuple[list[Artifact], list[Problem]]:
    """Every artifact directory at or under ``paths`` read, and every problem met.

    A directory whose ``timings.json`` cannot be read is left out (its problem is
    returned); one whose ``timings_hardware.json`` cannot be read is kept with an
    empty hardware sidecar, and its problem is returned too. One bad directory never
    hides the others. Directories holding rescue files are appended to ``rescued``.
    """
    directories, problems = find_artifact_dirs(paths, rescued)
    hardware_cache = HardwareCache()
    artifacts = [_read(found, hardware_cache, problems) for found in directories]
    return [a for a in artifacts if a is not None], problems


def _read(found: Found, hardware_cache: HardwareCache, problems: list[Problem]) -> Artifact | None:
    """``found`` read (None when its ``timings.json`` cannot be), each problem appended."""
    directory = found.path
    try:
        data = read_data(directory)
    except (SidecarCorruptError, SchemaVersionError, OSError) as exc:
        problems.append(read_problem(exc, os.path.join(directory, TIMINGS_FILE)))
        return None
    try:
        hardware = hardware_cache.read(directory)
    except (SidecarCorruptError, SchemaVersionError, OSError) as exc:
        problems.append(read_problem(exc, os.path.join(directory, HARDWARE_FILE)))
        hardware = HardwareSidecar()
    return Artifact(directory, found.root, found.relpath, hardware, data)


def _raise_first(problems: list[Problem]) -> None:
    """Raise the first of ``problems`` as ``load_tree`` does, if there is one."""
    if problems:
        first = problems[0]
        raise first.error if first.error is not None else OSError(first.line())


def relative_paths(paths: Sequence[str]) -> list[str]:
    """Each path relative to what all of them share (``/``-separated); one path: its name."""
    if len(paths) == 1:
        return [os.path.basename(os.path.abspath(paths[0])) or paths[0]]
    absolute = [os.path.abspath(p) for p in paths]
    common = os.path.commonpath(absolute)
    return [os.path.relpath(p, common).replace(os.sep, "/") for p in absolute]


def load_tree(*paths: str | os.PathLike[str]) -> list[Artifact]:
    """Every artifact directory at or under ``paths``, in the report's order.

    Raises the first problem met: ``FileNotFoundError`` naming a missing path (or one
    with no ``timings.json`` under it), ``SidecarCorruptError`` for a sidecar that does
    not parse, ``SchemaVersionError`` for one written by a newer stagetimer.

    >>> for artifact in load_tree("exports"):
    ...     print(artifact.relpath, list(artifact.timings.stages))
    """
    if not paths:
        raise InvalidTypeError("load_tree() needs at least one path", paths)
    artifacts, problems = scan_tree(paths)
    _raise_first(problems)
    return artifacts


def find_tree(path: str | os.PathLike[str]) -> list[Found]:
    """The artifact directories ``load_tree(path)`` would read, none read yet; raises what
    it raises for the walk (``read_found`` raises the rest, directory by directory).

    A reader that needs one directory (or one pair) at a time reads each with
    ``read_found`` and lets it go: a suite is never held in memory whole.
    """
    directories, problems = find_artifact_dirs([path])
    _raise_first(problems)
    return directories


def read_found(found: Found, hardware_cache: HardwareCache) -> Artifact:
    """``found`` read, raising what ``load_tree`` raises for it: the reader's own error
    (``hardware_cache``: the hardware sidecars read so far, shared by one call)."""
    data = read_data(found.path)
    return Artifact(found.path, found.root, found.relpath, hardware_cache.read(found.path), data)
