"""Claims and locks among users who do not trust each other: every wait ends within
``lock_timeout`` (no spin), a claim this user may not read or remove is named with whose
it is and what to do, a directory at a claim's name stops saves at once and ``doctor``
names it, and another user's read-only ``flock`` is named by the save and by ``doctor``.

Real users of one group (``useradd``), a sticky group directory (mode 3770) as on
cluster scratch, umask 077; every process runs as its user with a timeout.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import textwrap
from collections.abc import Iterator

import pytest
from helpers.users import Users, as_user, python, shared_users, start_as_user

pytestmark = [pytest.mark.root, pytest.mark.slow]

#: Saves ``argv[3:]`` runs of "train" into ``argv[1]`` with lock_timeout ``argv[2]``;
#: prints what came of them: wall and CPU seconds, pending records, the warnings.
SAVE = textwrap.dedent("""
    import json, resource, sys, time, warnings
    from stagetimer import Recorder, record_timing
    start = time.monotonic()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rec = Recorder(sys.argv[1], lock_timeout=float(sys.argv[2]))
        for idx in map(int, sys.argv[3:]):
            record_timing("train", 10.0 + idx, run_idx=idx, recorder=rec)
        pending = rec.pending
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"wall": time.monotonic() - start, "pending": pending,
                      "cpu": usage.ru_utime + usage.ru_stime,
                      "warnings": [str(w.message) for w in caught]}))
""")

#: As its user: take the claim of ``argv[1]`` and say its mode; then wait for a line
#: ("die": SIGKILL while holding it).
HOLD_CLAIM = textwrap.dedent("""
    import math, os, signal, stat, sys
    from stagetimer._store.locking import claims
    claim = claims.take(sys.argv[1], math.inf, math.inf)
    print(oct(stat.S_IMODE(os.stat(claims.claim_path(sys.argv[1])).st_mode)), flush=True)
    if sys.stdin.readline().strip() == "die":
        os.kill(os.getpid(), signal.SIGKILL)
    claim.release()
