"""Under a ``/proc`` mounted ``hidepid=2`` (usual on shared login nodes), another user's
running process is hidden, not gone: ``kill(pid, 0)`` answers ``EPERM``. Whatever judges
a writer by its pid (an attempt's evidence 1, a claim, a temporary file, a rescue file)
must take it as alive with its start time unknown, never as dead.

Real users of one group (``useradd``), a shared group directory; Bob's processes run as
Bob, and Alice's reader runs as Alice in a private mount namespace whose ``/proc`` is
mounted ``hidepid=2`` (``helpers.hidepid``). Every process has a timeout.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.attempt_markers import RUNNING
from helpers.hidepid import as_user_hidepid
from helpers.users import Users, as_user, python, shared_users, start_as_user

pytestmark = [pytest.mark.root, pytest.mark.slow]

READ = textwrap.dedent("""
    import json, sys
    from stagetimer._analysis.attempts.scan import scan_attempts
    found, problems = scan_attempts([sys.argv[1]])
    print(json.dumps([{"state": a.state, "evidence": a.evidence} for a in found
                      if a.state != "finished"]))
""")

#: Saves one run of "train" into argv[1] (lock_timeout argv[2]); prints what is pending.
SAVE = textwrap.dedent("""
    import json, sys, warnings
    from stagetimer import Recorder, record_timing
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rec = Recorder(sys.argv[1], lock_timeout=float(sys.argv[2]), attempts=False)
        record_timing("train", 1.0, run_idx=0, recorder=rec)
    print(json.dumps({"pending": rec.pending, "warnings": [str(w.message) for w in caught]}))
""")

#: As Bob: take the claim of argv[1], say so, and hold it until a line.
HOLD_CLAIM = textwrap.dedent("""
    import math, os, sys
    from stagetimer._store.locking import claims
    claim = claims.take(sys.argv[1], math.inf, math.inf)
    print(os.getpid(), flush=True)
    sys.stdin.readline()
    claim.release()
""")

#: As Bob: say our pid, then wait for a line.
WAIT = 'import os, sys; print(os.getpid(), flush=True); sys.stdin.readline()'

#: As Bob: every save fails (argv[1]'s timings.json does not parse), so the record goes
#: to a rescue file; say so, then wait for a line (the writer still runs).
RESCUES_AND_WAITS = textwrap.dedent("""
    import sys, warnings
    from stagetimer import Recorder, record_timing
    warnings.simplefilter("ignore")
    record_timing("train", 5.0, run_idx=0, recorder=Recorder(sys.argv[1]))
    print("rescued", flush=True)
    sys.stdin.readline()
""")


@pytest.fixture
def users() -> Iterator[Users]:
    with shared_users("sthp") as made:
        yield made


def _shared_art(users: Users, mode: int = 0o2770) -> Path:
    """An artifact directory of root and the group, ``mode``: both may write there."""
    art = users.shared("scratch", mode) / "art"
    art.mkdir()
    os.chown(art, 0, os.stat(art.parent).st_gid)
    art.chmod(mode)
    return art


def _stop(child: subprocess.Popen[str]) -> None:
    try:
        child.communicate("\n", timeout=30)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()


def _started(child: subprocess.Popen[str]) -> str:
    assert child.stdout is not None
    line = child.stdout.readline().strip()
    assert line, child.stderr.read() if child.stderr else ""
    return line


def test_another_users_running_attempt_is_not_killed_under_hidepid(users: Users) -> None:
    art = _shared_art(users, 0o3770)
    child = start_as_user(users, users.bob, python(), "-c", RUNNING, str(art), "train")
    try:
        assert "in" == _started(child)
        seen = as_user(users, users.alice, python(), "-c", READ, str(art))
        hidden = as_user_hidepid(users, users.alice, python(), "-c", READ, str(art))
    finally:
        child.kill()
        child.communicate()

    assert seen.returncode == 0 and hidden.returncode == 0, seen.stderr + hidden.stderr
    assert ["running"] == [a["state"] for a in json.loads(seen.stdout)]  # /proc shows it
    (attempt,) = json.loads(hidden.stdout)
    assert "unknown" == attempt["state"], attempt
    assert "hidepid" in attempt["evidence"]


def test_a_claim_of_a_hidden_live_holder_is_not_broken(users: Users) -> None:
    art = _shared_art(users)
    sidecar = art / "timings.json"
    holder = start_as_user(users, users.bob, python(), "-c", HOLD_CLAIM, str(sidecar))
    try:
        _started(holder)
        claim = art / "timings.json.claim"
        assert claim.exists()
        done = as_user_hidepid(users, users.alice, python(), "-c", SAVE, str(art), "2",
                               env={"STAGETIMER_CLAIM": "always"})
        still = claim.exists() and os.stat(claim).st_uid == os.stat(claim).st_uid
    finally:
        _stop(holder)

    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert still
    assert 1 == result["pending"], result  # waited its lock_timeout: the holder runs
    assert not sidecar.exists()


def test_a_temporary_file_of_a_hidden_live_writer_is_not_cleared(users: Users) -> None:
    from stagetimer._store.leftovers import token

    art = _shared_art(users)
    child = start_as_user(users, users.bob, python(), "-c", WAIT)
    try:
        pid = _started(child)
        host = token().rsplit("-", 2)[0]  # this host and pid namespace, as writers name it
        temporary = art / f".timings.json.tmp-{host}-{pid}-0a1b2c3d-0"
        made = as_user(users, users.bob, python(), "-c",
                       "import sys; open(sys.argv[1], 'w').write('{}')", str(temporary))
        assert made.returncode == 0, made.stderr
        done = as_user_hidepid(users, users.alice, python(), "-c", SAVE, str(art), "10")
        kept = temporary.exists()
    finally:
        _stop(child)

    assert done.returncode == 0, done.stderr
    assert 0 == json.loads(done.stdout)["pending"]
    assert kept, "a live writer's temporary file was cleared"


def test_a_rescue_file_of_a_hidden_live_writer_is_left_alone(users: Users) -> None:
    art = _shared_art(users)
    (art / "timings.json").write_text("{broken")  # every save fails
    (art / "timings.json").chmod(0o666)
    child = start_as_user(users, users.bob, python(), "-c", RESCUES_AND_WAITS, str(art))
    try:
        assert "rescued" == _started(child)
        (rescue,) = art.glob("timings.rescue-*.json")
        (art / "timings.json").unlink()
        done = as_user_hidepid(users, users.alice, python(), "-m", "stagetimer", "recover",
                               "--trust-owner", users.bob, str(art))
        kept = rescue.exists()
        folded = (art / "timings.json").exists()
    finally:
        _stop(child)  # it saves its record itself as it exits

    assert kept and not folded, done.stdout + done.stderr
    assert "hidepid" in done.stderr and "left alone" in done.stderr, done.stderr
