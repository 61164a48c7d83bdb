"""Real git repositories made in a test: the commands, with an identity and no user config."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

__all__ = ["GIT_ENV", "git", "make_repo"]

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
    "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org",
    "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *args: str) -> str:
    """Run ``git args`` in ``repo``; its output, stripped. Local submodules are allowed."""
    done = subprocess.run(
        ["git", "-c", "protocol.file.allow=always", *args], cwd=repo,
        env={**os.environ, **GIT_ENV}, capture_output=True, text=True, check=True, timeout=60,
    )
    return done.stdout.strip()


def make_repo(path: Path, files: dict[str, str] | None = None) -> Path:
    """A repository at ``path`` with ``files`` (default one script) in its first commit."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    for name, text in (files or {"train.py": "print('train')\n"}).items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "first")
    return path
