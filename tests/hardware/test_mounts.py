"""The lock verdict from mountinfo lines of the file systems this kernel cannot mount.

Each line has the format of /proc/self/mountinfo (proc(5)), with the options the kernel
prints for such a mount: NFS and CIFS print theirs among the superblock options (after
the source), the kernel adds local_lock=all to a nolock NFS mount, Lustre prints flock,
localflock or noflock.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stagetimer._analysis.doctor import examine
from stagetimer._system.mounts import find_mount, lock_verdict, parse_mountinfo

ROOT = "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard\n"

NFS4_DEFAULT = (
    "52 27 0:46 / /shared rw,relatime shared:27 - nfs4 server:/export rw,vers=4.2,"
    "rsize=1048576,wsize=1048576,namlen=255,hard,proto=tcp,timeo=600,retrans=2,sec=sys,"
    "clientaddr=10.0.0.2,local_lock=none,addr=10.0.0.1"
)
NFS4_LOCAL_LOCK_ALL = NFS4_DEFAULT.replace("local_lock=none", "local_lock=all")
NFS4_LOCAL_LOCK_FLOCK = NFS4_DEFAULT.replace("local_lock=none", "local_lock=flock")
NFS4_LOCAL_LOCK_POSIX = NFS4_DEFAULT.replace("local_lock=none", "local_lock=posix")
NFS3_NOLOCK = (
    "53 27 0:47 / /shared rw,relatime shared:28 - nfs server:/export rw,vers=3,"
    "rsize=1048576,wsize=1048576,namlen=255,hard,nolock,proto=tcp,timeo=600,retrans=2,"
    "sec=sys,mountaddr=10.0.0.1,mountvers=3,mountport=20048,mountproto=udp,"
    "local_lock=all,addr=10.0.0.1"
)
LUSTRE_FLOCK = (
    "80 27 0:52 / /shared rw,relatime shared:60 - lustre 10.0.0.1@o2ib:/fs1 "
    "rw,flock,lazystatfs,encrypt"
)
LUSTRE_LOCALFLOCK = LUSTRE_FLOCK.replace("rw,flock,", "rw,localflock,")
LUSTRE_NOFLOCK = LUSTRE_FLOCK.replace("rw,flock,", "rw,noflock,")
LUSTRE_NEITHER = LUSTRE_FLOCK.replace("rw,flock,", "rw,")
CIFS_NOBRL = (
    "60 27 0:50 / /shared rw,relatime shared:30 - cifs //server/share rw,vers=3.1.1,"
    "cache=strict,username=u,uid=0,noforceuid,gid=0,noforcegid,addr=10.0.0.1,"
    "file_mode=0755,dir_mode=0755,soft,nounix,serverino,mapposix,nobrl,rsize=4194304,"
    "wsize=4194304,bsize=1048576,echo_interval=60,actimeo=1"
)
CIFS_DEFAULT = CIFS_NOBRL.replace("mapposix,nobrl,", "mapposix,")
BINDFS = (
    "45 27 0:40 / /shared rw,nosuid,nodev,relatime - fuse /data rw,user_id=0,group_id=0,"
    "default_permissions,allow_other"
)
CEPH_FUSE = (
    "46 27 0:41 / /shared rw,nosuid,nodev,relatime - fuse.ceph-fuse ceph-fuse rw,"
    "user_id=0,group_id=0,allow_other"
)
GPFS = "47 27 0:42 / /shared rw,relatime - gpfs gpfs1 rw"


@pytest.mark.parametrize(
    ("line", "verdict", "reason"),
    [
        (NFS4_DEFAULT, "yes", "local_lock=none"),
        (NFS4_LOCAL_LOCK_POSIX, "yes", "local_lock=posix"),
        (NFS4_LOCAL_LOCK_ALL, "no", "local_lock=all"),
        (NFS4_LOCAL_LOCK_FLOCK, "no", "local_lock=flock"),
        (NFS3_NOLOCK, "no", "nolock"),
        (LUSTRE_FLOCK, "yes", "mounted flock"),
        (LUSTRE_LOCALFLOCK, "no", "localflock"),
        (LUSTRE_NOFLOCK, "no", "noflock"),
        (LUSTRE_NEITHER, "unknown", "depends on the version"),
        (CIFS_NOBRL, "no", "nobrl"),
        (CIFS_DEFAULT, "yes", "byte-range lock"),
        (BINDFS, "unknown", "FUSE"),
        (CEPH_FUSE, "yes", "CephFS"),
        (GPFS, "unknown", "gpfs"),
        (ROOT, "yes", "local file system (ext4)"),
    ],
)
def test_the_lock_verdict_follows_the_mount_options(line: str, verdict: str, reason: str) -> None:
    mount = find_mount("/shared/exports/ippo", parse_mountinfo(ROOT + line + "\n"))
    assert mount is not None
    got, why = lock_verdict(mount)
    assert (got, reason in why) == (verdict, True), why


def test_the_deepest_mount_holding_the_path_is_used_and_a_later_one_wins() -> None:
    over = NFS4_DEFAULT.replace("52 27", "90 52")  # mounted again on top of the same point
    text = ROOT + NFS3_NOLOCK + "\n" + over + "\n"
    mount = find_mount("/shared/x", parse_mountinfo(text))
    assert mount is not None
    assert (mount.fs_type, mount.option("local_lock")) == ("nfs4", "none")
    outside = find_mount("/sharedother/x", parse_mountinfo(text))
    assert outside is not None and outside.mount_point == "/"


def test_octal_escapes_in_paths_are_decoded() -> None:
    line = r"61 27 0:51 / /mnt/my\040share rw - cifs //srv/a\040b rw,nobrl"
    mount = find_mount("/mnt/my share/exp", parse_mountinfo(ROOT + line + "\n"))
    assert mount is not None
    assert (mount.mount_point, mount.source) == ("/mnt/my share", "//srv/a b")


def test_malformed_lines_are_skipped() -> None:
    mounts = parse_mountinfo("garbage\n1 2 3\n" + ROOT)
    assert [m.mount_point for m in mounts] == ["/"]


def test_no_mount_found_is_unknown_with_the_reason() -> None:
    assert lock_verdict(None) == (
        "unknown", "no mount found for this path in /proc/self/mountinfo"
    )


def test_examine_reports_a_fixture_mount_for_a_real_directory(tmp_path: Path) -> None:
    # The fixture says the directory is on an NFS mount with local_lock=all.
    line = NFS4_LOCAL_LOCK_ALL.replace("/shared", str(tmp_path))
    report = examine(tmp_path, ROOT + line + "\n")
    assert (report.fs_type, report.mount_point, report.locks_across_clients) == (
        "nfs4", str(tmp_path), "no"
    )
    assert "local_lock=all" in report.mount_options
    assert report.to_dict()["locks_reason"] == report.locks_reason
