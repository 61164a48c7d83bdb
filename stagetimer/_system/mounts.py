"""Which mount holds a path, and whether ``flock`` there excludes writers of other clients.

Used by ``doctor`` (what it says), by the save (``is_local``: whether a sidecar that
does not parse may be a stale view of another client's write, worth reading again) and
by the cgroup probe (which cgroup and cgroup2 mounts show the process's groups).

Read from ``/proc/self/mountinfo`` (proc(5), "/proc/pid/mountinfo"): one line per mount,

    36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue

mount id, parent id, device, root, mount point, per-mount options, optional fields up to
a lone ``-``, then the file system type, the source and the per-superblock options.
Spaces, tabs, newlines and backslashes in paths are written as octal escapes (``\\040``).

Also what else on this host reaches a directory of a local disk: FUSE mounts that show it
(``fuse_views``) and the NFS server's exports (``parse_etab``, ``under_exports``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

import attrs

from stagetimer._system.files import kernel_lines, read_text

__all__ = [
    "Mount",
    "find_mount",
    "fuse_views",
    "is_local",
    "is_local_type",
    "location",
    "lock_verdict",
    "mount_of",
    "parse_etab",
    "parse_mountinfo",
    "under_exports",
]

_OCTAL = re.compile(r"\\([0-7]{3})")


def _unescape(field: str) -> str:
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), field)


@attrs.frozen(kw_only=True)
class Mount:
    """One line of mountinfo."""

    mount_point: str
    root: str
    fs_type: str
    source: str
    mount_options: tuple[str, ...]
    #: the superblock's options (NFS and CIFS put theirs there; cgroup v1 its controllers)
    super_options: tuple[str, ...]
    #: ``major:minor`` of the file system: every bind mount of one shows the same
    device: str = ""

    @property
    def options(self) -> tuple[str, ...]:
        """The per-mount options, then the superblock's."""
        return self.mount_options + self.super_options

    def option(self, name: str) -> str | None:
        """The value of ``name=value`` (the last one), ``""`` for a bare flag, else None."""
        found: str | None = None
        for option in self.options:
            key, sep, value = option.partition("=")
            if key == name:
                found = value if sep else ""
        return found


def parse_mountinfo(text: str) -> list[Mount]:
    """Every well-formed line of a mountinfo text, in order (later lines mount on top)."""
    # A line ends at "\n" only: see kernel_lines.
    parsed = (_mount(line.split(" ")) for line in kernel_lines(text))
    return [mount for mount in parsed if mount is not None]


def _mount(fields: list[str]) -> Mount | None:
    """The mount one mountinfo line describes (split at spaces); None when malformed."""
    try:
        sep = fields.index("-", 6)
    except ValueError:
        return None
    if len(fields) < sep + 3:
        return None
    per_super = fields[sep + 3] if len(fields) > sep + 3 else ""
    return Mount(
        mount_point=_unescape(fields[4]),
        root=_unescape(fields[3]),
        fs_type=fields[sep + 1],
        source=_unescape(fields[sep + 2]),
        mount_options=_options(fields[5]),
        super_options=_options(per_super),
        device=fields[2],
    )


def _options(field: str) -> tuple[str, ...]:
    """The options of a comma-separated list, empty ones left out."""
    return tuple(option for option in field.split(",") if option)


def _inside(path: str, mount_point: str) -> bool:
    return mount_point == "/" or path == mount_point or path.startswith(mount_point + "/")


def find_mount(path: str, mounts: list[Mount]) -> Mount | None:
    """The mount that holds the absolute, resolved ``path``: the deepest, the last listed."""
    best: Mount | None = None
    for mount in mounts:
        if _inside(path, mount.mount_point) and (
            best is None or len(mount.mount_point) >= len(best.mount_point)
        ):
            best = mount
    return best


