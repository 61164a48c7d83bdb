"""``stagetimer watch``: real writers, a real watcher process, its exits and what it
says when files, directories or Slurm misbehave."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from stagetimer import Recorder, record_timing
from stagetimer._analysis.slurm_array import ArrayUnreadable, array_view, parse_array
from stagetimer._analysis.watch import Watcher

ROOT = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(ROOT))


def watch(*args: str | Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stagetimer", "watch", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, env=ENV)


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


WRITER = textwrap.dedent("""
    import sys, time
    from stagetimer import Recorder, stage
    directory, count, pause = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    with Recorder(directory, expected_runs=count):
        for i in range(count):
            with stage("train", run_idx=i):
                time.sleep(pause)
""")


def test_once_json_has_the_contract_shape_and_counts(tmp_path: Path) -> None:
    rec = Recorder(tmp_path / "a", expected_runs=5)
    for i in range(3):
        record_timing("train", 10.0 + i, run_idx=i, recorder=rec)

    ran = watch("--once", "--json", tmp_path)

    assert ran.returncode == 0, ran.stderr
    [line] = ran.stdout.splitlines()
    value = json.loads(line)
    assert set(value) == {"time", "directories", "eta_seconds"}
    [directory] = value["directories"]
    assert set(directory) == {"path", "stages"}
    [stage] = directory["stages"]
    assert set(stage) == {"name", "done", "running", "failed", "killed", "unknown", "pending",
                          "elapsed_seconds", "eta_seconds"}
    assert (stage["name"], stage["done"], stage["pending"]) == ("train", 3, 2)
    assert set(stage["eta_seconds"]) == {"p50", "p90"}
    assert 20.0 <= stage["eta_seconds"]["p50"] <= stage["eta_seconds"]["p90"] <= 30.0
    assert value["eta_seconds"] == stage["eta_seconds"]


@pytest.mark.slow
def test_piped_it_prints_blocks_until_everything_expected_is_done(tmp_path: Path) -> None:
    directory = tmp_path / "seeds"
    directory.mkdir()
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(directory), "6", "0.4"],
                              env=ENV)
    try:
        ran = watch("--interval", "0.2", "--json", directory, timeout=60)
    finally:
        writer.wait(timeout=60)
    assert ran.returncode == 0, ran.stderr
    snapshots = [json.loads(line) for line in ran.stdout.splitlines()]
    stages = [s["directories"][0]["stages"][0] for s in snapshots if s["directories"]
              and s["directories"][0]["stages"]]
    assert len(stages) >= 5
    done = [s["done"] for s in stages]
    assert done == sorted(done) and done[-1] == 6
    assert max(s["running"] for s in stages) == 1  # the marker of the running seed
    assert stages[-1]["pending"] == 0 and snapshots[-1]["eta_seconds"] == {"p50": 0.0,
                                                                           "p90": 0.0}
    # and the text blocks, piped
    text = watch("--once", directory)
    assert text.returncode == 0
    assert "everything expected is done" in text.stdout.splitlines()[0]


@pytest.mark.slow
def test_ctrl_c_exits_130_without_a_traceback(tmp_path: Path) -> None:
    rec = Recorder(tmp_path, expected_runs=5)
    record_timing("train", 1.0, run_idx=0, recorder=rec)
    child = subprocess.Popen(
        [sys.executable, "-m", "stagetimer", "watch", "--interval", "0.2", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
    )
    assert child.stdout is not None
    child.stdout.readline()  # it has drawn once: it is in its loop
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=30)
    assert child.returncode == 130
    assert "Traceback" not in err


def test_exit_statuses_for_unreadable_paths_and_usage(tmp_path: Path) -> None:
    missing = watch("--once", tmp_path / "nowhere")
    assert missing.returncode == 1 and "nowhere" in missing.stderr
    for bad in (["--interval", "0"], ["--interval", "nan"], ["--expect", "0"],
                ["--expect", "x"]):
        ran = watch(*bad, "--once", tmp_path)
        assert ran.returncode == 2, bad
        assert "Traceback" not in ran.stderr


def test_it_never_writes_into_the_watched_directories(tmp_path: Path) -> None:
    rec = Recorder(tmp_path / "a", expected_runs=2)
    record_timing("train", 1.0, run_idx=0, recorder=rec)
    before = _tree(tmp_path)
    assert watch("--once", tmp_path).returncode == 0
    assert watch("--once", "--json", tmp_path).returncode == 0
    assert before == _tree(tmp_path)


def test_a_refresh_rereads_only_the_directories_that_changed(tmp_path: Path) -> None:
    recs = [Recorder(tmp_path / f"d{i}", expected_runs=3) for i in range(30)]
    for rec in recs:
        record_timing("train", 1.0, run_idx=0, recorder=rec)
    watcher = Watcher([str(tmp_path)])
    first = watcher.refresh()
    assert watcher.reread == 30 and len(first.directories) == 30
    watcher.refresh()
    assert watcher.reread == 0
    record_timing("train", 1.0, run_idx=1, recorder=recs[7])
    again = watcher.refresh()
    assert watcher.reread == 1
    assert [d.stages[0].done for d in again.directories].count(2) == 1


def test_a_directory_removed_while_watched_is_said_and_the_rest_go_on(tmp_path: Path) -> None:
    for name in ("a", "b"):
        record_timing("train", 1.0, run_idx=0, recorder=Recorder(tmp_path / name,
                                                                 expected_runs=2))
    watcher = Watcher([str(tmp_path)])
    assert len(watcher.refresh().directories) == 2
    shutil.rmtree(tmp_path / "a")
    snapshot = watcher.refresh()
    assert [Path(d.path).name for d in snapshot.directories] == ["b"]
    assert any("removed while watched" in p and str(tmp_path / "a") in p
               for p in snapshot.problems)
    shutil.rmtree(tmp_path / "b")
    empty = watcher.refresh()  # nothing left at all: said, and no exception
    assert empty.directories == () and not empty.complete


@pytest.mark.slow
def test_files_replaced_while_refreshing_never_stop_a_refresh(tmp_path: Path) -> None:
    """A writer saves 200 runs as fast as it can while refreshes run: each refresh gives a
    snapshot (what it could not read, said), and done never goes back."""
    directory = tmp_path / "busy"
    directory.mkdir()
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(directory), "200", "0"],
                              env=ENV)
    watcher = Watcher([str(directory)])
    seen = []
    try:
        while writer.poll() is None:
            snapshot = watcher.refresh()
            if snapshot.directories and snapshot.directories[0].stages:
                seen.append(snapshot.directories[0].stages[0].done)
    finally:
        writer.wait(timeout=60)
    final = watcher.refresh()
    assert final.complete and final.directories[0].stages[0].done == 200
    assert seen == sorted(seen) and len(seen) >= 3


def test_ten_thousand_runs_and_a_clock_stepped_back(tmp_path: Path) -> None:
    import datetime

    data = {"train": {"total_seconds": 10000.0, "expected_runs": 10001, "runs": [
        {"seconds": 1.0, "run_idx": i, "started_at": "2026-01-01T00:00:00.000Z"}
        for i in range(10_000)
    ]}}
    (tmp_path / "timings.json").write_text(json.dumps(data))
    earlier = datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc)  # before them all
    snapshot = Watcher([str(tmp_path)]).refresh(now=earlier)
    [stage] = snapshot.directories[0].stages
    assert (stage.done, stage.pending) == (10_000, 1)
    assert stage.elapsed_seconds == 0.0 and stage.eta is not None and stage.eta.p50 >= 0.0


# -- Slurm that cannot say ---------------------------------------------------------------------


def _scontrol(tmp_path: Path, body: str) -> str:
    """A PATH whose scontrol is this script (standing for a broken Slurm)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "scontrol"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(0o755)
    return f"{bin_dir}:{os.environ['PATH']}"


