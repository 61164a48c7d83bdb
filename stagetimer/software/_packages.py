"""The installed distributions that provide a module this process has imported.

Looks only at ``sys.modules`` and the installed distributions' metadata files
(``importlib.metadata``): nothing is imported, so the answer is what the program
loaded, not what the environment could load.

Why not ``importlib.metadata.packages_distributions()``: for every distribution
without a ``top_level.txt`` (most wheels built by modern backends) it builds a
``PackagePath`` object per line of ``RECORD`` — 235-365 ms for the 42 distributions
of the development environment on the build machine, against a goal of 50 ms for
the whole capture with 200. The same mapping is read here from the same files with
a string split per line, and versions are parsed only for the distributions that
provide an imported module.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["imported_packages", "imported_top_level", "provides"]

# The standard library and the interpreter's built-in modules are no distribution's.
_NOT_DISTRIBUTED = frozenset(sys.stdlib_module_names) | frozenset(sys.builtin_module_names)
_SOURCE = (
    "importlib.metadata: distributions providing a module in sys.modules "
    "(top_level.txt, else RECORD; standard library excluded)"
)


def imported_top_level() -> set[str]:
    """The top-level names of the modules imported so far, the standard library left out."""
    # list(): one C-level copy, safe while another thread imports.
    names = {name.partition(".")[0] for name, module in list(sys.modules.items()) if module}
    names.discard("__main__")
    names.discard("__mp_main__")
    return names - _NOT_DISTRIBUTED


def _record_provides(record: str, name: str) -> bool:
    """Whether a ``RECORD`` (PEP 376: CSV lines ``path,hash,size``) installs module ``name``.

    A package is a directory ``name/``, a module a file ``name.py`` or an extension
    ``name.cpython-311-x86_64-linux-gnu.so`` (``.pyd``) at the top of the install; a
    path holding a comma is quoted. Substring searches over the whole text: RECORD of a
    large wheel has thousands of lines, and this runs for each imported name.
    """
    if f"\n{name}/" in record or f"\n{name}.py," in record or f'\n"{name}/' in record:
        return True
    start = record.find(f"\n{name}.")
    while start >= 0:
        end = record.find(",", start)
        path = record[start + 1 : end if end >= 0 else len(record)]
        if "/" not in path and "\n" not in path and path.endswith((".so", ".pyd")):
            return True
        start = record.find(f"\n{name}.", start + 1)
    return False


def provides(top_level: str | None, record: str | None, names: set[str]) -> bool:
    """Whether a distribution installs one of the top-level modules ``names``.

    From its ``top_level.txt`` where it has one (setuptools writes it), else from the
    paths of its ``RECORD``. Metadata, scripts (``../../bin``) and data directories
    are no module.
    """
    if top_level is not None and top_level.strip():
        return not names.isdisjoint(top_level.split())
    text = "\n" + (record or "")
    return any(_record_provides(text, name) for name in names)


def _version(dist: Any) -> tuple[str, str] | None:
    try:
        meta = dist.metadata  # parsed once for both (``dist.version`` parses it again)
        name, version = meta["Name"], meta["Version"]
    except Exception:  # metadata gone or unreadable since the listing
        return None
    return (name, version) if isinstance(name, str) and isinstance(version, str) else None


def imported_packages() -> tuple[dict[str, str], str]:
    """``{distribution: version}`` for the imported modules' distributions, and the source.

    A module that no distribution installs (the program's own, a path added by hand)
    is not a package. Where two installs of one distribution are on the path, the
    first one (the one Python imports from) wins.
    """
    import importlib.metadata as metadata

    imported = imported_top_level()
    packages: dict[str, str] = {}
    try:
        for dist in metadata.distributions():
            top_level = dist.read_text("top_level.txt")
            record = None if top_level and top_level.strip() else dist.read_text("RECORD")
            if provides(top_level, record, imported):
                found = _version(dist)
                if found is not None and found[0] not in packages:
                    packages[found[0]] = found[1]
    except Exception as exc:  # a broken distribution in the environment
        return {}, f"importlib.metadata.distributions() failed: {exc!r}"[:200]
    return dict(sorted(packages.items())), _SOURCE
