"""``doctor(directory)``: what a directory gives stagetimer's saves, and what would stop them.

Read-only: it opens no lock file and takes no claim, so it may be run beside a live suite.
The file system and its options come from ``/proc/self/mountinfo``
(``stagetimer._system.mounts``), whether saves take the claim from
``stagetimer._store.locking.policy`` (what a save would decide now); the rest from the
directory itself.
"""

from __future__ import annotations

import grp
import os
import stat
import time
from collections.abc import Callable
from typing import Any, TypeVar

import attrs

from stagetimer._errors import InvalidSettingError, SchemaVersionError, SidecarCorruptError
from stagetimer._format import HARDWARE_FILE, TIMINGS_FILE
from stagetimer._settings import CLAIM, CLAIM_STALE_SECONDS, claim, claim_stale_seconds
from stagetimer._store.locking import holders as lock_holders
from stagetimer._store.locking import policy as claim_policy
from stagetimer._store.locking.claims import (
    CLAIM_SUFFIX,
    ClaimInfo,
    blocked,
    read_claim,
    this_machine,
)
from stagetimer._store.parse import file_kind, parse_hardware, parse_timings, read_bytes
from stagetimer._store.processes import user_name
from stagetimer._store.rescue import rescue_files
from stagetimer._system.files import read_text
from stagetimer._system.mounts import (
    Mount,
    find_mount,
    lock_verdict,
    parse_etab,
    parse_mountinfo,
)

__all__ = ["DirectoryReport", "Finding", "doctor", "examine"]

#: Below this many free bytes a save is likely to fail soon.
_LOW_SPACE = 64 * 1024 * 1024


@attrs.frozen(kw_only=True)
class Finding:
    """One thing that stops (``stop``), slows (``slow``) or is worth knowing (``note``).

    ``kind`` names it for scripts: ``missing``, ``read_only``, ``not_writable``,
    ``group_cannot_write``, ``low_space``, ``no_inodes``, ``stale_claim``, ``claim_held``,
    ``foreign_claim``, ``unreadable_claim``, ``blocked_claim`` (a directory or other
    non-file at a claim's name), ``lock_held``, ``corrupt_sidecar``, ``rescue_files``,
    ``bad_setting``, ``not_a_directory``.
    """

    kind: str
    severity: str
    message: str


@attrs.frozen(kw_only=True)
class DirectoryReport:
    """What ``doctor`` found for one directory; ``to_dict()`` for JSON."""

    path: str
    exists: bool
    fs_type: str | None
    mount_point: str | None
    mount_source: str | None
    mount_options: tuple[str, ...]
    #: "yes", "no" or "unknown": whether flock excludes writers on other clients
    locks_across_clients: str
    locks_reason: str
    #: what saves here hold now: "flock only" or "flock + claim file (...)"
    protocol: str
    #: why (the file system, another way in on this host, or ``STAGETIMER_CLAIM``)
    protocol_reason: str
    free_bytes: int | None
    findings: tuple[Finding, ...]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values."""
        out = attrs.asdict(self, recurse=True)
        out["mount_options"] = list(self.mount_options)
        out["findings"] = [attrs.asdict(f) for f in self.findings]
        return out

    @property
    def ok(self) -> bool:
        """Whether nothing found stops a save."""
        return all(f.severity != "stop" for f in self.findings)


def _add(out: list[Finding], kind: str, severity: str, message: str) -> None:
    out.append(Finding(kind=kind, severity=severity, message=message))


def _existing(path: str) -> str:
    """``path`` or its nearest existing ancestor (where a save would create it)."""
    while not os.path.exists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return path


def _permissions(directory: str, mount: Mount | None, out: list[Finding]) -> None:
    if mount is not None and "ro" in mount.options:
        _add(out, "read_only", "stop", "the file system is mounted read-only")
    elif not os.access(directory, os.W_OK | os.X_OK):
        _add(out, "not_writable", "stop", "this user cannot create files here")
    try:
        st = os.stat(directory)
    except OSError:
        return
    if not st.st_mode & stat.S_IWGRP:
        mode = stat.filemode(st.st_mode)
        _add(out, "group_cannot_write", "note", (
            f"group {_group_name(st.st_gid)} cannot write here (mode {mode}): jobs of other "
            "members of the group cannot save (chmod g+ws for a shared directory)"
        ))


def _group_name(gid: int) -> str:
    """The group's name, or its number where it has none."""
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


def _space(directory: str, out: list[Finding]) -> int | None:
    try:
        st = os.statvfs(directory)
    except OSError:
        return None
    free = st.f_bavail * st.f_frsize
    if free < _LOW_SPACE:
        severity = "stop" if free == 0 else "slow"
        _add(out, "low_space", severity, f"only {free} bytes free: saves fail once it is full")
    if st.f_files and st.f_favail == 0:
        _add(out, "no_inodes", "stop", "no free inodes: no file can be created")
    return free


