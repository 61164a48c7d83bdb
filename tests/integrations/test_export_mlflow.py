"""``stagetimer export mlflow`` into a real SQLite store, read back with MlflowClient."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stagetimer import Recorder
from tests.helpers.cli import run_cli
from tests.integrations.conftest import free_port, require
from tests.integrations.trees import T0, record_suite

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _mlflow() -> None:
    require("mlflow")


def _client(uri: str) -> Any:
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=uri)


def _runs(uri: str, experiment: str = "stagetimer") -> dict[str, Any]:
    client = _client(uri)
    found = client.get_experiment_by_name(experiment)
    runs = client.search_runs([found.experiment_id]) if found else []
    return {run.data.tags["mlflow.runName"]: run for run in runs}


def _history(uri: str, run: Any, key: str) -> list[tuple[float, int, int]]:
    points = _client(uri).get_metric_history(run.info.run_id, key)
    return sorted((m.value, m.timestamp, m.step) for m in points)


def test_one_mlflow_run_per_directory_run_index_and_rank(tmp_path: Path) -> None:
    record_suite(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    ran = run_cli("export", "mlflow", tmp_path / "suite", "--to", uri)
    assert 0 == ran.returncode, ran.stderr
    assert f"8 new metric points from 8 recorded runs to {uri}\n" == ran.stdout
    runs = _runs(uri)
    assert {"mlp run 0", "mlp run 1", "cnn run 0 rank 0", "cnn run 0 rank 1"} == set(runs)
    ms = int(T0 * 1000)
    seed1 = runs["mlp run 1"]
    # the recorded start is each point's timestamp; an epoch's label is its step
    assert [(11.0, ms + 100_000, 0)] == _history(uri, seed1, "fit_train")
    assert [(4.0, ms + 100_000, 0), (5.0, ms + 105_000, 1)] == _history(
        uri, seed1, "train_epoch"
    )
    assert [(8.25, ms + 1_000_000, 0)] == _history(uri, runs["cnn run 0 rank 1"], "fit_train")
    params, tags = seed1.data.params, seed1.data.tags
    assert params["hardware_id"].startswith("hw-")
    assert params["software_id"].startswith("sw-")
    assert params["logical_cpus"].isdigit()
    assert "gpu_count" in params
    assert "1" == tags["stagetimer.run_idx"]
    assert str(tmp_path / "suite" / "mlp") == tags["stagetimer.directory"]
    assert seed1.info.start_time == ms + 100_000
    assert seed1.info.end_time == ms + 111_000


def test_a_second_export_adds_nothing_and_a_later_one_exactly_the_new_runs(
    tmp_path: Path,
) -> None:
    mlp, _ = record_suite(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert 0 == run_cli("export", "mlflow", tmp_path / "suite", "--to", uri).returncode
    before = _runs(uri)
    again = run_cli("export", "mlflow", tmp_path / "suite", "--to", uri)
    assert f"0 new metric points from 8 recorded runs to {uri}\n" == again.stdout
    assert set(before) == set(_runs(uri))
    rec = Recorder(mlp, policy="upsert")
    rec.record("train_epoch", 6.0, run_idx=1, label="epoch2", started_at=T0 + 110)
    rec.record("fit_train", 12.0, run_idx=2, started_at=T0 + 200)
    later = run_cli("export", "mlflow", tmp_path / "suite", "--to", uri)
    assert f"2 new metric points from 10 recorded runs to {uri}\n" == later.stdout
    runs = _runs(uri)
    assert set(before) | {"mlp run 2"} == set(runs)
    assert 3 == len(_history(uri, runs["mlp run 1"], "train_epoch"))
    assert 2 == len(_history(uri, runs["mlp run 0"], "train_epoch"))


def test_a_run_left_without_its_metrics_is_completed_not_doubled(tmp_path: Path) -> None:
    """An export cut short after creating an MLflow run: the next one finds the run by
    its key and writes only what is missing."""
    record_suite(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    from stagetimer._export.runs import read_groups

    group = next(g for g in read_groups([tmp_path / "suite"]).groups if g.name == "mlp run 0")
    client = _client(uri)
    experiment = client.create_experiment("stagetimer")
    client.create_run(experiment, tags={"stagetimer.key": group.key,
                                        "mlflow.runName": "mlp run 0"})
    ran = run_cli("export", "mlflow", tmp_path / "suite", "--to", uri)
    assert 0 == ran.returncode, ran.stderr
    runs = _client(uri).search_runs([experiment])
    assert 4 == len(runs)
    assert 1 == sum(r.data.tags["mlflow.runName"] == "mlp run 0" for r in runs)
    only = next(r for r in runs if r.data.tags["mlflow.runName"] == "mlp run 0")
    assert 2 == len(_history(uri, only, "train_epoch"))


def test_names_mlflow_refuses_are_renamed_as_documented(tmp_path: Path) -> None:
    odd = tmp_path.joinpath(b"caf\xe9".decode("utf-8", "surrogateescape"))
    rec = Recorder(odd, policy="upsert")
    long_name = "x" * 300
    rec.record("eval/greedy:v2", 1.0, run_idx=0, started_at=T0)
    rec.record("..", 2.0, run_idx=0, started_at=T0)
    rec.record(long_name, 3.0, run_idx=0, started_at=T0)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    ran = run_cli("export", "mlflow", odd, "--to", uri)
    assert 0 == ran.returncode, ran.stderr
    (name, run), = _runs(uri).items()
    assert "caf\\xe9 run 0" == name
    metrics = run.data.metrics
    renamed = "eval_greedy_v2-" + _digest("eval/greedy:v2")
    assert {renamed, "_..-" + _digest(".."), "x" * 233 + "-" + _digest(long_name)} == set(
        metrics
    )
    assert "eval/greedy:v2" == run.data.tags[f"stagetimer.stage.{renamed}"]
    assert 0 == run_cli("export", "mlflow", odd, "--to", uri).returncode
    assert 3 == sum(len(_history(uri, run, k)) for k in metrics)


@pytest.mark.parametrize(
    "stages",
    [
        ("a/b", "a:b", "a?b", "a_b"),  # one character MLflow refuses, or the one it becomes
        ("a_b-" + "0" * 16, "a_b"),  # a name that ends as a renamed one does
        ("y" * 260 + "1", "y" * 260 + "2"),  # long names that differ past the cut
    ],
)
def test_distinct_stages_stay_distinct_metrics_each_with_its_name(
    tmp_path: Path, stages: tuple[str, ...]
) -> None:
    rec = Recorder(tmp_path / "run", policy="upsert")
    for seconds, name in enumerate(stages, start=1):
        rec.record(name, float(seconds), run_idx=0, started_at=T0)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    ran = run_cli("export", "mlflow", tmp_path / "run", "--to", uri)
    assert 0 == ran.returncode, ran.stderr
    (run,) = _runs(uri).values()
    metrics = run.data.metrics
    assert len(stages) == len(metrics)
    tags = run.data.tags
    named = {key: tags.get(_stage_tag(key), key) for key in metrics}
    # each metric holds its own stage's seconds, and its tag names that stage
    assert {name: float(i) for i, name in enumerate(stages, start=1)} == {
        named[key]: value for key, value in metrics.items()
    }


def _stage_tag(key: str) -> str:
    """The documented tag of a renamed metric: cut to 250 characters with a hash."""
    tag = f"stagetimer.stage.{key}"
    return tag if len(tag) <= 250 else tag[:233] + "-" + _digest(key)


def _digest(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()[:16]


def test_an_unreachable_or_read_only_store_is_one_line_and_exit_1(tmp_path: Path) -> None:
    record_suite(tmp_path)
    down = run_cli("export", "mlflow", tmp_path / "suite", "--to", "http://127.0.0.1:9")
    assert 1 == down.returncode
    assert "" == down.stdout
    assert 1 == len(down.stderr.splitlines()), down.stderr
    assert down.stderr.startswith(
        "stagetimer export mlflow: cannot export to MLflow at 'http://127.0.0.1:9': "
    )
    db = tmp_path / "mlflow.db"
    assert 0 == run_cli("export", "mlflow", tmp_path / "suite" / "mlp",
                        "--to", f"sqlite:///{db}").returncode
    read_only = f"sqlite:///file:{db}?mode=ro&uri=true"
    refused = run_cli("export", "mlflow", tmp_path / "suite", "--to", read_only)
    assert 1 == refused.returncode
    assert 1 == len(refused.stderr.splitlines()), refused.stderr
    assert "readonly database" in refused.stderr
    with sqlite3.connect(db) as connection:
        (count,) = connection.execute("select count(*) from runs").fetchone()
    assert 2 == count  # the read-only attempt wrote nothing


@pytest.fixture
def mlflow_server(tmp_path: Path) -> Iterator[str]:
    """A real ``mlflow server`` on the loopback, its store a SQLite file; stopped after."""
    port = free_port()
    store = f"sqlite:///{tmp_path / 'server.db'}"
    server = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", store,
         "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
        cwd=tmp_path,
    )
    uri = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{uri}/health", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if server.poll() is not None:
                raise AssertionError(server.stderr.read().decode()[-3000:] if server.stderr else "")
            assert time.monotonic() < deadline, "mlflow server did not start in 90 s"
            time.sleep(0.5)
        yield uri
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=30)


def test_a_tracking_server_receives_the_export_once(
    tmp_path: Path, mlflow_server: str
) -> None:
    record_suite(tmp_path)
    ran = run_cli("export", "mlflow", tmp_path / "suite", "--to", mlflow_server)
    assert 0 == ran.returncode, ran.stderr
    assert f"8 new metric points from 8 recorded runs to {mlflow_server}\n" == ran.stdout
    again = run_cli("export", "mlflow", tmp_path / "suite", "--to", mlflow_server)
    assert f"0 new metric points from 8 recorded runs to {mlflow_server}\n" == again.stdout
    runs = _runs(mlflow_server)
    assert 4 == len(runs)
    assert [(10.0, int(T0 * 1000), 0)] == _history(mlflow_server, runs["mlp run 0"], "fit_train")


@pytest.mark.parametrize(
    ("database", "directory", "exists"),
    [
        (0o644, 0o777, True),  # the database is another user's, read-only to this one
        (0o666, 0o755, True),  # the database is writable, its directory (the journal) not
        (None, 0o755, False),  # no database yet, in a directory this user cannot write
    ],
)
def test_a_store_this_user_cannot_write_is_one_line_and_exit_1_without_retries(
    database: int | None, directory: int, exists: bool
) -> None:
    """Run as a real user other than the store's owner: MLflow would retry creating the
    database for about 100 s, printing a traceback each time."""
    from helpers.users import as_user, python, shared_users

    with shared_users("exro") as users:
        record_suite(users.base)
        store = users.base / "store"
        store.mkdir()
        db = store / "mlflow.db"
        if exists:
            assert 0 == run_cli("export", "mlflow", users.base / "suite" / "mlp",
                                "--to", f"sqlite:///{db}").returncode
            db.chmod(database or 0)
        store.chmod(directory)
        before = db.read_bytes() if exists else None
        uri = f"sqlite:///{db}"
        done = as_user(users, users.alice, python(), "-m", "stagetimer", "export",
                       "mlflow", str(users.base / "suite"), "--to", uri, timeout=60)
        assert 1 == done.returncode
        assert "" == done.stdout
        assert 1 == len(done.stderr.splitlines()), done.stderr
        assert done.stderr.startswith(f"stagetimer export mlflow: cannot export to MLflow "
                                      f"at {uri!r}: "), done.stderr
        assert "not writable by this user" in done.stderr
        assert before == (db.read_bytes() if exists else None)
        assert sorted(p.name for p in store.iterdir()) == (["mlflow.db", "mlflow.db.lock"]
                                                           if exists else [])


def test_mlflow_refusing_a_file_store_is_told_whole_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MLflow 3 refuses a directory store unless MLFLOW_ALLOW_FILE_STORE=true: its long
    message is passed on whole, not cut mid-sentence."""
    import mlflow

    if int(mlflow.__version__.split(".")[0]) < 3:
        pytest.skip(f"MLflow {mlflow.__version__} writes a file store without asking")
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    record_suite(tmp_path)
    store = tmp_path / "mlruns"
    ran = run_cli("export", "mlflow", tmp_path / "suite", "--to", store)
    assert 1 == ran.returncode
    assert "" == ran.stdout
    (line,) = ran.stderr.splitlines()
    assert line.startswith(f"stagetimer export mlflow: cannot export to MLflow at '{store}': ")
    assert "MLFLOW_ALLOW_FILE_STORE=true" in line
    assert line.endswith("."), line[-80:]
