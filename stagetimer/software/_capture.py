"""capture_software: assemble the description, once per process, at the first save.

Never at import time (the program has not imported what it uses yet), never importing
anything on its own account, never hanging: the git commands run in child processes
with a deadline, and start first, so that they run while the packages are listed.
"""

from __future__ import annotations

import os
import re
import stat
import sys

from stagetimer._system import process_state
from stagetimer.software._git import GIT_TIMEOUT, start_git
from stagetimer.software._model import Software

__all__ = ["capture_software", "clear_cache", "entry_directory"]

_live: Software | None = None


#: The line of a console-script launcher (pip's and uv's, from distlib's template) that
#: imports the entry point: ``from mypkg.cli import main``.
_LAUNCHER_IMPORT = re.compile(r"^from ([A-Za-z_][\w.]*) import [A-Za-z_]\w*$", re.MULTILINE)
_LAUNCHER_MARK = rb"(-script\.pyw|\.exe)?$"


def _launched_module(path: str) -> str | None:
    """The file of the module a console-script launcher at ``path`` runs, or None when
    ``path`` is no such launcher (a launcher lives in the environment's ``bin/``, outside
    the program's work tree; the module it imports is the program's code)."""
    name = _launcher_import(path)
    module = sys.modules.get(name) if name is not None else None
    where = getattr(module, "__file__", None)
    return where if isinstance(where, str) and where else None


def _launcher_import(path: str) -> str | None:
    """The module a console-script launcher at ``path`` imports, or None when ``path``
    is no such launcher."""
    head = _head(path)
    # The launcher's own line, which a program's script does not hold: it strips the
    # suffix of Windows launchers from sys.argv[0].
    if head is None or not head.startswith(b"#!") or _LAUNCHER_MARK not in head:
        return None
    found = _LAUNCHER_IMPORT.search(head.decode("utf-8", "replace"))
    return found.group(1) if found else None


def _head(path: str) -> bytes | None:
    """The first 4 KiB of the regular file ``path``, or None when it is no readable
    regular file."""
    try:
        # Without blocking, and a regular file only: a program read from a pipe
        # (``python /dev/stdin``, ``python <(...)``) names one whose writer may still
        # be open, and a capture never waits.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        return os.read(fd, 4096) if stat.S_ISREG(os.fstat(fd).st_mode) else None
    except OSError:
        return None
    finally:
        os.close(fd)


def entry_directory() -> tuple[str, str]:
    """The directory whose git work tree holds the program, and how it was chosen.

    The ``__main__`` module's file (a script, ``python -m package.module``), or for a
    console script the file of the module its launcher imports; the working directory
    for an interactive or ``-c`` program, which has none.
    """
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if isinstance(path, str) and path:
        launched = _launched_module(path)
        if launched is not None:
            return (
                os.path.dirname(os.path.abspath(launched)),
                f"the module the console script {os.path.basename(path)} runs",
            )
        return os.path.dirname(os.path.abspath(path)), "__main__.__file__"
    try:
        return os.getcwd(), "the working directory (no __main__ file: -c or interactive)"
    except OSError:  # the working directory was removed
        return "/", "no __main__ file and no working directory"


def _entry_directory(entry: str) -> str:
    """The absolute directory a given entry names: itself, or the directory of a file."""
    directory = entry if os.path.isdir(entry) else os.path.dirname(entry)
    return os.path.abspath(directory or ".")


def _capture(directory: str, chosen: str, timeout: float) -> Software:
    git = start_git(directory, timeout)
    try:
        # Imported while git runs: the first save of a process pays for these once.
        import platform

        from stagetimer.software._accelerators import loaded_accelerators
        from stagetimer.software._packages import imported_packages

        packages, packages_where = imported_packages()
        accelerators, sources = loaded_accelerators()
    except BaseException:  # an interrupt (a signal handler's exception): git ends too
        git.close()
        raise
    code, code_where = git.result()
    sources.update(
        {
            "python": "platform.python_implementation() platform.python_version()",
            "code": f"{code_where}; directory: {chosen}",
            "packages": packages_where,
        }
    )
    return Software(
        python=f"{platform.python_implementation()} {platform.python_version()}",
        code=code,
        packages=packages,
        accelerators=accelerators,
        sources=dict(sorted(sources.items())),
    )


def capture_software(*, entry: str | None = None, timeout: float = GIT_TIMEOUT) -> Software:
    """Describe the software this process runs: Python, code commit, packages, accelerators.

    ``entry``: a directory (or file) whose git work tree is the program's code; default
    the one holding the ``__main__`` module's file (the working directory for ``-c``
    and interactive sessions). ``timeout``: seconds the git commands may take in all;
    a missing, slow or broken ``git`` gives ``code=None`` and the reason in ``sources``.
    Nothing raises; nothing is imported.

    The default call is captured once per process (a forked child captures its own);
    later calls return the same object.

    >>> sw = capture_software()
    >>> sw.python.startswith(("CPython", "PyPy"))
    True
    """
    global _live
    if entry is not None:
        return _capture(_entry_directory(entry), "the given entry", timeout)
    if timeout != GIT_TIMEOUT:
        return _capture(*entry_directory(), timeout)
    cached = _live
    if cached is None:
        # No lock: a signal handler recording while this thread captures must not wait
        # for it. Two threads capturing at once both describe the same process.
        cached = _live = _capture(*entry_directory(), timeout)
    return cached


def clear_cache() -> None:
    """Forget the cached description (tests; a forked child does this itself)."""
    global _live
    _live = None


# A child may import other modules or change the code before its first save.
process_state.register_at_fork("software.capture", after_in_child=clear_cache)
