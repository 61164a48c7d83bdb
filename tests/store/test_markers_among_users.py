"""Started markers among users who do not trust each other.

Real users of one group (``useradd``), shared group directories (2770, and 3770: sticky,
as on cluster scratch), real processes killed inside a stage. A marker can be written
only by its writer (``0644`` whatever the umask), the markers' directory is sticky
wherever others may write in it, and a reader trusts a marker no further than its file
allows: one others may write, or owned by another user than the writer it names,
decides nothing, neither its own outcome nor as a later attempt against another.
Every process runs as its user with a timeout.
"""

from __future__ import annotations

import json
import os
import pwd
import stat
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.attempt_markers import KILLED, iso, marker, utc
from helpers.users import Users, as_user, python, shared_users

from stagetimer._format import ATTEMPTS_DIR

pytestmark = [pytest.mark.root, pytest.mark.slow]

#: As its user: try to rewrite, rename over and remove the marker argv[1]; print what
#: each attempt gave.
TAMPER = textwrap.dedent("""
    import errno, json, os, sys
    path = sys.argv[1]
    out = {}
    def attempt(name, action):
        try:
            action()
            out[name] = "done"
        except OSError as exc:
            out[name] = errno.errorcode[exc.errno]
    def rewrite():
        with open(path, "r+") as f:
            f.write("{}")
    def rename_over():
        mine = os.path.join(os.path.dirname(path), ".mallory")
        with open(mine, "w") as f:
            f.write("{}")
        try:
            os.rename(mine, path)
        finally:
            if os.path.exists(mine):
                os.unlink(mine)
    attempt("rewrite", rewrite)
    attempt("rename_over", rename_over)
    attempt("remove", lambda: os.unlink(path))
    print(json.dumps(out))
""")

#: As its user: every attempt under argv[1], as JSON.
READ = textwrap.dedent("""
    import json, sys
    from stagetimer._analysis.attempts.scan import scan_attempts
    found, problems = scan_attempts([sys.argv[1]])
    print(json.dumps([{"id": a.attempt_id, "state": a.state, "cause": a.cause,
                       "exception": a.exception, "seconds": a.seconds,
                       "evidence": a.evidence} for a in found]))
""")

#: As its user: write argv[2] (JSON) to the new file argv[1] with mode argv[3] (octal).
WRITE = textwrap.dedent("""
    import os, sys
    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, sys.argv[2].encode())
    os.fchmod(fd, int(sys.argv[3], 8))
    os.close(fd)
""")


@pytest.fixture
def users() -> Iterator[Users]:
    with shared_users("stmk") as made:
        yield made


def _uid(user: str) -> int:
    return pwd.getpwnam(user).pw_uid


def _killed(users: Users, art: Path, umask: str = "002") -> Path:
    """Alice's attempt killed inside its stage: its marker is left."""
    done = as_user(users, users.alice, python(), "-c", KILLED, str(art), "train", umask=umask)
    assert done.returncode == -9, done.stderr
    (left,) = (art / ATTEMPTS_DIR).glob("*.json")
    return left


def _read(users: Users, user: str, art: Path) -> list[dict[str, Any]]:
    done = as_user(users, user, python(), "-c", READ, str(art))
    assert done.returncode == 0, done.stderr
    found: list[dict[str, Any]] = json.loads(done.stdout)
    return found


def _plant(users: Users, user: str, path: Path, content: dict[str, Any], mode: int) -> None:
    done = as_user(users, user, python(), "-c", WRITE, str(path), json.dumps(content),
                   f"{mode:o}")
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("parent_mode", [0o2770, 0o3770], ids=["2770", "3770"])
def test_a_marker_is_its_writers_alone_whatever_the_umask(
    users: Users, parent_mode: int
) -> None:
    art = users.shared("scratch", parent_mode) / "art"
    art.mkdir()
    os.chown(art, 0, os.stat(art.parent).st_gid)
    art.chmod(parent_mode)

    left = _killed(users, art, umask="002")  # a umask that gives the group write

    markers_dir = os.stat(art / ATTEMPTS_DIR)
    assert 0o644 == stat.S_IMODE(os.stat(left).st_mode)
    assert markers_dir.st_mode & stat.S_ISVTX, oct(markers_dir.st_mode)
    assert markers_dir.st_mode & 0o070 == 0o070  # the group may still start attempts
    tampered = as_user(users, users.bob, python(), "-c", TAMPER, str(left))
    assert tampered.returncode == 0, tampered.stderr
    assert {"rewrite": "EACCES", "rename_over": "EPERM", "remove": "EPERM"} == json.loads(
        tampered.stdout
    )
    assert "train" == json.loads(left.read_text())["stage"]


