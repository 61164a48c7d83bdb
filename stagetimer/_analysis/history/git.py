"""The commit graph of the repository the runs' commits come from, read in bounded time.

``history`` orders its points by the commit graph (``git rev-list --topo-order``) and
names the commits between two points (``git log --oneline A..B``). git runs as
``stagetimer.software`` runs it when a run is recorded: a child process with a
deadline, its own process group (a timeout ends what it started too), the caller's
``GIT_DIR`` and friends unset, optional locks off, nothing written. A repository
another user owns is never entered: git would read its configuration (hooks, an
fsmonitor command) as this user; it is refused before git starts, and git's own
``safe.directory`` check refuses it too.
"""

from __future__ import annotations

import os
import subprocess
import time

from stagetimer._system.command import stop
from stagetimer._system.git import first_line, git_environment, which

__all__ = ["COMMITS_SHOWN", "HISTORY_GIT_TIMEOUT", "Repository", "open_repository"]

#: seconds every git command of one ``history`` may take together
HISTORY_GIT_TIMEOUT = 10.0
#: the most commits named between two points
COMMITS_SHOWN = 20
#: the most commits of the graph read (a repository of millions orders by time)
_MAX_COMMITS = 200_000


def _owner_problem(directory: str) -> str | None:
    """Why git must not run in ``directory``'s repository: another user owns it."""
    path = os.path.abspath(directory)
    uid = os.geteuid()
    while True:
        marker = os.path.join(path, ".git")
        if os.path.lexists(marker):
            return _not_owned(path, marker, uid)
        parent = os.path.dirname(path)
        if parent == path:
            return None  # no repository: git says so
        path = parent


def _not_owned(path: str, marker: str, uid: int) -> str | None:
    """Why the repository at ``path`` (its ``.git`` ``marker``) is not ``uid``'s, or None
    when it is."""
    for checked in (path, marker):
        try:
            owner = os.stat(checked).st_uid
        except OSError as exc:
            return f"cannot read {checked}: {exc.strerror or exc}"
        if owner != uid:
            return f"the repository {path} belongs to another user (uid {owner})"
    return None


class Repository:
    """A repository to ask, with one deadline for every command of a ``history`` call."""

    def __init__(self, directory: str, git: str, timeout: float) -> None:
        self.directory = directory
        self._git = git
        self._deadline = time.monotonic() + timeout
        self._timeout = timeout

    def run(self, *args: str) -> tuple[bytes | None, str]:
        """``git args``'s output, or None and why not (failed, or past the deadline)."""
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            return None, f"git did not answer within {self._timeout:g} s"
        try:
            child = subprocess.Popen(
                (self._git, *args), cwd=self.directory, env=git_environment(),
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            return None, f"git could not be started ({exc.strerror or exc})"
        try:
            out, err = child.communicate(timeout=remaining)
        except subprocess.TimeoutExpired:
            return None, f"git did not answer within {self._timeout:g} s"
        finally:
            stop(child)
        if child.returncode != 0:
            return None, self._failure(args[0], child.returncode, first_line(err))
        return out, ""

    def _failure(self, command: str, returncode: int, message: str) -> str:
        """Why a git command failed, from its exit status and first line of errors."""
        if "not a git repository" in message:
            return f"{self.directory} is not in a git repository"
        if "dubious ownership" in message:
            return f"the repository at {self.directory} belongs to another user"
        return f"git {command} failed (exit {returncode}): {message}"

    def commit_order(self) -> tuple[dict[str, int] | None, str]:
        """Each commit reachable from any ref -> its place, oldest 0 (topological order);
        or None and why not."""
        out, reason = self.run(
            "rev-list", "--topo-order", "--reverse", f"--max-count={_MAX_COMMITS}", "--all"
        )
        if out is None:
            return None, reason
        commits = out.decode("ascii", "replace").split()
        return {commit: i for i, commit in enumerate(commits)}, ""

    def commits_between(self, before: str, after: str) -> tuple[list[str], int]:
        """``git log --oneline before..after``: at most ``COMMITS_SHOWN`` lines (newest
        first), and how many commits there are in all (0 when git could not say)."""
        span = f"{before}..{after}"
        out, _ = self.run(
            "-c", "log.showSignature=false", "log", "--oneline", "--no-decorate",
            "--no-color", f"--max-count={COMMITS_SHOWN}", span, "--",
        )
        if out is None:
            return [], 0
        lines = out.decode("utf-8", "replace").splitlines()
        counted, _ = self.run("rev-list", "--count", span, "--")
        total = counted.decode("ascii", "replace").strip() if counted is not None else ""
        return lines, int(total) if total.isdigit() else len(lines)


def open_repository(
    directory: str, timeout: float | None = None
) -> tuple[Repository | None, str]:
    """The repository holding ``directory``, or None and why it is not at hand
    (``timeout``: for every command together, ``HISTORY_GIT_TIMEOUT`` by default)."""
    if timeout is None:
        timeout = HISTORY_GIT_TIMEOUT
    if not os.path.isdir(directory):
        return None, f"{directory} is not a directory"
    problem = _owner_problem(directory)
    if problem is not None:
        return None, problem
    git = which("git")
    if git is None:
        return None, "git is not installed (not found on PATH)"
    return Repository(directory, git, timeout), ""
