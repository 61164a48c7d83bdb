"""The open(2) flags of the protocol's files, defined once.

- ``O_NOFOLLOW``: a sidecar, claim or lock file that is a symbolic link fails with
  ``ELOOP`` (open(2)) instead of being opened through the link: in a shared directory
  another user could point it at a private file of the reader, whose next save would
  publish that content as its own sidecar.
- ``O_CLOEXEC``: a child started while a save holds the descriptor does not inherit it.
- ``O_NONBLOCK``: opening a FIFO returns at once instead of waiting for a writer
  (fifo(7)); it changes nothing for a regular file.
"""

from __future__ import annotations

import os

__all__ = ["CLOEXEC", "CREATE_NEW", "NOFOLLOW", "NONBLOCK", "READ"]

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
CLOEXEC = getattr(os, "O_CLOEXEC", 0)
NONBLOCK = getattr(os, "O_NONBLOCK", 0)

#: Reading a file of the protocol (a sidecar, a rescue file, a claim, a lock file).
READ = os.O_RDONLY | NOFOLLOW | CLOEXEC | NONBLOCK
#: Creating a file of our own that must not exist yet (a temporary file, a claim).
CREATE_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | CLOEXEC
