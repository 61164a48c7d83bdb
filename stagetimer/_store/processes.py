"""Whether the process a claim or a temporary file names still runs.

Shared by the claims (a holder on this machine) and the leftovers (a writer of this
host): both record a pid and ask the kernel about it.
"""

from __future__ import annotations

import os
from typing import Any, TypeGuard

__all__ = ["alive", "is_pid"]


def is_pid(value: Any) -> TypeGuard[int]:
    """Whether ``value`` is a pid a writer could have recorded (a positive integer)."""
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists: kill(2) with signal 0 sends nothing and fails with
    ESRCH when there is no such process, EPERM when it is another user's (alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        pass  # EPERM: alive, another user's
    return True