@pytest.mark.parametrize(("body", "said"), [
    ("echo 'JobId=9 JobName=x'", "no record of array job 77"),
    ("echo 'ArrayJobId=77 ArrayTaskId=zz-1'", "is not a list of task ids"),
    ("echo 'slurm_load_jobs error: Invalid job id' >&2; exit 1", "Invalid job id"),
    ("sleep 30", "no answer within 0.5 s"),
    ("sleep 30 & wait", "no answer within 0.5 s"),  # a wrapper's child holds the pipe
    # a child that left the session (as daemons do) holds it after scontrol ended
    ("setsid sleep 30 & exit 0", "kept its output open past 0.5 s"),
])
def test_scontrol_missing_hanging_or_talking_nonsense_is_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str, said: str
) -> None:
    monkeypatch.setenv("PATH", _scontrol(tmp_path, body))
    started = time.monotonic()
    with pytest.raises(ArrayUnreadable, match=said):
        array_view("77", timeout=0.5)
    assert time.monotonic() - started < 5


def test_a_watch_whose_runs_name_an_array_goes_on_without_slurm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slurm = {"SLURM_JOB_ID": "78", "SLURM_ARRAY_JOB_ID": "77", "SLURM_ARRAY_TASK_ID": "0"}
    subprocess.run([sys.executable, "-c", WRITER, str(tmp_path / "a"), "1", "0"],
                   env=dict(ENV, **slurm), check=True, timeout=60)
    assert json.loads((tmp_path / "a" / "timings.json").read_text())["train"]["runs"][0][
        "job"]["array_job_id"] == "77"
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no scontrol at all
    snapshot = Watcher([str(tmp_path / "a")]).refresh()
    assert any("slurm array 77: scontrol is not installed here" in p
               for p in snapshot.problems)
    assert snapshot.directories[0].stages[0].done == 1