#: Local file systems: one kernel sees every writer, so flock excludes them all.
_LOCAL = frozenset((
    "ext2", "ext3", "ext4", "xfs", "btrfs", "zfs", "f2fs", "tmpfs", "ramfs", "overlay",
    "reiserfs", "jfs", "bcachefs", "hfsplus", "vfat", "exfat", "ntfs", "ntfs3",
))


def _nfs(mount: Mount) -> tuple[str, str]:
    # nfs(5): "nolock" keeps locks local (and implies local_lock=all); "local_lock=flock"
    # or "=all" keeps flock local; otherwise the client emulates flock with byte-range
    # locks that the server (NLM for v3, the protocol itself for v4) arbitrates.
    if mount.option("nolock") is not None:
        return "no", "NFS mounted nolock: locks stay on this client"
    local = mount.option("local_lock")
    if local in ("flock", "all"):
        return "no", f"NFS mounted local_lock={local}: flock stays on this client"
    return "yes", f"NFS with local_lock={local or 'none'}: flock goes to the server"


def _lustre(mount: Mount) -> tuple[str, str]:
    # Lustre's operations manual, "Mounting with flock": flock coherent across clients,
    # localflock client-local, noflock refused.
    if mount.option("flock") is not None:
        return "yes", "Lustre mounted flock: locks are coherent across clients"
    if mount.option("localflock") is not None:
        return "no", "Lustre mounted localflock: locks stay on this client"
    if mount.option("noflock") is not None:
        return "no", "Lustre mounted noflock: flock is refused"
    return "unknown", "Lustre without flock/localflock/noflock: the default depends on the version"


def _cifs(mount: Mount) -> tuple[str, str]:
    fs = mount.fs_type
    if mount.option("nobrl") is not None:
        return "no", f"{fs} mounted nobrl: byte-range locks are not sent to the server"
    return "yes", f"{fs}: flock is sent to the server as a byte-range lock"


def _ceph(mount: Mount) -> tuple[str, str]:
    return "yes", "CephFS: the metadata server arbitrates flock"


def _fuse(mount: Mount) -> tuple[str, str]:
    return "unknown", (
        f"FUSE ({mount.fs_type}): flock stays in this client's kernel unless the file system "
        "forwards locks, which mountinfo does not show"
    )


def _local(mount: Mount) -> tuple[str, str]:
    return "yes", f"local file system ({mount.fs_type}): one kernel sees every writer"


def _unknown(mount: Mount) -> tuple[str, str]:
    return "unknown", f"{mount.fs_type}: not a file system stagetimer knows"


#: The verdict of each file system type known by name (FUSE ones are known by prefix).
_VERDICTS: dict[str, Callable[[Mount], tuple[str, str]]] = {
    "nfs": _nfs,
    "nfs4": _nfs,
    "lustre": _lustre,
    "cifs": _cifs,
    "smb3": _cifs,
    "ceph": _ceph,
    "fuse.ceph-fuse": _ceph,  # before the FUSE prefix: CephFS's own client
    **dict.fromkeys(_LOCAL, _local),
}


def _is_fuse(fs_type: str) -> bool:
    return fs_type == "fuse" or fs_type.startswith(("fuse.", "fuseblk"))


def lock_verdict(mount: Mount | None) -> tuple[str, str]:
    """Whether ``flock`` on ``mount`` excludes writers of other clients: yes/no/unknown, why."""
    if mount is None:
        return "unknown", "no mount found for this path in /proc/self/mountinfo"
    verdict = _VERDICTS.get(mount.fs_type) or (_fuse if _is_fuse(mount.fs_type) else _unknown)
    return verdict(mount)


def mount_of(path: str, mountinfo: str) -> Mount | None:
    """The mount holding ``path`` (resolved; a missing tail is looked up by its parent)."""
    return find_mount(os.path.realpath(path), parse_mountinfo(mountinfo))


#: st_dev -> whether that file system is a known local one (read once per process).
_local_by_device: dict[int, bool] = {}


