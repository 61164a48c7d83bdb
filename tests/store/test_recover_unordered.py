"""``recover`` never drops in silence a rescued record it cannot order against what is
stored: a rerun made with ``record_timing`` (no ``started_at``) rescued while a hung
writer held the lock, then the lock freed and the rerun's earlier attempt saved.

Real processes: a writer hangs holding the sidecar's lock (its own process, stopped by
SIGSTOP), a rerun's saves time out and go to its rescue file, then ``stagetimer
recover`` runs as a user would, with a timeout.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers.process_life import REPO, rescued_records, stage_runs

from stagetimer import recover
from stagetimer._errors import InvalidSettingError

#: Holds the lock of argv[1]/timings.json; says so; then waits (the test stops it).
HOLDS_THE_LOCK = textwrap.dedent("""
    import fcntl, os, sys, time
    fd = os.open(os.path.join(sys.argv[1], "timings.json.lock"), os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    print("held", flush=True)
    time.sleep(120)
""")

#: The rerun: record_timing (no started_at) of "eval" runs 0 and 1, seconds argv[2]+idx;
#: its saves time out on the hung lock and go to its rescue file.
RERUN = textwrap.dedent("""
    import sys, warnings
    from stagetimer import Recorder, record_timing
    warnings.simplefilter("ignore")
    rec = Recorder(sys.argv[1], lock_timeout=0.3)
    for idx in range(2):
        record_timing("eval", float(sys.argv[2]) + idx, run_idx=idx, recorder=rec)
""")

FIRST = textwrap.dedent("""
    import sys
    from stagetimer import Recorder, record_timing
    rec = Recorder(sys.argv[1], strict=True)
    for idx in range(2):
        record_timing("eval", 1.0 + idx, run_idx=idx, recorder=rec)
""")


def _python(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                          timeout=timeout, cwd="/tmp",
                          env={**os.environ, "PYTHONPATH": str(REPO)})


def _rescued_rerun(art: Path) -> Path:
    """``eval`` runs 0 and 1 stored (1 s, 2 s) and a rerun's (10 s, 11 s) in a rescue file."""
    art.mkdir(parents=True, exist_ok=True)
    assert _python("-c", FIRST, str(art)).returncode == 0
    holder = subprocess.Popen([sys.executable, "-c", HOLDS_THE_LOCK, str(art)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        done = _python("-c", RERUN, str(art), "10")
        assert done.returncode == 0, done.stderr
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    (rescue,) = art.glob("timings.rescue-*.json")
    assert [10.0, 11.0] == [r["run"]["seconds"] for r in rescued_records(art)]
    return rescue


def _recover_cli(art: Path, *options: str) -> subprocess.CompletedProcess[str]:
    return _python("-m", "stagetimer", "recover", *options, str(art))


def _seconds(art: Path) -> list[float]:
    return [r["seconds"] for r in stage_runs(art, "eval")]


def test_a_rescue_file_that_cannot_be_ordered_is_kept_and_named(art: Path) -> None:
    rescue = _rescued_rerun(art)

    done = _recover_cli(art)

    assert rescue.exists(), done.stdout
    assert 1 == done.returncode
    assert [1.0, 2.0] == _seconds(art)  # nothing stored over the stored runs
    assert [10.0, 11.0] == [r["run"]["seconds"] for r in rescued_records(art)]
    assert rescue.name in done.stderr and "kept" in done.stderr
    assert "--prefer rescued" in done.stderr and "--prefer stored" in done.stderr
    assert "already there or superseded" not in done.stdout
    again = _recover_cli(art)  # nothing changes until the user decides
    assert 1 == again.returncode and rescue.exists() and [1.0, 2.0] == _seconds(art)


def test_prefer_rescued_puts_the_rerun_in_place_of_the_stored_runs(art: Path) -> None:
    rescue = _rescued_rerun(art)

    done = _recover_cli(art, "--prefer", "rescued")

    assert 0 == done.returncode, done.stderr
    assert [10.0, 11.0] == _seconds(art)
    assert [0, 1] == [r["run_idx"] for r in stage_runs(art, "eval")]
    data = json.loads((art / "timings.json").read_text())
    assert 21.0 == data["eval"]["total_seconds"]
    assert not rescue.exists()


def test_prefer_stored_keeps_the_stored_runs_and_drops_the_rescued(art: Path) -> None:
    rescue = _rescued_rerun(art)

    (done,) = recover(art, prefer="stored")

    assert (0, 2, ()) == (done.stored, done.already, done.unordered)
    assert [1.0, 2.0] == _seconds(art)
    assert not rescue.exists()


@pytest.mark.parametrize("prefer", ["newest", "", 1])
def test_a_bad_prefer_is_named_and_nothing_is_touched(art: Path, prefer: object) -> None:
    rescue = _rescued_rerun(art)
    before = (art / "timings.json").read_bytes()

    with pytest.raises(InvalidSettingError, match="prefer"):
        recover(art, prefer=prefer)  # type: ignore[arg-type]

    assert rescue.exists() and before == (art / "timings.json").read_bytes()


def test_a_rescue_file_is_never_writable_by_others_whatever_the_umask(art: Path) -> None:
    # recover trusts a rescue file as far as its owner: no one else may have written it.
    art.mkdir(parents=True)
    (art / "timings.json").write_text("{broken")  # every save fails: records are rescued
    script = textwrap.dedent("""
        import sys, warnings
        from stagetimer import Recorder, record_timing
        warnings.simplefilter("ignore")
        record_timing("eval", 1.0, recorder=Recorder(sys.argv[1]))
        import os
        os._exit(0)  # no save at exit: the rescue file stays as written
    """)
    done = subprocess.run(["sh", "-c", 'umask 002; exec "$@"', "sh", sys.executable, "-c",
                           script, str(art)], capture_output=True, text=True, timeout=60,
                          cwd="/tmp", env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    (rescue,) = art.glob("timings.rescue-*.json")
    assert 0o644 == rescue.stat().st_mode & 0o777
