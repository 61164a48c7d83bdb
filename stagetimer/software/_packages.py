"""The installed distributions that provide a module this process has imported.

Looks only at ``sys.modules`` and the metadata directories installers write on
``sys.path`` (``<name>-<version>.dist-info``, PEP 376 and the binary distribution
format; ``.egg-info`` of older installs): nothing is imported, so the answer is what the
program loaded, not what the environment could load.

Why not ``importlib.metadata``: its ``packages_distributions()`` builds a
``PackagePath`` object per line of every ``RECORD`` without a ``top_level.txt`` (most
wheels built by modern backends), 235-365 ms for the 42 distributions of the
development environment on the build machine; and importing ``importlib.metadata``
(``email``, ``zipfile``, ``pathlib``, ``csv``) costs more than the whole capture may
(50 ms with 200 distributions, benchmarks/bench_software.py). The same files are read
here with one scan of each ``sys.path`` directory and a substring search per imported
name; the ``METADATA`` headers only of the distributions that provide one. Each file is
read as ``stagetimer._system.files`` reads: a regular file only, opened without
blocking, of bounded size (a FIFO or a link to ``/dev/zero`` planted in a
``.dist-info`` directory would hold the first save for good).
"""

from __future__ import annotations

import os
import re
import sys
from itertools import takewhile

from stagetimer._system import nvml
from stagetimer._system.files import read_regular, read_text

__all__ = [
    "imported_packages", "imported_top_level", "normalized_name", "provides", "record_top_level",
]

# The standard library and the interpreter's built-in modules are no distribution's.
_NOT_DISTRIBUTED = frozenset(sys.stdlib_module_names) | frozenset(sys.builtin_module_names)
_SOURCE = (
    "the .dist-info (.egg-info) directories on sys.path: distributions providing a module "
    "in sys.modules (top_level.txt, else RECORD; standard library excluded)"
)
_SUFFIXES = (".dist-info", ".egg-info")
# PEP 503: runs of "-", "_" and "." are one "-", case aside ("Foo_Bar" is "foo-bar").
_SEPARATORS = re.compile(r"[-_.]+")


def normalized_name(name: str) -> str:
    """A distribution's name as PEP 503 compares names: ``Foo_Bar`` and ``foo.bar`` are one."""
    return _SEPARATORS.sub("-", name).lower()


def imported_top_level() -> set[str]:
    """The top-level names of the modules imported so far, the standard library left out."""
    # list(): one C-level copy, safe while another thread imports. None marks an import
    # that failed or was blocked; any other value is imported, even one false as a bool
    # (a module that replaced itself with an empty mapping).
    names = {
        name.partition(".")[0]
        for name, module in list(sys.modules.items())
        if module is not None
    }
    names.discard("__main__")
    names.discard("__mp_main__")
    if not nvml.program_loaded():
        names.discard(nvml.MODULE)  # stagetimer's own import of it is not the program's
    return names - _NOT_DISTRIBUTED


def record_top_level(record: str) -> set[str]:
    """The top-level names a ``RECORD`` installs (PEP 376: CSV lines ``path,hash,size``).

    A package is a directory ``name/``, a module a file ``name.py`` or an extension
    ``name.cpython-311-x86_64-linux-gnu.so`` (``.pyd``) at the top of the install; a
    path holding a comma is quoted; ``..`` (scripts), ``__pycache__`` and the metadata
    and data directories are no module. One split per line: RECORD of a large wheel
    has thousands of lines, nearly all below a few directories.
    """
    firsts = {line.partition("/")[0] for line in record.splitlines()}
    return {name for name in map(_top_name, firsts) if name}


def _top_name(first: str) -> str:
    """The top-level name a ``RECORD`` line's first path part installs, ``""`` for none."""
    if first.startswith('"'):  # quoted: the path holds a comma
        first, separator = first[1:], '",'
    else:
        separator = ","
    if separator not in first:  # a directory: "/" follows
        return "" if first.startswith(".") or first == "__pycache__" else first
    return _module_of(first.partition(separator)[0])  # a file: "six.py,sha256=...,123"