def _claims(directory: str, claimed: bool, out: list[Finding]) -> None:
    """Claims found in ``directory``; ``claimed``: whether saves here take the claim."""
    me = this_machine()
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return
    for name in names:
        if not name.endswith(CLAIM_SUFFIX) or name.startswith("."):
            continue
        info = read_claim(os.path.join(directory, name))
        if info is not None:
            _claim(name, info, me, claimed, out)


def _claim(name: str, info: ClaimInfo, me: dict[str, Any], claimed: bool,
           out: list[Finding]) -> None:
    """What the claim ``info`` (named ``name``) does to saves."""
    why = blocked(info)
    if why is not None:
        _add(out, "blocked_claim", "stop", why if claimed else (
            f"{why}; saves here take no claim now, but every one that does stops"))
        return
    try:
        st = os.lstat(info.path)
    except OSError:
        return
    who = info.whose()
    if info.kind == "unreadable":
        _add(out, "unreadable_claim", "slow", (
            f"{name}: a claim of {who} this user may not read (mode "
            f"{stat.filemode(st.st_mode)}): saves wait for it, and take it as stale after "
            f"{_stale_text()} without a change; if its holder has ended, it must remove it "
            "(a sticky directory lets no one else)"))
    elif info.same_machine():
        _local_claim(name, who, info, st, me, claimed, out)
    else:
        _foreign_claim(name, who, info, st, claimed, out)


def _local_claim(name: str, who: str, info: ClaimInfo, st: os.stat_result,
                 me: dict[str, Any], claimed: bool, out: list[Finding]) -> None:
    """A claim of this machine: stale where its holder is gone, else held."""
    if not info.holder_dead(me):
        _add(out, "claim_held", "note", f"{name}: held by {who}, alive")
        return
    _add(out, "stale_claim", "note", f"{name}: stale claim of {who} (gone); " + (
        "the next save clears it at once" if claimed else
        "saves here take no claim and pass it by; one that takes the claim "
        "clears it at once"
    ) + _unremovable(info, st))


def _foreign_claim(name: str, who: str, info: ClaimInfo, st: os.stat_result,
                   claimed: bool, out: list[Finding]) -> None:
    """A claim of another host: saves wait for it, or (taking no claim) do not see it."""
    if not claimed:
        _add(out, "foreign_claim", "slow", (
            f"{name}: held by {who}: a writer of another host saves here, which "
            f"saves of this host do not see; set {CLAIM}=always "
            "for every writer of this directory"
        ))
        return
    age = time.time() - st.st_mtime
    _add(out, "foreign_claim", "slow", (
        f"{name}: held by {who}, last sign of life {age:.0f} s ago; saves wait, "
        f"and break it after {_stale_text()} without one" + _unremovable(info, st)
    ))


def _stale_text() -> str:
    try:
        return f"{claim_stale_seconds():g} s"
    except InvalidSettingError:
        return f"the stale time ({CLAIM_STALE_SECONDS} is not valid, see above)"


def _unremovable(info: ClaimInfo, st: os.stat_result) -> str:
    """When this user may not move the claim away (another user's, sticky directory)."""
    try:
        parent = os.stat(os.path.dirname(info.path) or ".")
    except OSError:
        return ""
    uid = os.geteuid()
    if uid in (0, st.st_uid, parent.st_uid) or not parent.st_mode & stat.S_ISVTX:
        return ""
    return (
        f"; this user may not remove it (sticky directory): saves stop at it once it is "
        f"stale, until {user_name(st.st_uid)} or root removes it (rm '{info.path}')"
    )


def _lock_files(directory: str, out: list[Finding]) -> None:
    """Locks held on the sidecars' lock files now: every save waits for them."""
    for name in (TIMINGS_FILE, HARDWARE_FILE):
        path = os.path.join(directory, name + ".lock")
        who = lock_holders.describe(path)
        if who is None:
            continue
        _add(out, "lock_held", "slow", (
            f"{name}.lock is {who}: saves wait for it (for at most lock_timeout, then "
            "their records are rescued); a process that holds it long and is no writer of "
            "this directory (any reader may flock it) stops saves: ask its user to end it"
        ))


