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
import stat
import time
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
    "Listings",
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
    root: str,
    problems: list[Problem],
    rescued: list[str],
    attempted: list[str],
    listings: Listings | None = None,
) -> list[tuple[tuple[str, ...], str, _Key | None]]:
    """``(relative parts, directory, key)`` of every directory holding ``timings.json``
    under ``root``, following directory links; each real directory is entered once.

    Directories holding rescue files (records a failed save kept) go to ``rescued``, those
    holding started markers (``timings.attempts/``, never entered: it is no artifact
    directory) to ``attempted``. With ``listings``, a directory unchanged since it was
    last listed is not listed again (see :class:`Listings`). ``key`` is the directory's
    ``(st_dev, st_ino)`` where the walk has it (not for the root itself, without
    ``listings``).
    Iterative (a stack, not recursion): depth costs no Python frames.
    """
    if listings is not None:
        return _walk_listed(root, problems, rescued, attempted, listings)
    found: list[tuple[tuple[str, ...], str, _Key | None]] = []
    visited = _ancestors(root)
    stack: list[tuple[str, tuple[str, ...], _Key | None]] = [(root, (), None)]
    while stack:
        directory, parts, own = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError as exc:
            problems.append(_os_problem(exc, directory))
            continue
        names = _Listing((0, 0, 0, 0), False, False, False, False, [], [])
        subdirs = _classify(names, entries, links=False)
        if names.timings:
            found.append((parts, directory, own))
        _note_marks(names, directory, rescued, attempted)
        # depth first, in name order
        stack.extend(reversed(_scanned_below(subdirs, parts, visited, problems)))
    found.sort(key=lambda hit: (hit[0], hit[1]))
    return found


def _note_marks(names: _Listing, directory: str, rescued: list[str],
                attempted: list[str]) -> None:
    """Add ``directory`` to ``rescued`` where it holds rescue files, to ``attempted``
    where it holds started markers."""
    if names.rescue:
        rescued.append(directory)
    if names.attempts:
        attempted.append(directory)


def _scanned_below(subdirs: list[tuple[str, os.DirEntry[str]]], parts: tuple[str, ...],
                   visited: set[_Key], problems: list[Problem],
                   ) -> list[tuple[str, tuple[str, ...], _Key | None]]:
    """The directories below a scanned one not reached before, in name order."""
    below: list[tuple[str, tuple[str, ...], _Key | None]] = []
    for name, entry in sorted(subdirs):
        try:
            st = entry.stat()
        except OSError as exc:  # a link that vanished or points nowhere readable
            problems.append(_os_problem(exc, entry.path))
            continue
        key = (st.st_dev, st.st_ino)
        if key in visited:  # reached before, by this path or a link
            continue
        visited.add(key)
        below.append((entry.path, (*parts, name), key))
    return below


def _classify(names: _Listing, entries: list[os.DirEntry[str]], *, links: bool,
              ) -> list[tuple[str, os.DirEntry[str]]]:
    """Mark in ``names`` what a directory's ``entries`` hold (``timings.json``, rescue
    files, markers; with ``links``, its subdirectories' names and its links to anything
    else); return its subdirectories, following links."""
    subdirs: list[tuple[str, os.DirEntry[str]]] = []
    for entry in entries:
        if entry.name == TIMINGS_FILE:
            names.timings = True
        elif is_rescue_name(entry.name):
            names.rescue = True
        elif entry.name == ATTEMPTS_DIR:
            names.attempts = True
        else:
            _add_other(entry, names, subdirs, links=links)
    return subdirs


def _add_other(entry: os.DirEntry[str], names: _Listing,
               subdirs: list[tuple[str, os.DirEntry[str]]], *, links: bool) -> None:
    """An entry that is none of stagetimer's files: to ``subdirs`` where it is a
    directory (through a link too), with ``links`` to ``names.links`` where it is a
    link to anything else."""
    try:
        if entry.is_dir():  # follows links
            subdirs.append((entry.name, entry))
        elif links and entry.is_symlink():
            names.links.append(entry.name)
    except OSError:  # pragma: no cover - a dangling or unreadable entry
        pass