""")

#: As its user: hold LOCK_EX on ``argv[1]`` opened read-only (a reader may), until a line.
READER_FLOCK = textwrap.dedent("""
    import fcntl, os, sys
    fd = os.open(sys.argv[1], os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    print("held", flush=True)
    sys.stdin.readline()
""")

CLAIM = {"STAGETIMER_CLAIM": "always"}


@pytest.fixture
def users() -> Iterator[Users]:
    with shared_users("stcl") as made:
        yield made


def _save(users: Users, user: str, directory: os.PathLike[str], timeout: float,
          *runs: int, umask: str = "022") -> dict[str, object]:
    done = as_user(users, user, python(), "-c", SAVE, str(directory), str(timeout),
                   *map(str, runs), umask=umask, env=CLAIM, timeout=90)
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def _cli(users: Users, user: str, *args: str) -> tuple[int, str, str]:
    done = as_user(users, user, python(), "-m", "stagetimer", *args, env=CLAIM, timeout=90)
    return done.returncode, done.stdout, done.stderr


def _holder(users: Users, user: str, sidecar: str, umask: str = "022"):  # type: ignore[no-untyped-def]
    process = start_as_user(users, user, python(), "-c", HOLD_CLAIM, sidecar, umask=umask,
                            env=CLAIM)
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        process.kill()
        pytest.fail(f"the holder said nothing: {process.communicate(timeout=10)[1]}")
    return process, line.strip()


@pytest.mark.parametrize("left", ["empty claim", "SIGKILLed holder"])
def test_a_stale_claim_of_another_user_in_a_sticky_directory_ends_the_wait_named(
    users: Users, left: str
) -> None:
    shared = users.shared("sticky", 0o3770)
    claim = shared / "timings.json.claim"
    if left == "empty claim":
        assert as_user(users, users.bob, "sh", "-c", f": > '{claim}'").returncode == 0
    else:
        holder, _ = _holder(users, users.bob, str(shared / "timings.json"))
        assert holder.stdin is not None
        holder.stdin.write("die\n")
        holder.stdin.flush()
        holder.wait(timeout=30)
    assert claim.exists()

    # Before: each save retried the rename at once, forever (100 % CPU past lock_timeout).
    saved = _save(users, users.alice, shared, 5.0, 0, 1)
    code, _, err = _cli(users, users.alice, "recover", str(shared))

    assert saved["pending"] == 2  # kept, and rescued
    assert saved["wall"] < 2 * 5.0 + 5
    assert saved["cpu"] < 0.5 * saved["wall"] + 1.0, saved  # waited, did not spin
    named = [w for w in saved["warnings"] if users.bob in w and "rm '" in w]  # type: ignore[union-attr]
    assert named, saved["warnings"]
    assert code == 1 and users.bob in err and "Traceback" not in err
    assert list(shared.glob("timings.rescue-*.json"))


def test_claims_are_readable_whatever_the_umask_and_an_unreadable_claim_is_waited_for(
    users: Users,
) -> None:
    shared = users.shared("group", 0o3770)
    holder, mode = _holder(users, users.bob, str(shared / "timings.json"), umask="077")
    try:
        # Before: 0o600, and every save of another user failed at once (PermissionError).
        assert mode == "0o644"
        waited = _save(users, users.alice, shared, 2.0, 0)
    finally:
        assert holder.stdin is not None
        holder.stdin.write("end\n")
        holder.stdin.flush()
        holder.wait(timeout=30)
    assert waited["pending"] == 1 and waited["wall"] >= 2.0
    assert any("lock not acquired within" in w for w in waited["warnings"])  # type: ignore[union-attr]

    # A claim the saver may not read (a writer of an older version, umask 077): its
    # existence says it is held; saves wait, and doctor names it without a traceback.
    claim = shared / "timings.json.claim"
    assert as_user(users, users.bob, "sh", "-c", f"echo '{{}}' > '{claim}'",
                   umask="077").returncode == 0
    assert stat.S_IMODE(claim.stat().st_mode) == 0o600
    unread = _save(users, users.alice, shared, 2.0, 1)
    _code, out, err = _cli(users, users.alice, "doctor", str(shared))
    assert unread["wall"] >= 2.0 and unread["pending"] == 1
    assert not any("Permission denied" in w for w in unread["warnings"])  # type: ignore[union-attr]
    assert "Traceback" not in err and "may not read" in out and users.bob in out


@pytest.mark.parametrize("owner", ["alice", "bob"])
def test_a_directory_at_the_claim_name_stops_saves_at_once_and_doctor_names_it(
    users: Users, owner: str
) -> None:
    shared = users.shared("group", 0o3770)
    planter = users.alice if owner == "alice" else users.bob
    claim = shared / "timings.json.claim"
    assert as_user(users, planter, "mkdir", "-m", "0700", str(claim)).returncode == 0

    # Before: each save waited out its lock_timeout (or failed with PermissionError),
    # doctor said nothing (or ended in a traceback), recover failed the same way.
    saved = _save(users, users.alice, shared, 20.0, 0)
    _code, out, err = _cli(users, users.alice, "doctor", str(shared))
    rcode, _, rerr = _cli(users, users.alice, "recover", str(shared))

    assert saved["pending"] == 1 and saved["wall"] < 10.0
    assert any("rm -r" in w and "a directory" in w for w in saved["warnings"])  # type: ignore[union-attr]
    assert "Traceback" not in err and f"stop: {claim} is a directory of {planter}" in out
    assert rcode == 1 and "rm -r" in rerr and "Traceback" not in rerr


def test_another_users_read_only_flock_is_named_by_the_save_and_by_doctor(
    users: Users,
) -> None:
    shared = users.shared("group", 0o3770)
    assert _save(users, users.alice, shared, 5.0, 0)["pending"] == 0
    lock = shared / "timings.json.lock"
    assert stat.S_IMODE(lock.stat().st_mode) & 0o004  # others may read it: and flock it
    reader = start_as_user(users, users.bob, python(), "-c", READER_FLOCK, str(lock))
    try:
        assert reader.stdout is not None and reader.stdout.readline() == "held\n"
        blocked = _save(users, users.alice, shared, 1.0, 1)
        _code, out, err = _cli(users, users.alice, "doctor", str(shared))
    finally:
        reader.kill()
        reader.wait(timeout=30)
    # Before: "another process holds it", and doctor said nothing of the lock.
    who = f"process {reader.pid} (python3) of user {users.bob}"
    assert blocked["pending"] == 1
    assert any(who in w for w in blocked["warnings"]), blocked  # type: ignore[union-attr]
    assert "Traceback" not in err and f"timings.json.lock is held by {who}" in out


def test_through_a_bindfs_view_an_unreadable_claim_waits_and_a_planted_directory_stops(
    users: Users,
) -> None:
    from helpers.bindfs import BindfsUnavailable, bindfs_mounts

    try:
        mounts = bindfs_mounts(users.base, 1, "-o", "allow_other")
        backing, (view,) = mounts.__enter__()
    except BindfsUnavailable as error:
        pytest.skip(str(error))
    try:
        backing.chmod(0o755)
        shared = backing / "exp"
        shared.mkdir()
        shutil.chown(shared, "root", users.group)
        shared.chmod(0o3770)
        through = view / "exp"
        claim = shared / "timings.json.claim"  # made on the backing directory ...
        assert as_user(users, users.bob, "sh", "-c", f"echo '{{}}' > '{claim}'",
                       umask="077").returncode == 0
        # ... met by a writer of the view, whose flock is its own: only the claim counts.
        unread = _save(users, users.alice, through, 2.0, 0)
        claim.unlink()
        assert as_user(users, users.bob, "mkdir", "-m", "0700", str(claim)).returncode == 0
        stopped = _save(users, users.alice, through, 20.0, 1)
        _, out, err = _cli(users, users.alice, "doctor", str(through))
    finally:
        mounts.__exit__(None, None, None)
    # Before: PermissionError at once; then a wait of the whole 20 s, and doctor silent.
    assert unread["pending"] == 1 and unread["wall"] >= 2.0
    assert not any("Permission denied" in w for w in unread["warnings"])  # type: ignore[union-attr]
    assert stopped["pending"] == 1 and stopped["wall"] < 10.0
    assert "Traceback" not in err and "is a directory of" in out and "rm -r" in out