def _module_of(path: str) -> str:
    """The module a file at the top of the install is, ``""`` for none."""
    if path.endswith(".py"):  # "a.b.py" is no module "a": its name "a.b" matches none
        return path[:-3]
    if path.endswith((".so", ".pyd")):  # name.<ABI tag>.so
        return path.partition(".")[0]
    return ""


def provides(top_level: str | None, record: str | None, names: set[str]) -> bool:
    """Whether a distribution installs one of the top-level modules ``names``.

    From its ``top_level.txt`` where it has one (setuptools writes it), else from the
    paths of its ``RECORD``.
    """
    if top_level is not None and top_level.strip():
        return not names.isdisjoint(top_level.split())
    return not names.isdisjoint(record_top_level(record or ""))


def _name_and_version(directory: str) -> tuple[str, str] | None:
    """``Name`` and ``Version`` from the core metadata headers (``METADATA``, or
    ``PKG-INFO`` of an ``.egg-info``), read up to the blank line that ends them."""
    for filename in ("METADATA", "PKG-INFO"):
        # A regular file only, opened without blocking, read up to the headers' end.
        data = read_regular(os.path.join(directory, filename), stop=b"\n\n")[0]
        found = _headers_name_and_version(data) if data is not None else None
        if found is not None:
            return found
    return None


def _headers_name_and_version(data: bytes) -> tuple[str, str] | None:
    """The first ``Name`` and ``Version`` of core metadata headers, None without both."""
    found: dict[str, str] = {}
    # Universal newlines, as a file opened as text splits them.
    text = data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
    # A blank line ends the headers; the description follows.
    for line in takewhile(str.strip, text.split("\n")):
        # Field names are case-insensitive, as in email headers
        # (importlib.metadata reads "name: x" as the Name).
        key, sep, value = line.partition(":")
        key = key.lower()
        if sep and key in ("name", "version"):
            found.setdefault(key, value.strip())
    if len(found) < 2:
        return None
    return found["name"], found["version"]


def _metadata_directories() -> list[str]:
    """Every ``*.dist-info`` / ``*.egg-info`` directory on ``sys.path``, in path order."""
    # Bytes, a Path or None put there by hand: the import system passes over every
    # entry that is not a str (importlib's PathFinder), and so does this.
    entries = (os.path.abspath(entry or ".") for entry in list(sys.path) if isinstance(entry, str))
    return [path for where in dict.fromkeys(entries) for path in _metadata_in(where)]


def _metadata_in(where: str) -> list[str]:
    """The ``*.dist-info`` / ``*.egg-info`` directories of one ``sys.path`` entry, sorted."""
    try:
        with os.scandir(where) as listing:
            names = sorted(e.name for e in listing if e.name.endswith(_SUFFIXES))
    except OSError:  # a zip file, a missing directory
        return []
    return [os.path.join(where, name) for name in names]


def imported_packages() -> tuple[dict[str, str], str]:
    """``{distribution: version}`` for the imported modules' distributions, and the source.

    A module that no distribution installs (the program's own, a path added by hand)
    is not a package. Where two installs of one distribution are on the path, the
    first one (the one Python imports from) wins, whatever the spelling of its name
    (``Foo_Bar`` and ``foo-bar`` are one distribution, PEP 503).
    """
    imported = imported_top_level()
    found: dict[str, tuple[str, str]] = {}  # normalized name -> (name, version)
    for directory in _metadata_directories():
        if provides(*_file_lists(directory), imported):
            named = _name_and_version(directory)
            if named is not None:
                found.setdefault(normalized_name(named[0]), named)
    return dict(sorted(found.values())), _SOURCE


def _file_lists(directory: str) -> tuple[str | None, str | None]:
    """A distribution's ``top_level.txt``, and only where that names nothing, its
    ``RECORD`` (an ``.egg-info``'s ``SOURCES.txt``): what ``provides`` reads."""
    top_level = read_text("/", os.path.join(directory, "top_level.txt"))
    if top_level is not None and top_level.strip():
        return top_level, None
    record = read_text("/", os.path.join(directory, "RECORD"))
    if record is None:  # an .egg-info lists its files in SOURCES.txt
        record = read_text("/", os.path.join(directory, "SOURCES.txt"))
    return top_level, record