@attrs.define
class _Listing:
    """What one listing of a directory found, and the directory's state when listed."""

    #: ``(st_dev, st_ino, st_mtime_ns, st_ctime_ns)`` of the directory before it was listed
    stamp: tuple[int, int, int, int]
    #: whether the stamp was old enough to be trusted next time (see ``Listings``)
    settled: bool
    timings: bool
    rescue: bool
    attempts: bool
    #: the entries that are directories (through links too), in name order
    subdirs: list[str]
    #: the symbolic links that are not directories: checked again at each walk (what they
    #: point to may become a directory without this directory changing)
    links: list[str]
    #: whether the last walk listed the directory (False: it reused this listing)
    fresh: bool = True


class Listings:
    """Directory listings kept from one walk of a tree to the next (``stagetimer watch``).

    A directory's modification time changes whenever an entry is added, removed or renamed
    in it (a sidecar replaced by rename, a marker made or removed, a folder added), and its
    change time whenever its permissions do. So a directory whose
    ``(st_dev, st_ino, st_mtime_ns, st_ctime_ns)`` is what it was when last listed holds
    the same names, and is not listed again: a walk of an unchanged tree costs one ``stat``
    per directory. A listing taken while the directory's times were within ``margin_ns``
    of the clock is used once only (a second change within the file system's timestamp
    granularity, or a server clock a little behind ours, could leave the times as they
    were); it is listed again at the next walk.
    """

    def __init__(self, margin_ns: int = 2_000_000_000) -> None:
        self.margin_ns = margin_ns
        self._known: dict[str, _Listing] = {}
        self._walked: set[str] = set()
        self._count = 0
        #: directories listed (not reused) by the walk before the last ``forget_unwalked``
        self.listed = 0

    def holds(self, directory: str, name: str) -> bool | None:
        """Whether ``directory``'s last listing held ``name`` (``timings.json`` or
        ``timings.attempts``); None when it was not listed."""
        known = self._known.get(directory)
        if known is None:
            return None
        return known.timings if name == TIMINGS_FILE else known.attempts

    def unchanged(self, directory: str) -> bool:
        """Whether the last walk found ``directory`` as it was at the walk before (no
        entry added, removed or renamed in it, so no sidecar replaced: stagetimer
        replaces its files by rename)."""
        known = self._known.get(directory)
        return known is not None and not known.fresh

    def listing(self, directory: str, st: os.stat_result) -> _Listing:
        """``directory``'s entries: those listed before where it did not change since;
        raises ``OSError`` where it cannot be listed."""
        stamp = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
        self._walked.add(directory)
        known = self._known.get(directory)
        if known is not None and known.settled and known.stamp == stamp:
            known.fresh = False
            return known
        self._count += 1
        now = time.time_ns()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            self._known.pop(directory, None)
            raise
        names = _Listing(stamp, max(st.st_mtime_ns, st.st_ctime_ns) < now - self.margin_ns,
                         False, False, False, [], [])
        names.subdirs = sorted(name for name, _ in _classify(names, entries, links=True))
        self._known[directory] = names
        return names

    def forget_unwalked(self) -> None:
        """After a walk (or several, one per path): let go of the listings of directories
        it did not reach (removed, or no longer under the paths)."""
        if len(self._walked) != len(self._known):
            for gone in set(self._known) - self._walked:
                del self._known[gone]
        self._walked = set()
        self.listed, self._count = self._count, 0


def _walk_listed(
    root: str,
    problems: list[Problem],
    rescued: list[str],
    attempted: list[str],
    listings: Listings,
) -> list[tuple[tuple[str, ...], str, _Key | None]]:
    """``_walk`` through ``listings``: the same directories, in the same order."""
    found: list[tuple[tuple[str, ...], str, _Key | None]] = []
    visited = _ancestors(root)
    try:
        top = os.stat(root)
    except OSError as exc:
        problems.append(_os_problem(exc, root))
        return found
    stack: list[tuple[str, tuple[str, ...], os.stat_result]] = [(root, (), top)]
    while stack:
        directory, parts, st = stack.pop()
        try:
            names = listings.listing(directory, st)
        except OSError as exc:
            problems.append(_os_problem(exc, directory))
            continue
        if names.timings:
            found.append((parts, directory, (st.st_dev, st.st_ino)))
        _note_marks(names, directory, rescued, attempted)
        stack.extend(reversed(_listed_below(directory, parts, names, visited, problems)))
    found.sort(key=lambda hit: (hit[0], hit[1]))
    return found