def test_a_marker_of_another_owner_naming_the_reader_decides_nothing(users: Users) -> None:
    art = users.shared("scratch", 0o3770) / "art"
    _killed(users, art)
    now = utc(2026, 12, 1, 12, 0, 0)
    lie = marker("train", started_at=iso(now), outcome="raised",
                 exception="torch.OutOfMemoryError", seconds=1e6, ended_at=iso(now),
                 writer={"uid": _uid(users.alice)})
    _plant(users, users.bob, art / ATTEMPTS_DIR / f"{lie['attempt_id']}.json", lie, 0o644)

    found = {a["id"]: a for a in _read(users, users.alice, art)}

    planted = found[lie["attempt_id"]]
    assert ("unknown", None, None, None) == (
        planted["state"], planted["cause"], planted["exception"], planted["seconds"]
    ), planted
    assert f"belongs to uid {_uid(users.bob)}" in planted["evidence"]


def test_a_group_writable_marker_rewritten_in_place_decides_nothing(users: Users) -> None:
    art = users.shared("scratch", 0o3770) / "art"
    left = _killed(users, art)
    left.chmod(0o664)  # as markers were made before: the group may write them
    content = json.loads(left.read_text())
    content.update(outcome="raised", exception="MalloryWasHere", seconds=1e6,
                   ended_at=content["started_at"])
    rewrite = textwrap.dedent("""
        import sys
        with open(sys.argv[1], "r+") as f:
            f.truncate()
            f.write(sys.argv[2])
    """)
    done = as_user(users, users.bob, python(), "-c", rewrite, str(left), json.dumps(content))
    assert done.returncode == 0, done.stderr
    assert os.stat(left).st_uid == _uid(users.alice)  # still Alice's file

    (attempt,) = _read(users, users.alice, art)

    assert ("unknown", None, None) == (
        attempt["state"], attempt["exception"], attempt["seconds"]
    ), attempt
    assert "writable by its group" in attempt["evidence"]


def test_an_untrusted_marker_is_no_later_attempt_against_another(users: Users) -> None:
    art = users.shared("scratch", 0o3770) / "art"
    (art / ATTEMPTS_DIR).mkdir(parents=True)
    os.chown(art / ATTEMPTS_DIR, 0, os.stat(art.parent).st_gid)
    (art / ATTEMPTS_DIR).chmod(0o3777)
    started = utc(2026, 12, 1, 12, 0, 0)
    # Alice's attempt on another node: nothing here can tell whether it runs.
    hers = marker("train", started_at=iso(started),
                  writer={"uid": _uid(users.alice), "host": "node-elsewhere",
                          "boot_id": "00000000-0000-0000-0000-000000000000"})
    _plant(users, users.alice, art / ATTEMPTS_DIR / f"{hers['attempt_id']}.json", hers, 0o644)
    # Bob's marker of the same run, later, naming Alice as its writer.
    later = marker("train", started_at=iso(utc(2026, 12, 1, 13, 0, 0)),
                   writer={"uid": _uid(users.alice), "host": "node-elsewhere",
                           "boot_id": "00000000-0000-0000-0000-000000000000"})
    _plant(users, users.bob, art / ATTEMPTS_DIR / f"{later['attempt_id']}.json", later, 0o644)

    found = {a["id"]: a for a in _read(users, users.alice, art)}

    assert "unknown" == found[hers["attempt_id"]]["state"], found[hers["attempt_id"]]
    assert "unknown" == found[later["attempt_id"]]["state"]