def test_the_array_size_and_throttle_from_scontrol_lines() -> None:
    output = "\n".join([
        "JobId=80 ArrayJobId=77 ArrayTaskId=4-11%2 ArrayTaskThrottle=2 JobState=PENDING",
        "JobId=79 ArrayJobId=77 ArrayTaskId=3 ArrayTaskThrottle=2 JobState=RUNNING",
        "JobId=78 ArrayJobId=77 ArrayTaskId=2 ArrayTaskThrottle=2 JobState=RUNNING",
        "JobId=99 ArrayJobId=98 ArrayTaskId=0 ArrayTaskThrottle=5 JobState=RUNNING",
    ])
    view = parse_array("77", output)
    assert view.throttle == 2 and view.task_ids == frozenset(range(2, 12))
    assert parse_array("77", "JobId=77 ArrayJobId=77 ArrayTaskId=1,3,5-9:2 "
                       "ArrayTaskThrottle=0").task_ids == {1, 3, 5, 7, 9}


def test_rich_stays_out_of_import_stagetimer_and_the_parser() -> None:
    code = ("import sys, stagetimer; from stagetimer._cli.parser import build_parser; "
            "build_parser(); print('rich' in sys.modules)")
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=ENV, timeout=60, check=True)
    assert ran.stdout.strip() == "False"


@pytest.mark.slow
def test_on_a_terminal_the_screen_is_redrawn_and_ctrl_c_exits_130(tmp_path: Path) -> None:
    import pty

    pytest.importorskip("rich")
    rec = Recorder(tmp_path, expected_runs=5)
    record_timing("train", 1.0, run_idx=0, recorder=rec)
    leader, follower = pty.openpty()
    child = subprocess.Popen(
        [sys.executable, "-m", "stagetimer", "watch", "--interval", "0.2", str(tmp_path)],
        stdin=follower, stdout=follower, stderr=subprocess.PIPE, env=ENV,
    )
    os.close(follower)
    seen = b""
    deadline = time.monotonic() + 30
    while seen.count(b"stagetimer watch") < 3 and time.monotonic() < deadline:
        seen += os.read(leader, 65536)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=30)
    os.close(leader)
    assert seen.count(b"stagetimer watch") >= 3  # redrawn, refresh after refresh
    assert b"\x1b[" in seen  # by rich's cursor moves, not printed below each other
    assert child.returncode == 130 and b"Traceback" not in err


@pytest.mark.slow
def test_ten_thousand_markers_in_one_directory(tmp_path: Path) -> None:
    """10,000 started markers (written by the recorder's own marker writer, this process
    their writer: running), 10 finished runs: one refresh counts them all and estimates."""
    from stagetimer._record import attempt as marker_writer

    rec = Recorder(tmp_path, expected_runs=10_020)
    for i in range(10):
        record_timing("train", 60.0, run_idx=i, recorder=rec)
    for i in range(10_000):
        started = marker_writer.prepare(str(tmp_path), "train", 100 + i, None, time.time(), None)
        marker_writer.write(started)
    watcher = Watcher([str(tmp_path)])
    [stage] = watcher.refresh().directories[0].stages
    assert (stage.done, stage.running, stage.pending) == (10, 10_000, 10)
    assert stage.eta is not None and stage.eta.p50 > 0
    again = watcher.refresh()  # running attempts: read again, the same counts
    assert watcher.reread == 1 and again.directories[0].stages[0].running == 10_000


# -- values no writer could have written ------------------------------------------------------