def _listed_below(directory: str, parts: tuple[str, ...], names: _Listing,
                  visited: set[_Key], problems: list[Problem],
                  ) -> list[tuple[str, tuple[str, ...], os.stat_result]]:
    """The directories below a listed one not reached before, in name order (with its
    links, any of which may point to a directory now)."""
    subdirs = names.subdirs
    if names.links:  # a link to a file may point to a directory now
        subdirs = sorted([*subdirs, *names.links])
    below: list[tuple[str, tuple[str, ...], os.stat_result]] = []
    for name in subdirs:
        path = os.path.join(directory, name)
        sub = _directory_stat(path, name in names.links, problems)
        if sub is None:
            continue
        key = (sub.st_dev, sub.st_ino)
        if key in visited:  # reached before, by this path or a link
            continue
        visited.add(key)
        below.append((path, (*parts, name), sub))
    return below


def _directory_stat(path: str, link: bool, problems: list[Problem]) -> os.stat_result | None:
    """The status of the directory at ``path``; None where it is no directory now (a
    ``link`` that points elsewhere or nowhere; a directory that cannot be reached is a
    problem)."""
    try:
        sub = os.stat(path)
    except OSError as exc:  # a link that vanished or points nowhere readable
        if not link:
            problems.append(_os_problem(exc, path))
        return None
    return sub if stat.S_ISDIR(sub.st_mode) else None


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

    def add(
        self, directory: str, root: str, parts: tuple[str, ...], key: _Key | None = None
    ) -> None:
        """``directory`` (found under ``root`` at ``parts``; ``key``: its
        ``(st_dev, st_ino)`` where known), unless already listed."""
        if key is None:
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
    listings: Listings | None = None,
) -> tuple[list[Found], list[Problem]]:
    """Every artifact directory at or under ``paths``, in the report's order, each
    directory once; and what could not be walked.

    A path may be an artifact directory, any folder above some, or a ``timings.json``.
    The directories holding rescue files are appended to ``rescued`` (each once): a
    directory whose first save failed may hold nothing else. Those holding started
    markers are appended to ``attempted`` when it is given (a directory whose first stage
    runs holds nothing else; a path with such a directory under it is then no problem).
    ``listings``: the listings of an earlier walk, reused where a directory did not change
    (a watcher's repeated walks; see :class:`Listings`).
    """
    found = _Walked()
    found.count_attempts = attempted is not None
    for given in paths:
        _find_at(os.path.normpath(os.fspath(given)), found, listings)
    if rescued is not None:
        rescued.extend(_once_each(found.rescue_dirs))
    if attempted is not None:
        attempted.extend(_once_each(found.attempt_dirs))
    return found.dirs, found.problems


def _find_at(path: str, found: _Walked, listings: Listings | None) -> None:
    """A given path: a ``timings.json``, a directory to walk, or a problem."""
    try:
        # os.path.isdir and isfile say False for a path they may not look at, which
        # read as "no such file"; stat says why (EACCES: a directory above is unreadable)
        os.stat(path)
    except FileNotFoundError:
        pass  # said below, in the words every reader uses
    except OSError as exc:
        found.problems.append(_os_problem(exc, path))
        return
    if os.path.isfile(path):
        _find_in_file(path, found)
    elif not os.path.isdir(path):
        missing = FileNotFoundError(errno.ENOENT, "no such file or directory", path)
        found.problems.append(Problem(path, "no such file or directory", missing))
    else:
        _find_under(path, found, listings)


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


def _find_under(path: str, found: _Walked, listings: Listings | None = None) -> None:
    """A given directory: every artifact directory under it; a problem when the walk met
    neither one nor a problem nor a rescue file."""
    before = (len(found.problems), len(found.rescue_dirs))
    attempts_before = len(found.attempt_dirs)
    hits = _walk(path, found.problems, found.rescue_dirs, found.attempt_dirs, listings)
    for parts, directory, key in hits:
        found.add(directory, path, parts, key)
    markers = found.count_attempts and len(found.attempt_dirs) > attempts_before
    if not hits and not markers and (len(found.problems), len(found.rescue_dirs)) == before:
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
