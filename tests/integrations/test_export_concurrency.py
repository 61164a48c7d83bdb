"""Two and eight ``stagetimer export`` processes at once into one destination write
each run, scalar and span once (two array tasks, two CI jobs exporting at their end).

Each exporter is a real process that imports its tool first, says it is ready and
waits; all are then let go at the same moment, so that they read the destination
together. What they wrote is read back with MlflowClient, TensorBoard's own reader and
opentelemetry-proto's messages.
"""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integrations.conftest import ROOT, require
from tests.integrations.test_export_mlflow import mlflow_server  # noqa: F401 (a fixture)
from tests.integrations.test_export_otlp import spans
from tests.integrations.test_export_tensorboard import _scalars
from tests.integrations.trees import record_suite

pytestmark = pytest.mark.slow

_TOOL = {
    "mlflow": "mlflow.tracking", "tensorboard": "tensorboard.summary.writer.event_file_writer",
    "otlp": "opentelemetry.proto.collector.trace.v1.trace_service_pb2",
}

#: An exporter that imports its tool, says "ready", waits for a line, then exports.
_EXPORTER = """
import importlib, sys
importlib.import_module(sys.argv[1])
from stagetimer._cli import main
print("ready", flush=True)
sys.stdin.readline()
sys.exit(main(sys.argv[2:]))
"""


def export_at_once(
    count: int, destination: str, source: Path, to: str, env: dict[str, str] | None = None
) -> list[tuple[int, str, str]]:
    """``count`` processes of ``stagetimer export DESTINATION SOURCE --to TO`` let go
    together; each one's (exit status, stdout, stderr)."""
    environ = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    argv = [sys.executable, "-c", _EXPORTER, _TOOL[destination],
            "export", destination, str(source), "--to", to]
    children = [
        subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=environ,
                         start_new_session=True)
        for _ in range(count)
    ]
    try:
        for child in children:
            assert child.stdout is not None
            assert "ready\n" == child.stdout.readline(), child.communicate(timeout=60)
        for child in children:  # let them go: one line each, as close together as can be
            assert child.stdin is not None
            child.stdin.write("\n")
            child.stdin.flush()
        outputs = [c.communicate(timeout=540) for c in children]
        return [(c.returncode, *out) for c, out in zip(children, outputs, strict=True)]
    finally:
        for child in children:
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()


def _all_done(results: list[tuple[int, str, str]], unit: str, total: int) -> None:
    """Every exporter exited 0; together they wrote ``total`` points, as one would."""
    written = 0
    for status, stdout, stderr in results:
        assert 0 == status, stderr
        assert "" == stderr
        written += int(stdout.split(f" new {unit} ")[0])
    assert total == written


def _mlflow_contents(uri: str) -> tuple[collections.Counter[str], list[tuple[Any, ...]]]:
    """How many MLflow runs bear each name, and every metric point of every run."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("stagetimer")
    runs = client.search_runs([experiment.experiment_id])
    names = collections.Counter(run.data.tags["mlflow.runName"] for run in runs)
    points = [
        (run.data.tags["mlflow.runName"], key, m.value, m.timestamp, m.step)
        for run in runs for key in run.data.metrics
        for m in client.get_metric_history(run.info.run_id, key)
    ]
    return names, points


_NAMES = {"mlp run 0": 1, "mlp run 1": 1, "cnn run 0 rank 0": 1, "cnn run 0 rank 1": 1}


@pytest.mark.parametrize("count", [2, 8])
def test_exports_at_once_into_one_sqlite_store_make_each_run_once(
    tmp_path: Path, count: int
) -> None:
    require("mlflow")
    record_suite(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    _all_done(export_at_once(count, "mlflow", tmp_path / "suite", uri), "metric points", 8)
    names, points = _mlflow_contents(uri)
    assert _NAMES == dict(names)
    assert 8 == len(points) == len(set(points))


@pytest.mark.parametrize("count", [2, 8])
def test_exports_at_once_into_one_file_store_make_each_run_once(
    tmp_path: Path, count: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    require("mlflow")
    record_suite(tmp_path)
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 refuses one without
    store = tmp_path / "mlruns"
    _all_done(export_at_once(count, "mlflow", tmp_path / "suite", str(store),
                             env={"MLFLOW_ALLOW_FILE_STORE": "true"}), "metric points", 8)
    names, points = _mlflow_contents(str(store))
    assert _NAMES == dict(names)
    assert 8 == len(points) == len(set(points))


@pytest.fixture
def server(request: pytest.FixtureRequest) -> str:
    """A real tracking server (``mlflow_server``), or the test skipped without mlflow."""
    require("mlflow")
    uri: str = request.getfixturevalue("mlflow_server")
    return uri


def test_exports_at_once_to_one_tracking_server_make_each_run_once(
    tmp_path: Path, server: str
) -> None:
    """A server names no local file: the lock is this user's, in the cache directory."""
    record_suite(tmp_path)
    results = export_at_once(2, "mlflow", tmp_path / "suite", server,
                             env={"XDG_CACHE_HOME": str(tmp_path / "cache")})
    _all_done(results, "metric points", 8)
    names, points = _mlflow_contents(server)
    assert _NAMES == dict(names)
    assert 8 == len(points) == len(set(points))
    assert 1 == len(list((tmp_path / "cache" / "stagetimer" / "export-locks").iterdir()))


#: Each race is a matter of chance: the exporters are let go together several times.
_TRIALS = {2: 6, 8: 3}


@pytest.mark.parametrize("count", [2, 8])
def test_exports_at_once_into_one_log_directory_write_each_scalar_once(
    tmp_path: Path, count: int
) -> None:
    require("tensorboard")
    record_suite(tmp_path)
    for trial in range(_TRIALS[count]):
        logs = tmp_path / f"logs{trial}"
        _all_done(export_at_once(count, "tensorboard", tmp_path / "suite", str(logs)),
                  "scalars", 8)
        files = list(logs.rglob("*tfevents*"))
        runs = {path.parent for path in files}
        found = [
            (run, tag, point) for run in runs
            for tag, points in _scalars(run).items() for point in points
        ]
        assert 8 == len(found)
        assert len(runs) == len(files)  # one event file per run: one exporter wrote


@pytest.mark.parametrize("count", [2, 8])
def test_exports_at_once_into_one_otlp_file_write_each_span_once(
    tmp_path: Path, count: int
) -> None:
    require("opentelemetry.proto")
    record_suite(tmp_path)
    for trial in range(_TRIALS[count]):
        out = tmp_path / f"spans{trial}.jsonl"
        # 8 attempts, under 4 runs, under 2 directories
        _all_done(export_at_once(count, "otlp", tmp_path / "suite", str(out)), "spans", 14)
        ids = [span.span_id for span in spans(out)]
        assert 14 == len(ids) == len(set(ids))
