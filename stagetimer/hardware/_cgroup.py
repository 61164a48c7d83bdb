"""Locate the process's cgroup directory for one controller, and the ancestors above it.

The cgroup a process belongs to is named in ``/proc/self/cgroup``; the directory
that shows it is found by matching that name against the mounts listed in
``/proc/self/mountinfo``. Quirks handled here, each with its source:

- cgroup v1 lines are ``ID:ctrl[,ctrl]:/path`` and the v2 line is ``0::/path``
  (kernel ``Documentation/admin-guide/cgroup-v2.rst``, "Processes").
- A removed group is shown with a `` (deleted)`` suffix (same document).
- Hybrid layouts mount cgroup2 beside v1 hierarchies; a controller is on v2 only
  if ``<v2 mount>/cgroup.controllers`` lists it (observed here: the v2 mount
  holds only ``hugetlb`` while memory is on v1).
- Inside a cgroup namespace the path is relative to the namespace root: ``0::/``,
  or ``0::/../sibling`` when the process sits outside it, where the only
  sensible directory is the mount point itself (cgroup-v2.rst "Namespace";
  OpenJDK does the same).
- A mount whose ROOT is a subpath (containers) maps the path as OpenJDK's
  ``CgroupV1Controller::set_subsystem_path`` does: ROOT ``/`` → mount + path;
  ROOT equal to the path → the mount point; path under ROOT → mount + remainder.
  ROOT is relative to the reader's cgroup namespace like the path
  (``kernfs_path_from_node``), so it may be ``/../..``; the same rule maps
  ``/../../app`` to ``<mount>/app`` (automemlimit's ``resolveCgroupPath`` and
  automaxprocs' ``MountPoint.Translate`` agree).
- One hierarchy may be mounted several times with different ROOTs (a container's
  ``/sys/fs/cgroup`` beside the host's tree at ``/host/sys/fs/cgroup``); each
  ancestor is read through a mount that shows it, so that a limit visible through
  only one of them counts, whatever the mount order.
- Mount points carry octal escapes (``\\040`` is a space; ``fs/proc_namespace.c``
  ``mangle``).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable
from typing import TypeVar

import attrs

from stagetimer._system.files import kernel_lines, read_or_reason, read_text
from stagetimer._system.mounts import Mount, parse_mountinfo

__all__ = [
    "Cgroups",
    "Located",
    "Mount",
    "cgroup_mounts",
    "locate",
    "parse_cgroup_file",
    "read_cgroups",
    "smallest",
]

_DELETED = " (deleted)"
_Number = TypeVar("_Number", int, float)


@attrs.frozen
class Located:
    """Where a controller shows the process's cgroup: its directory and the walk up to the mount."""

    #: 1 or 2
    version: int
    mount_point: str
    #: the process's own group first, then each ancestor a mount shows, nearest first
    dirs: tuple[str, ...]
    #: a remark about how the directory was found (namespace fall-back), or ""
    note: str = ""
    #: other mount points of the same hierarchy the walk reads ancestors through
    other_mounts: tuple[str, ...] = ()

    def span(self) -> str:
        """The walk in words, without the process's own group name.

        Reasons for a missing value go into the hashed description; a leaf such as
        ``session-3.scope`` or a container id changes from one login to the next on
        the same machine, so only the count of groups and the mount points are named.
        """
        count = len(self.dirs)
        groups = "group" if count == 1 else "groups"
        mounts = " and ".join((self.mount_point, *self.other_mounts))
        return f"the {count} cgroup v{self.version} {groups} up to {mounts}"

    def noted(self, where: str) -> str:
        """``where`` followed by the note in parentheses, when there is one."""
        return f"{where} ({self.note})" if self.note else where

    def none_in(self, what: str) -> str:
        """The reason nothing was found: ``no <what> in the 3 cgroup v2 groups up to ...``."""
        return self.noted(f"no {what} in {self.span()}")

    def smallest_over(
        self, filename: str, read: Callable[[str], _Number | None]
    ) -> tuple[_Number | None, str]:
        """The smallest ``read(<dir>/<filename>)`` over the walk and its path (see ``smallest``)."""
        paths = [f"{directory}/{filename}" for directory in self.dirs]
        return smallest((read(path), path) for path in paths)


def cgroup_mounts(text: str) -> list[Mount]:
    """The cgroup and cgroup2 mounts of a ``mountinfo`` text, in file order."""
    return [m for m in parse_mountinfo(text) if m.fs_type in ("cgroup", "cgroup2")]


def parse_cgroup_file(text: str) -> list[tuple[str, tuple[str, ...], str]]:
    """``(hierarchy id, controllers, path)`` for each line of ``/proc/self/cgroup``.

    The v2 line has hierarchy ``0`` and no controllers; a `` (deleted)`` suffix is dropped.
    """
    entries: list[tuple[str, tuple[str, ...], str]] = []
    for line in kernel_lines(text):  # a cgroup name may hold "\r" or U+2028
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hierarchy, controllers, path = parts
        names = tuple(c for c in controllers.split(",") if c)
        entries.append((hierarchy, names, path.removesuffix(_DELETED)))
    return entries