def _sidecars(directory: str, out: list[Finding]) -> None:
    for name, parse in ((TIMINGS_FILE, parse_timings), (HARDWARE_FILE, parse_hardware)):
        path = os.path.join(directory, name)
        try:
            parse(path, read_bytes(path))
        except (SidecarCorruptError, SchemaVersionError) as exc:
            _add(out, "corrupt_sidecar", "stop", f"{exc}; saves never overwrite it")
        except OSError as exc:
            _add(out, "corrupt_sidecar", "stop", f"{path}: cannot be read ({exc.strerror})")
    rescued = rescue_files(directory)
    if rescued:
        _add(out, "rescue_files", "note", (
            f"{len(rescued)} rescue file(s) hold records of failed saves: "
            f"stagetimer recover {directory}"
        ))


def _protocol(
    resolved: str, mounts: list[Mount], etab: str, out: list[Finding]
) -> tuple[str, str]:
    """What a save into ``resolved`` would hold now, and why (see ``claim_policy``)."""
    take, why = claim_policy.decide(resolved, mounts, parse_etab(etab))
    setting = _checked_setting(claim, "auto", out)
    _checked_setting(claim_stale_seconds, 0.0, out)
    protocol, reason = _PROTOCOLS[setting == "always", take]
    return protocol, reason.format(why=why, env=CLAIM)


#: (the setting is ``always``, auto would take the claim) -> (protocol, reason)
_PROTOCOLS: dict[tuple[bool, bool], tuple[str, str]] = {
    (True, True): (claim_policy.CLAIMED, "{why}; {env}=always takes it everywhere"),
    (True, False): (claim_policy.CLAIMED, "{env}=always (auto would take the flock only: "
                    "{why})"),
    (False, True): (claim_policy.CLAIMED, "{why}"),
    (False, False): (claim_policy.FLOCK_ONLY, "{why}; {env}=always to take the claim too"),
}

_T = TypeVar("_T")


def _checked_setting(read: Callable[[], _T], fallback: _T, out: list[Finding]) -> _T:
    """A setting's value; ``fallback`` and a finding where it is not valid."""
    try:
        return read()
    except InvalidSettingError as exc:
        _add(out, "bad_setting", "stop", f"{exc}; saves fail until it is set right "
             "(their records are kept)")
        return fallback


def doctor(directory: str | os.PathLike[str]) -> DirectoryReport:
    """Say what ``directory`` gives stagetimer's saves: file system, locks, what stops them.

    Reads only: no lock is taken and nothing is written. Example:
    ``stagetimer.doctor("exports").locks_across_clients`` is ``"no"`` on an NFS mount
    with ``local_lock=all``, where saves still stay exact through their claim files.
    """
    return examine(directory, read_text("/", claim_policy.MOUNTINFO) or "",
                   read_text("/", claim_policy.ETAB) or "")


def _not_there(path: str, where: str, findings: list[Finding]) -> str:
    """Say why no directory is at ``path`` (a file, or nothing yet under ``where``, its
    nearest existing parent); return the directory to examine instead."""
    try:
        st = os.stat(path)
    except OSError:
        _add(findings, "missing", "note",
             f"does not exist yet: the first save creates it under {where}")
        return where
    _add(findings, "not_a_directory", "stop",
         f"is {file_kind(st.st_mode)}, not a directory: no save can go here "
         "(a Recorder needs the artifact directory)")
    return os.path.dirname(path)


def _mount_fields(mount: Mount | None) -> dict[str, Any]:
    """What the report says of the file system ``directory`` is on (nothing: unknown)."""
    if mount is None:
        return {"fs_type": None, "mount_point": None, "mount_source": None,
                "mount_options": ()}
    return {"fs_type": mount.fs_type, "mount_point": mount.mount_point,
            "mount_source": mount.source, "mount_options": tuple(dict.fromkeys(mount.options))}


def examine(
    directory: str | os.PathLike[str], mountinfo: str, etab: str = ""
) -> DirectoryReport:
    """``doctor`` with the texts of a mountinfo file and an exportfs table given (tests
    give fixtures)."""
    path = os.path.abspath(os.fspath(directory))
    exists = os.path.isdir(path)
    where = path if exists else _existing(path)
    resolved = os.path.realpath(where)
    mounts = parse_mountinfo(mountinfo)
    mount = find_mount(resolved, mounts)
    verdict, reason = lock_verdict(mount)
    findings: list[Finding] = []
    if not exists:
        where = _not_there(path, where, findings)
    protocol, protocol_reason = _protocol(resolved, mounts, etab, findings)
    _permissions(where, mount, findings)
    free = _space(where, findings)
    if exists:
        _claims(path, protocol == claim_policy.CLAIMED, findings)
        _lock_files(path, findings)
        _sidecars(path, findings)
    return DirectoryReport(
        path=path,
        exists=exists,
        **_mount_fields(mount),
        locks_across_clients=verdict,
        locks_reason=reason,
        protocol=protocol,
        protocol_reason=protocol_reason,
        free_bytes=free,
        findings=tuple(findings),
    )