def _marker_beside(directory: Path, **values: object) -> str:
    """A copy of ``directory``'s failed marker under a new id and run, ``values`` set (a
    value of ``"10**400"`` written as that integer's digits); its id."""
    import uuid

    [original] = (directory / "timings.attempts").glob("*.json")
    data = json.loads(original.read_text())
    attempt_id = uuid.uuid4().hex
    data.update(attempt_id=attempt_id, run_idx=7)
    huge = {key for key, value in values.items() if value == "10**400"}
    data.update({key: value for key, value in values.items() if key not in huge})
    text = json.dumps(data)
    for key in huge:
        text = text.replace(f'"{key}": {json.dumps(data[key])}', f'"{key}": 1{"0" * 400}')
    (directory / "timings.attempts" / f"{attempt_id}.json").write_text(text)
    return attempt_id


def _failed_once(directory: Path) -> None:
    from stagetimer import stage

    with Recorder(directory, expected_runs=9):
        for i in range(3):
            with stage("train", run_idx=i):
                time.sleep(0.01)
        with pytest.raises(ValueError), stage("train", run_idx=3):
            raise ValueError("a failed attempt leaves its marker")


@pytest.mark.parametrize("values", [
    {"seconds": "10**400"},
    {"seconds": 1e308},
    {"seconds": -3.0},
    {"started_at": "0001-01-01T00:00:00.000Z"},
    {"started_at": "9999-12-31T23:59:59.000Z"},
    {"heartbeat": 1e-300, "seconds": 1e308, "started_at": "0001-01-01T00:00:00.000Z"},
], ids=str)
def test_a_marker_no_writer_could_write_is_left_out_and_said(
    tmp_path: Path, values: dict[str, object]
) -> None:
    directory = tmp_path / "a"
    _failed_once(directory)
    before = watch("--once", "--json", directory)
    assert before.returncode == 0, before.stderr
    odd = _marker_beside(directory, **values)

    ran = watch("--once", "--json", directory)
    text = watch("--once", directory)

    assert ran.returncode == 0 and text.returncode == 0, ran.stderr + text.stderr
    assert "Traceback" not in ran.stderr + text.stderr
    [stage] = json.loads(ran.stdout)["directories"][0]["stages"]
    [was] = json.loads(before.stdout)["directories"][0]["stages"]
    assert stage["failed"] == was["failed"] + 1
    # the runs took milliseconds: nothing odd reaches the figures
    assert stage["elapsed_seconds"] < 600 and stage["eta_seconds"]["p90"] < 600
    assert odd in ran.stderr and "left out" in ran.stderr
    assert f"left out: {directory}" in text.stdout and odd in text.stdout


def test_a_refresh_of_unchanged_directories_draws_no_estimate_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from stagetimer._analysis import eta
    from stagetimer._analysis import watch as watch_module
    from stagetimer._render.watch import Drawn, snapshot_json, snapshot_text
    from stagetimer._store.sidecar import dumps_timings

    for i in range(5):
        (tmp_path / f"d{i}").mkdir()
        runs = [{"seconds": 10.0 + r + i, "run_idx": r,
                 "started_at": f"2026-11-29T12:0{r}:00.000Z"} for r in range(2)]
        (tmp_path / f"d{i}" / "timings.json").write_text(dumps_timings({"train": {
            "total_seconds": sum(r["seconds"] for r in runs), "expected_runs": 4,
            "runs": runs}}))
    drawn: list[int] = []
    real = eta.time_to_go

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        drawn.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(eta, "time_to_go", counted)
    watcher = watch_module.Watcher([str(tmp_path)])
    first = watcher.refresh()
    assert len(drawn) == 5
    later = first.time + __import__("datetime").timedelta(seconds=90)
    again = watcher.refresh(now=later)
    assert len(drawn) == 5 and watcher.reread == 0
    # the same figures as drawn afresh, the elapsed times moved on
    fresh = watch_module.Watcher([str(tmp_path)]).refresh(now=later)
    assert again.directories == fresh.directories
    assert [s.elapsed_seconds for d in again.directories for s in d.stages] == [
        s.elapsed_seconds + 90 for d in first.directories for s in d.stages]
    # and drawn from the pieces kept, the same text as drawn whole
    kept = Drawn()
    for snapshot in (first, again):
        assert snapshot_json(snapshot, kept) == snapshot_json(snapshot)
    kept = Drawn()
    for snapshot in (first, again):
        assert snapshot_text(snapshot, kept) == snapshot_text(snapshot)
