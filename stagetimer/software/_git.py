"""The commit, dirty state and uncommitted diff of a git work tree, in bounded time.

``git`` runs as a child process with a deadline: a missing, slow or broken ``git``
gives ``None`` and a reason, never an exception or a hang. The two commands start
together (they only read) and run while the caller looks at the imported packages.
Nothing is written to the repository: the diff is the plumbing ``git diff-index``,
which never refreshes the index (porcelain ``git diff`` rewrites it when a file's
stat data changed, even under ``GIT_OPTIONAL_LOCKS=0``: seen with git 2.39), and whose
patch of a file touched but unchanged is empty.
"""

from __future__ import annotations

import os
import re
import subprocess
import time

from stagetimer._system.command import stop
from stagetimer._system.git import first_line, git_environment, which
from stagetimer.software._model import CodeInfo

__all__ = ["GIT_TIMEOUT", "GitProbe", "start_git"]

#: seconds all git commands of one capture may take together
GIT_TIMEOUT = 2.0

# The diff's text must not depend on the user's configuration (prefixes, renames,
# algorithm, external tools, colour), or one set of edits would hash two ways. Plumbing
# still reads core.quotePath (non-ASCII names raw or quoted), diff.indentHeuristic
# (where a hunk starts) and the user's attributes file (core.attributesFile, by default
# ~/.config/git/attributes: "*.py diff=python" changes each hunk header's function
# line): git-config(1), gitattributes(5).
_DIFF = (
    "-c", "core.quotePath=true", "-c", f"core.attributesFile={os.devnull}",
    "diff-index", "-p", "HEAD", "--no-ext-diff", "--no-textconv", "--no-color", "--binary",
    "--full-index", "--no-renames", "--no-relative", "--src-prefix=a/", "--dst-prefix=b/",
    "--unified=3", "--diff-algorithm=myers", "--indent-heuristic", "--submodule=short", "--",
)
_HEAD = ("rev-parse", "--verify", "--quiet", "HEAD^{commit}")
# 40 hex digits, 64 in a SHA-256 repository (git's hash-function-transition.txt)
_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


class GitProbe:
    """The two git commands of one capture, started; ``result`` waits for them."""

    def __init__(self, directory: str, timeout: float = GIT_TIMEOUT) -> None:
        self._deadline = time.monotonic() + timeout
        self._timeout = timeout
        self._reason: str | None = None
        self._children: list[subprocess.Popen[bytes]] = []
        git = which("git")
        if git is None:
            self._reason = "git is not installed (not found on PATH)"
            return
        env = git_environment()
        try:
            for args in (_HEAD, _DIFF):
                self._children.append(
                    subprocess.Popen(
                        (git, *args), cwd=directory, env=env, stdin=subprocess.DEVNULL,
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        # its own process group, so that a timeout ends what it started too
                        start_new_session=True,
                    )
                )
        except OSError as exc:
            self._reason = f"git could not be started ({exc.strerror or exc})"
            self._stop_all()

    def close(self) -> None:
        """End the commands if still running (the capture was interrupted before
        ``result``); ``result`` does this itself."""
        self._stop_all()

    def _stop_all(self) -> None:
        """Kill each command's process group, close its pipes unread and reap it.

        Never read to the end here: a helper git started that left the group (an
        fsmonitor daemon calls ``setsid``) survives the kill and may hold the pipes'
        write ends for as long as it lives.
        """
        for child in self._children:
            stop(child)
        self._children = []

    def _run(self, child: subprocess.Popen[bytes]) -> tuple[int, bytes, bytes]:
        remaining = max(0.0, self._deadline - time.monotonic())
        out, err = child.communicate(timeout=remaining)
        return child.returncode, out, err

    def result(self) -> tuple[CodeInfo | None, str]:
        """The work tree's code and where it came from, or None and why not."""
        if self._reason is not None:
            return None, self._reason
        head, diff = self._children
        try:
            code, out, err = self._run(head)
            if code != 0:
                return None, self._head_failed(code, err)
            code, patch, err = self._run(diff)
        except subprocess.TimeoutExpired:
            return None, self._no_answer(head, diff)
        finally:
            self._stop_all()
        return _code_info(out, code, patch, err)

    def _no_answer(self, head: subprocess.Popen[bytes], diff: subprocess.Popen[bytes]) -> str:
        """Why git gave no answer in time (its children are not stopped yet)."""
        if head.poll() is not None and diff.poll() is not None:
            return (
                f"git ended but a process it started kept its output open past "
                f"{self._timeout:g} s (a helper such as an fsmonitor daemon)"
            )
        return f"git did not answer within {self._timeout:g} s"

    def _head_failed(self, code: int, err: bytes) -> str:
        message = first_line(err)
        if "not a git repository" in message:
            return "not in a git work tree"
        if code == 1 and not err:  # --verify --quiet: HEAD names no commit
            return "the git work tree has no commit yet"
        return f"git rev-parse HEAD failed (exit {code}): {message}"


def start_git(directory: str, timeout: float = GIT_TIMEOUT) -> GitProbe:
    """Start describing the work tree holding ``directory`` (see ``GitProbe.result``)."""
    return GitProbe(directory, timeout)


def _code_info(
    head_out: bytes, diff_exit: int, patch: bytes, diff_err: bytes
) -> tuple[CodeInfo | None, str]:
    """The code the answers of ``git rev-parse HEAD`` and ``git diff-index -p HEAD`` describe,
    and where it came from, or None and why not."""
    if diff_exit != 0:
        return None, f"git diff-index HEAD failed (exit {diff_exit}): {first_line(diff_err)}"
    commit = head_out.decode("ascii", "replace").strip()
    if not _COMMIT.fullmatch(commit):  # a git that answers nonsense
        return None, f"git rev-parse HEAD gave no commit: {commit[:60]!r}"
    dirty = bool(patch)
    if dirty:
        import hashlib  # here, not at import: only a dirty work tree needs it

        digest: str | None = hashlib.sha256(patch).hexdigest()
    else:
        digest = None
    return CodeInfo(commit, dirty, digest), "git rev-parse HEAD; git diff-index -p HEAD"
