"""One outside command run with a bound on its whole life, whatever its children do.

A command killed on a timeout may leave children behind: one in its process group keeps
running, and one that left the session (``setsid``, as daemons do) may hold the pipe, so
that reading the output to its end after the kill waits for as long as that child lives.
Here the command starts a session of its own, the whole session is killed on a timeout,
and the pipes are closed unread.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence

__all__ = ["CommandUnavailable", "run_bounded", "stop"]

#: How long a SIGKILLed command is waited for (it ends at once unless stuck in the kernel;
#: then it is left for subprocess to reap later).
_REAP_SECONDS = 0.1


class CommandUnavailable(Exception):
    """The command could not be run or gave no answer in time; ``str()`` says why."""


def run_bounded(
    argv: Sequence[str], timeout: float, *, env: Mapping[str, str] | None = None
) -> tuple[int, bytes, bytes]:
    """Run ``argv`` (standard input empty) for at most ``timeout`` seconds: its exit
    status, standard output and standard error, or :class:`CommandUnavailable`."""
    name = argv[0]
    child = _start(argv, env)
    try:
        out, err = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        ended = child.poll() is not None
        stop(child)
        if ended:
            raise CommandUnavailable(
                f"{name} ended but a process it started kept its output open past "
                f"{timeout:g} s"
            ) from None
        raise CommandUnavailable(f"{name} gave no answer within {timeout:g} s") from None
    except BaseException:
        stop(child)  # an interrupt: nothing it started outlives the wait
        raise
    return child.returncode, out, err


def _start(argv: Sequence[str], env: Mapping[str, str] | None) -> subprocess.Popen[bytes]:
    """The command started in its own session, or :class:`CommandUnavailable`."""
    try:
        return subprocess.Popen(
            list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env=None if env is None else dict(env),
            start_new_session=True,
        )
    except FileNotFoundError:
        raise CommandUnavailable(f"{argv[0]} is not installed here") from None
    except OSError as exc:
        raise CommandUnavailable(f"{argv[0]} could not be run: {exc.strerror or exc}") from None


def stop(child: subprocess.Popen[bytes]) -> None:
    """Kill the command's session, close its pipes unread and reap it, briefly."""
    if child.poll() is None:
        with contextlib.suppress(OSError):  # it ended meanwhile
            os.killpg(child.pid, signal.SIGKILL)
    for pipe in (child.stdout, child.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()
    with contextlib.suppress(subprocess.TimeoutExpired):
        child.wait(timeout=_REAP_SECONDS)