def _is_under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix.rstrip("/") + "/")


def _shown_at(mount: Mount, group: str) -> str | None:
    """The directory where ``mount`` shows cgroup ``group``, or None when it does not.

    The directory is the mount point plus the group's path minus the mount's ROOT
    (proc(5) "root"; JDK ``set_subsystem_path``; automemlimit and automaxprocs take
    the path relative to ROOT the same way). Both are relative to the reader's cgroup
    namespace, so both may start with ``/..``: ROOT ``/../..`` shows ``/../../app``
    at ``<mount>/app``. A remainder that climbs (``..``) is not shown by the mount.
    """
    root = mount.root
    if group == root:
        return mount.mount_point
    prefix = root.rstrip("/")
    if not group.startswith(prefix + "/"):
        return None
    rest = group[len(prefix) :].strip("/")
    if ".." in rest.split("/"):
        return None
    return posixpath.join(mount.mount_point, rest) if rest else mount.mount_point


def _ups(path: str) -> int:
    """How many ``..`` components ``path`` starts with (``/../../app`` -> 2)."""
    count = 0
    for part in path.strip("/").split("/"):
        if part != "..":
            break
        count += 1
    return count


def _ancestors(path: str, top_ups: int) -> list[str]:
    """``path`` and each group above it, nearest first.

    Above a path's own leading ``..`` components the parents are ``/..``, ``/../..``
    and so on, up to ``top_ups`` of them: the namespace root ``/`` is not an ancestor of
    ``/../sibling``, its parent ``/..`` is.
    """
    ups = _ups(path)
    names = [p for p in path.strip("/").split("/")[ups:] if p]
    groups = []
    for keep in range(len(names), -1, -1):
        groups.append("/" + "/".join([".."] * ups + names[:keep]))
    for more in range(ups + 1, top_ups + 1):
        groups.append("/" + "/".join([".."] * more))
    return groups


def _fallback_note(mount: Mount, path: str) -> str:
    if path == "/.." or path.startswith("/../"):
        # cgroup-v2.rst "Namespace": the process is outside this namespace's root.
        return f"cgroup path {path} lies outside the namespace; using the mount point"
    return f"cgroup path {path} is not under the mount's root {mount.root}; using the mount point"


def _standard_first(mounts: list[Mount]) -> list[Mount]:
    """Mounts under /sys/fs/cgroup first, each group else in mountinfo order."""
    return sorted(mounts, key=lambda m: 0 if _is_under(m.mount_point, "/sys/fs/cgroup") else 1)


def _pick_mount(candidates: list[Mount], path: str) -> Mount:
    """Prefer a mount whose ROOT relates to the path cleanly, then one under /sys/fs/cgroup."""

    def rank(mount: Mount) -> tuple[int, int]:
        clean = mount.root == "/" or _is_under(path, mount.root)
        standard = _is_under(mount.mount_point, "/sys/fs/cgroup")
        return (0 if clean else 1, 0 if standard else 1)

    return min(candidates, key=rank)


def _walk(version: int, mounts: list[Mount], path: str) -> tuple[Located, Mount]:
    """The directories of ``path`` and of each ancestor, over every mount of one hierarchy.

    A hierarchy may be mounted more than once with different ROOTs (a container's own
    ``/sys/fs/cgroup`` rooted at its group, beside the host's tree at
    ``/host/sys/fs/cgroup`` rooted at ``/``): an ancestor's limit may be visible only
    through one of them. Each group is read through one mount (the first under
    /sys/fs/cgroup that shows it, else the first in mountinfo order), so the smallest
    limit over the walk does not depend on the order of the mounts. Also returns the
    mount that shows the nearest group.
    """
    shown = _shown(_standard_first(mounts), _ancestors(path, max(_ups(m.root) for m in mounts)))
    if not shown:
        # No mount shows the group or an ancestor: its mount point is the best guess.
        mount = _pick_mount(mounts, path)
        point = mount.mount_point
        return Located(version, point, (point,), _fallback_note(mount, path)), mount
    return _located(version, path, shown)


def _located(version: int, path: str, shown: list[tuple[str, Mount]]) -> tuple[Located, Mount]:
    """``_walk``'s answer where mounts show the group or ancestors (``shown``, nearest
    first): the directories, and the mount of the nearest, with the others noted."""
    dirs = tuple(directory for directory, _ in shown)
    first, *more = dict.fromkeys(mount for _, mount in shown)  # each mount once, in order
    note = ""
    if _shown_at(first, path) is None:
        note = f"cgroup path {path} is not shown by any mount; reading its ancestors"
    others = dict.fromkeys(m.mount_point for m in more if m.mount_point != first.mount_point)
    return Located(version, first.mount_point, dirs, note, tuple(others)), first


