"""Running ``git`` as a reader: its executable, a clean environment, its complaint in
one line.

The software capture (the commit of the work tree) and the history reader (the commits
of a repository) both run git; this is what they share.
"""

from __future__ import annotations

import os
import re

__all__ = ["first_line", "git_environment", "which"]

# Set by a caller of ours (a git hook, a test harness) they would point git elsewhere.
_UNSET = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
          "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_CEILING_DIRECTORIES")
_QUOTED_PATH = re.compile(r"'[^']*'")


def git_environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _UNSET}
    env.update(
        GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", LC_ALL="C", GIT_PAGER="cat"
    )
    return env


def which(name: str) -> str | None:
    """``name``'s executable on ``PATH``, as ``shutil.which`` finds it on POSIX (shutil's
    import, with its compression modules, costs 2 ms of the first save), made absolute.

    Absolute: git starts in the work tree (``cwd``), where a relative path (from an empty
    or ``.`` entry of ``PATH``) would name another file, the repository's own ``git``
    if it has one. An empty ``PATH`` finds nothing, as in ``shutil.which`` (bpo-35755).
    """
    search = os.environ.get("PATH", os.defpath)
    if not search:
        return None
    for directory in search.split(os.pathsep):
        path = os.path.join(directory, name)
        if os.access(path, os.X_OK) and not os.path.isdir(path):
            return os.path.abspath(path)
    return None


def first_line(stderr: bytes) -> str:
    """git's first line of complaint, without the paths it quotes (they are volatile)."""
    text = stderr.decode("utf-8", "replace").strip().splitlines()
    return _QUOTED_PATH.sub("'…'", text[0])[:160] if text else "no message"
