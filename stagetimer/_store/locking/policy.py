"""Which saves take the cross-client claim: those that a writer of another client may meet.

The claim (``stagetimer._store.locking.claims``) keeps saves exact where ``flock`` is per client
(NFS, FUSE, CIFS, Lustre). On a local disk that only this host's kernel reaches, every
writer's ``flock`` meets every other's, and the claim only costs time (about a tenth of
a save's floor). ``STAGETIMER_CLAIM`` says what saves do:

- ``auto`` (the default, also when unset or empty): take the claim unless the directory
  is on a known local file system *and* this host shows no other way in to it: no FUSE
  mount that shows it from elsewhere (``_mounts.fuse_views``: a bindfs view's writers
  take the claim, and their ``flock`` never meets ours) and no export of this host's NFS
  server that holds it (``/var/lib/nfs/etab``: NFS clients' locks do not meet a local
  ``flock``).
- ``always``: take it on every file system.

``auto`` decides at the first save into each directory in a process and keeps the
answer (a forked child keeps its parent's: same mounts), so later saves read nothing
from ``/proc``. It cannot see a server that exports the disk without exportfs (Samba, a
user-space NFS server), nor a FUSE view mounted after that first save: there every
writer of the directory must set ``always``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from stagetimer._settings import CLAIM, claim
from stagetimer._system.files import read_text

if TYPE_CHECKING:
    from stagetimer._system.mounts import Mount

# ``_system.mounts`` (an attrs class, 1.5 ms) is imported at a process's first
# decision, not with ``import stagetimer`` (which imports the save path's lock).

__all__ = [
    "CLAIMED",
    "ETAB",
    "FLOCK_ONLY",
    "MOUNTINFO",
    "decide",
    "needed",
    "read_exports",
]

#: exportfs's table of what this host's NFS server exports now (exportfs(8)); a module
#: constant so that tests can point it at a table of their own.
ETAB = "/var/lib/nfs/etab"
MOUNTINFO = "/proc/self/mountinfo"
#: What saves hold, as ``doctor`` says it.
CLAIMED = "flock + claim file (O_EXCL, checked before rename)"
FLOCK_ONLY = "flock only"

#: absolute directory -> what ``auto`` decided at its first save in this process
_decided: dict[str, tuple[bool, str]] = {}


def read_exports() -> list[str]:
    """The paths this host's NFS server exports now (none when there is no server)."""
    from stagetimer._system.mounts import parse_etab

    return parse_etab(read_text("/", ETAB) or "")  # no NFS server: no table


def decide(directory: str, mounts: list[Mount], exports: list[str]) -> tuple[bool, str]:
    """What ``auto`` does in the resolved ``directory``: whether saves take the claim, why.

    ``mounts``: this host's mounts (``parse_mountinfo``); ``exports``: its NFS exports.
    """
    from stagetimer._system.mounts import find_mount, fuse_views, is_local_type, under_exports

    mount = find_mount(directory, mounts)
    if mount is None:
        return True, "no mount found for it in /proc/self/mountinfo"
    fs = mount.fs_type
    if not is_local_type(fs):
        return True, f"exact across clients ({fs})"
    for view in fuse_views(directory, mounts):
        return True, (
            f"exact across clients: this {fs} directory is also reached through the FUSE "
            f"mount {view.mount_point} ({view.fs_type} of {view.source}), whose flock is "
            "its own"
        )
    export = under_exports(directory, exports, mounts)
    if export is not None:
        return True, (
            f"exact across clients: {export} is exported by this host's NFS server "
            "(/var/lib/nfs/etab), whose clients' locks do not meet a local flock"
        )
    return False, f"local file system ({fs}), no other way in on this host"


def needed(directory: str) -> tuple[bool, str]:
    """Whether a save into ``directory`` (which exists) takes the claim, and why.

    Reads the setting every time (an environment lookup); ``auto``'s answer is read from
    the mounts and exports at the first save into each directory and kept. Raises
    ``InvalidSettingError`` for a bad ``STAGETIMER_CLAIM``.
    """
    if claim() == "always":
        return True, f"{CLAIM}=always"
    key = directory if os.path.isabs(directory) else os.path.abspath(directory)
    found = _decided.get(key)
    if found is None:
        from stagetimer._system.mounts import parse_mountinfo

        found = decide(os.path.realpath(key), parse_mountinfo(read_text("/", MOUNTINFO) or ""),
                       read_exports())
        _decided[key] = found
    return found
