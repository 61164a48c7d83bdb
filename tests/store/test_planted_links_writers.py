"""No file the project writes goes through a link another group member planted.

Real users of one group (``useradd``): Bob plants, in a shared group directory (2770, as
on cluster scratch), symbolic links to Alice's private 0600 file (in her 0700 home) at
every name a writer could be predicted to use: the output's own name, the temporary
names ``.<name>.<pid>.tmp`` of the next 4,000 pids, and the fixed ``.<name>.tmp``. Then
Alice writes there: an HTML report, an HTML comparison, a report's and a comparison's
picture, an OTLP file, TensorBoard events (sidecars: ``test_hostile_files``). Her private
file must be left as it was, and the output must be a file of hers. Every process runs
as its user with a timeout.
"""

from __future__ import annotations

import importlib.util
import os
import stat
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.users import Users, as_user, python, shared_users

pytestmark = [pytest.mark.root, pytest.mark.slow]

SECRET = "alice's private notes\n"

RECORD = textwrap.dedent("""
    import sys
    from stagetimer import Recorder, stage
    rec = Recorder(sys.argv[1])
    for idx in range(3):
        with stage("train", run_idx=idx, recorder=rec):
            pass
""")

#: As Bob: plant links to argv[1] at argv[3:] names in directory argv[2], and at the
#: predictable temporary names of each of them for the next 4,000 pids.
PLANT = textwrap.dedent("""
    import os, sys
    target, where, names = sys.argv[1], sys.argv[2], sys.argv[3:]
    last = int(open("/proc/sys/kernel/ns_last_pid").read())
    planted = 0
    for name in names:
        candidates = [name, f".{name}.tmp", f".{name}.tmp-0"]
        candidates += [f".{name}.{pid}.tmp" for pid in range(last, last + 4000)]
        for candidate in candidates:
            try:
                os.symlink(target, os.path.join(where, candidate))
                planted += 1
            except FileExistsError:
                pass
    print(planted)
""")


@pytest.fixture
def users() -> Iterator[Users]:
    with shared_users("stln") as made:
        yield made


def _has(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


#: name of the case -> (the output's name in the shared directory, the command's
#: arguments after ``python -m stagetimer`` with {out}, {art}, {art2} filled in, the
#: module it needs).
WRITERS = {
    "report --html": ("page.html", ["report", "{art}", "--html", "{out}"], None),
    "compare --html": ("cmp.html", ["compare", "{art}", "{art2}", "--html", "{out}"], None),
    "report --plot": ("plot.png", ["report", "{art}", "--plot", "{out}"], "matplotlib"),
    "compare --plot": ("cmp.svg", ["compare", "{art}", "{art2}", "--plot", "{out}"],
                       "matplotlib"),
}


def _setup(users: Users) -> tuple[Path, Path, Path, Path]:
    """Alice's private file, the shared directory, and two recorded directories of hers."""
    home = users.base / "alice-home"
    home.mkdir()
    secret = home / "private.txt"
    secret.write_text(SECRET)
    secret.chmod(0o600)
    os.chown(secret, *_ids(users, users.alice))
    os.chown(home, *_ids(users, users.alice))
    home.chmod(0o700)
    shared = users.shared("scratch", 0o2770)
    arts = []
    for name in ("art", "art2"):
        art = shared / name
        done = as_user(users, users.alice, python(), "-c", RECORD, str(art))
        assert done.returncode == 0, done.stderr
        arts.append(art)
    return secret, shared, arts[0], arts[1]


def _ids(users: Users, user: str) -> tuple[int, int]:
    import grp
    import pwd

    return pwd.getpwnam(user).pw_uid, grp.getgrnam(users.group).gr_gid


def _plant(users: Users, secret: Path, where: Path, *names: str) -> None:
    done = as_user(users, users.bob, python(), "-c", PLANT, str(secret), str(where), *names)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) >= 4000 * len(names)


def _intact(secret: Path) -> None:
    st = os.lstat(secret)
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
    assert SECRET == secret.read_text(), "a writer wrote through a planted link"


@pytest.mark.parametrize("case", list(WRITERS))
def test_no_output_is_written_through_a_planted_link(users: Users, case: str) -> None:
    name, argv, needs = WRITERS[case]
    if needs is not None and not _has(needs):
        pytest.skip(f"{needs} is not installed in this interpreter")
    secret, shared, art, art2 = _setup(users)
    out = shared / name
    _plant(users, secret, shared, name)

    filled = [a.format(out=out, art=art, art2=art2) for a in argv]
    done = as_user(users, users.alice, python(), "-m", "stagetimer", *filled, timeout=120)

    _intact(secret)
    assert done.returncode == 0, done.stderr
    st = os.lstat(out)
    assert stat.S_ISREG(st.st_mode), f"{out} is not a regular file: {done.stderr}"
    assert st.st_uid == _ids(users, users.alice)[0] and st.st_size > 0


def test_an_otlp_export_never_reads_or_appends_through_a_planted_link(users: Users) -> None:
    # The OTLP file is appended to: it is read first (which spans it holds), so a link at
    # its name is refused and named, never read or written through.
    if not _has("opentelemetry.proto"):
        pytest.skip("opentelemetry-proto is not installed in this interpreter")
    secret, shared, art, _ = _setup(users)
    out = shared / "spans.jsonl"
    _plant(users, secret, shared, out.name)
    done = as_user(users, users.alice, python(), "-m", "stagetimer", "export", "otlp",
                   str(art), "--to", str(out))
    _intact(secret)
    assert done.returncode == 1 and "spans.jsonl" in done.stderr
    assert out.is_symlink()  # named and left alone, nothing copied out of the secret


def test_tensorboard_events_are_not_written_through_planted_links(users: Users) -> None:
    if not _has("tensorboard"):
        pytest.skip("tensorboard is not installed in this interpreter")
    secret, shared, art, _ = _setup(users)
    tb = shared / "tb"
    tb.mkdir()
    shutil_chown(tb, users)
    run = tb / "art"  # the run directory the export writes into
    run.mkdir()
    shutil_chown(run, users)
    # TensorBoard's writer names its file events.out.tfevents.<seconds>.<host>.<pid>.<n>
    # (predictable): plant links for the next seconds and pids.
    import socket
    import time

    host = socket.gethostname()
    last = int(Path("/proc/sys/kernel/ns_last_pid").read_text())
    now = int(time.time())
    names = [f"events.out.tfevents.{t}.{host}.{p}.0" for t in range(now, now + 30)
             for p in range(last, last + 300)]
    plant = textwrap.dedent("""
        import os, sys
        for name in sys.argv[3:]:
            os.symlink(sys.argv[1], os.path.join(sys.argv[2], name))
    """)
    for k in range(0, len(names), 2000):
        done = as_user(users, users.bob, python(), "-c", plant, str(secret), str(run),
                       *names[k:k + 2000])
        assert done.returncode == 0, done.stderr

    done = as_user(users, users.alice, python(), "-m", "stagetimer", "export",
                   "tensorboard", str(art), "--to", str(tb), timeout=120)

    _intact(secret)
    assert done.returncode == 0, done.stderr
    mine = [p for p in run.iterdir() if not p.is_symlink()]
    assert mine and all(p.stat().st_uid == _ids(users, users.alice)[0] for p in mine)


def shutil_chown(path: Path, users: Users) -> None:
    os.chown(path, 0, _ids(users, users.alice)[1])
    path.chmod(0o2770)