def is_local(directory: str) -> bool:
    """Whether ``directory`` is on a known local file system (one kernel sees every write).

    False for network and FUSE file systems and for anything unknown; cached per device.
    """
    try:
        device = os.stat(directory).st_dev
    except OSError:
        return False
    known = _local_by_device.get(device)
    if known is None:
        text = read_text("/", "/proc/self/mountinfo")
        mount = None if text is None else mount_of(directory, text)
        known = _local_by_device[device] = mount is not None and mount.fs_type in _LOCAL
    return known


def is_local_type(fs_type: str) -> bool:
    """Whether ``fs_type`` is a local file system (one kernel sees every writer)."""
    return fs_type in _LOCAL


def location(path: str, mounts: list[Mount]) -> tuple[str, str] | None:
    """Where the absolute ``path`` lies: (the file system's device, the path from its root).

    One directory reached through several bind mounts has one location (mountinfo's
    ``root`` is the part of the file system a mount shows); None when no mount holds it.
    """
    mount = find_mount(path, mounts)
    if mount is None:
        return None
    rest = path if mount.mount_point == "/" else path[len(mount.mount_point):]
    inside = mount.root.rstrip("/") + "/" + rest.strip("/")
    return mount.device, inside.rstrip("/") or "/"


def _holds(outer: str, inner: str) -> bool:
    """Whether the absolute path ``inner`` is ``outer`` or lies inside it."""
    return inner == outer or inner.startswith(outer.rstrip("/") + "/")


def fuse_views(path: str, mounts: list[Mount]) -> list[Mount]:
    """The FUSE mounts of this host that may show the resolved ``path`` from elsewhere.

    Such a view (bindfs, for one) is another way in to ``path``'s file system whose
    ``flock`` never meets one taken on the file system itself. A FUSE mount counts when
    its source is an absolute path that is ``path``, lies inside it or above it (compared
    where they lie, so bind mounts of either do not hide it). bindfs gives the resolved
    source directory as the source, except when that path holds a comma or white space:
    then the source is ``bindfs`` and the type ``fuse.bindfs`` (bindfs 1.14.7, seen in
    mountinfo), and such a mount counts too, as it may show anything.
    """
    here = location(path, mounts)
    return [m for m in mounts if _is_fuse(m.fs_type) and _may_show(m, here, mounts)]


def _may_show(fuse: Mount, here: tuple[str, str] | None, mounts: list[Mount]) -> bool:
    """Whether the FUSE mount ``fuse`` may show the location ``here`` (see ``fuse_views``)."""
    if not fuse.source.startswith("/"):
        return fuse.fs_type == "fuse.bindfs"
    there = location(fuse.source, mounts)
    return _holds_place(here, there) or _holds_place(there, here)


def _holds_place(outer: tuple[str, str] | None, inner: tuple[str, str] | None) -> bool:
    """Whether the location ``inner`` is ``outer`` or lies inside it: one file system, and
    a path inside (None, no location, holds nothing and lies nowhere)."""
    if outer is None or inner is None or outer[0] != inner[0]:
        return False
    return _holds(outer[1], inner[1])


def parse_etab(text: str) -> list[str]:
    """The exported paths of an exportfs table, in order.

    Each line is the path, a tab, then the client and its options, as in
    ``/srv/ex\\040port<TAB>*(rw,sync,...)``. exportfs writes a space in the path as
    ``\\040`` and a backslash as ``\\134`` (seen with nfs-utils 2.6.2); one path exported
    to several clients has a line per client and is listed once here.
    """
    paths: dict[str, None] = {}
    for line in kernel_lines(text):
        field = line.split("\t", 1)[0].split(" ", 1)[0]
        if field.startswith("/"):
            paths[_unescape(field)] = None
    return list(paths)


def under_exports(path: str, exports: list[str], mounts: list[Mount]) -> str | None:
    """The first of ``exports`` that holds the resolved ``path``, or None.

    Compared where they lie (see ``location``): an export of a directory that a bind
    mount shows here counts too.
    """
    here = location(path, mounts)
    return next((e for e in exports if _holds_place(location(e, mounts), here)), None)