def _shown(ordered: list[Mount], groups: list[str]) -> list[tuple[str, Mount]]:
    """Each of ``groups`` that a mount shows: its directory through the first such mount."""
    found: list[tuple[str, Mount]] = []
    for group in groups:
        for mount in ordered:
            directory = _shown_at(mount, group)
            if directory is not None:
                found.append((directory, mount))
                break
    return found


@attrs.frozen
class Cgroups:
    """``/proc/self/cgroup`` and the cgroup mounts, parsed once and shared by every controller."""

    root: str
    entries: tuple[tuple[str, tuple[str, ...], str], ...]
    mounts: tuple[Mount, ...]
    #: ``cgroup.controllers`` of each cgroup2 mount point read so far (None: unreadable)
    _listed: dict[str, tuple[str, ...] | None] = attrs.field(factory=dict, eq=False, repr=False)

    def v2_controllers(self, mount_point: str) -> tuple[str, ...] | None:
        """The controllers ``<mount_point>/cgroup.controllers`` lists, read at most once."""
        if mount_point not in self._listed:
            text = read_text(self.root, posixpath.join(mount_point, "cgroup.controllers"))
            self._listed[mount_point] = None if text is None else tuple(text.split())
        return self._listed[mount_point]

    def locate(self, controller: str) -> Located | str:
        """Find the directories holding ``controller``'s files for this process, or say why not."""
        # cgroup v1: a controller is bound to at most one hierarchy, so a v1 line naming it wins.
        path = self._v1_path(controller)
        if path is not None:
            return self._locate_v1(controller, path)
        path = self._v2_path()
        if path is not None:
            return self._locate_v2(controller, path)
        return f"/proc/self/cgroup lists no hierarchy with the {controller} controller"

    def _v1_path(self, controller: str) -> str | None:
        """The cgroup path of the v1 line that names ``controller``, or None."""
        lines = self.entries
        return next((p for h, names, p in lines if h != "0" and controller in names), None)

    def _v2_path(self) -> str | None:
        """The cgroup path of the v2 line (hierarchy 0, no controllers), or None."""
        return next((p for h, names, p in self.entries if h == "0" and not names), None)

    def _locate_v1(self, controller: str, path: str) -> Located | str:
        v1 = [m for m in self.mounts if m.fs_type == "cgroup" and controller in m.super_options]
        if not v1:
            return f"the {controller} controller is on cgroup v1 but no such mount is visible"
        return _walk(1, v1, path)[0]

    def _locate_v2(self, controller: str, path: str) -> Located | str:
        v2 = [m for m in self.mounts if m.fs_type == "cgroup2"]
        if not v2:
            return "cgroup v2 is in use but no cgroup2 mount is visible"
        located, mount = _walk(2, v2, path)
        if controller not in (self.v2_controllers(mount.mount_point) or ()):
            return (
                f"the {controller} controller is not enabled on cgroup v2 "
                f"({posixpath.join(mount.mount_point, 'cgroup.controllers')} does not list it)"
            )
        return located


def read_cgroups(root: str) -> Cgroups | str:
    """Read and parse ``/proc/self/cgroup`` and ``/proc/self/mountinfo`` once, or say why not."""
    cgroup_text, why = read_or_reason(root, "/proc/self/cgroup")
    if cgroup_text is None:
        return f"no cgroups: {why}"
    mountinfo_text, why = read_or_reason(root, "/proc/self/mountinfo")
    if mountinfo_text is None:
        return f"cgroup mounts unknown: {why}"
    return Cgroups(
        root,
        tuple(parse_cgroup_file(cgroup_text)),
        tuple(cgroup_mounts(mountinfo_text)),
    )


def locate(root: str, controller: str, cgroups: Cgroups | str | None = None) -> Located | str:
    """Find the directories holding ``controller``'s files for this process, or say why not.

    Returns a ``Located`` (leaf first, up to the mount point) or a reason string.
    ``cgroups`` is what ``read_cgroups(root)`` returned, when the caller already has it.
    """
    if cgroups is None:
        cgroups = read_cgroups(root)
    if isinstance(cgroups, str):
        return cgroups
    return cgroups.locate(controller)


def smallest(candidates: Iterable[tuple[_Number | None, str]]) -> tuple[_Number | None, str]:
    """The smallest value and where it was read; on a tie, the first (nearest) candidate.

    Used for limits walked from the process's group up its ancestors: the tightest wins.
    """
    best: tuple[_Number | None, str] = (None, "")
    for value, where in candidates:
        if value is not None and (best[0] is None or value < best[0]):
            best = (value, where)
    return best
