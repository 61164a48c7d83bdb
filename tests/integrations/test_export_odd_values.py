"""Times no writer could have recorded (a planted or damaged marker or sidecar) crash no
exporter: the run or attempt is left out and named on standard error (exit 1), and the
others are exported."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from stagetimer import Recorder, stage
from tests.helpers.cli import run_cli
from tests.integrations.conftest import ROOT, require
from tests.integrations.test_export_otlp import attributes, spans
from tests.integrations.test_export_tensorboard import _scalars
from tests.integrations.trees import T0

pytestmark = pytest.mark.slow

#: (field, its value as JSON text): what no writer writes, each alone
_ODD = [
    ("seconds", "1e308"),
    ("seconds", "1" + "0" * 400),
    ("seconds", "-5.0"),
    ("seconds", "Infinity"),
    ("started_at", '"0001-01-01T00:00:00.000Z"'),
    ("started_at", '"9999-12-31T23:59:59.999Z"'),
]
_IDS = [f"{field}={text[:12]}" for field, text in _ODD]


def _replace(path: Path, field: str, text: str) -> None:
    """Set ``field`` of the JSON object in ``path`` to the JSON ``text``, verbatim."""
    data = json.loads(path.read_text(encoding="utf-8"))
    data[field] = "@ODD@"
    path.write_text(json.dumps(data).replace('"@ODD@"', text), encoding="utf-8")


def _sidecar(directory: Path, field: str, text: str) -> Path:
    """Runs 0 and 1 of ``fit_train``: run 0's ``field`` odd. Returns ``timings.json``."""
    rec = Recorder(directory, policy="upsert")
    rec.record("fit_train", 2.0, run_idx=0, started_at=T0)
    rec.record("fit_train", 3.0, run_idx=1, started_at=T0 + 10)
    sidecar = directory / "timings.json"
    data = json.loads(sidecar.read_text(encoding="utf-8"))
    run = next(r for r in data["fit_train"]["runs"] if r["run_idx"] == 0)
    run[field] = "@ODD@"
    sidecar.write_text(json.dumps(data).replace('"@ODD@"', text), encoding="utf-8")
    return sidecar


def _left_out(stderr: str, command: str, where: Path) -> None:
    """One line naming ``where``; no traceback."""
    lines = stderr.splitlines()
    assert 1 == len(lines), stderr
    assert lines[0].startswith(f"stagetimer export {command}: {where}: "), stderr
    assert "left out of the export" in lines[0], stderr


@pytest.mark.parametrize(("field", "text"), _ODD, ids=_IDS)
def test_an_odd_run_is_left_out_of_an_mlflow_export(
    tmp_path: Path, field: str, text: str
) -> None:
    require("mlflow")
    from mlflow.tracking import MlflowClient

    sidecar = _sidecar(tmp_path / "mlp", field, text)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    ran = run_cli("export", "mlflow", tmp_path / "mlp", "--to", uri)
    assert 1 == ran.returncode
    assert f"1 new metric points from 2 recorded runs to {uri}\n" == ran.stdout
    _left_out(ran.stderr, "mlflow", sidecar)
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("stagetimer").experiment_id
    (run,) = client.search_runs([experiment])
    assert "1" == run.data.tags["stagetimer.run_idx"]
    assert {"fit_train": 3.0} == run.data.metrics


@pytest.mark.parametrize(("field", "text"), _ODD, ids=_IDS)
def test_an_odd_run_is_left_out_of_a_tensorboard_export(
    tmp_path: Path, field: str, text: str
) -> None:
    require("tensorboard")
    sidecar = _sidecar(tmp_path / "mlp", field, text)
    logs = tmp_path / "logs"
    ran = run_cli("export", "tensorboard", tmp_path / "mlp", "--to", logs)
    assert 1 == ran.returncode
    assert f"1 new scalars from 2 recorded runs to {logs}\n" == ran.stdout
    _left_out(ran.stderr, "tensorboard", sidecar)
    assert [logs / "mlp" / "run1"] == [p.parent for p in logs.rglob("*tfevents*")]
    assert {"fit_train": [(T0 + 10, 0, 3.0)]} == _scalars(logs / "mlp" / "run1")


@pytest.mark.parametrize(("field", "text"), _ODD, ids=_IDS)
def test_an_odd_run_is_left_out_of_an_otlp_export(
    tmp_path: Path, field: str, text: str
) -> None:
    require("opentelemetry.proto")
    sidecar = _sidecar(tmp_path / "mlp", field, text)
    out = tmp_path / "spans.jsonl"
    ran = run_cli("export", "otlp", tmp_path / "mlp", "--to", out)
    assert 1 == ran.returncode
    assert f"3 new spans from 2 recorded attempts to {out}\n" == ran.stdout
    _left_out(ran.stderr, "otlp", sidecar)
    assert [1] == [attributes(s)["stagetimer.run_idx"] for s in spans(out)
                   if s.name == "fit_train"]


def _failed_marker(directory: Path) -> Path:
    """Run 0 finished; run 1 raised, its marker left (the failed attempt's record)."""
    rec = Recorder(directory, policy="upsert")
    with stage("fit_train", run_idx=0, recorder=rec):
        pass
    with pytest.raises(RuntimeError), stage("fit_train", run_idx=1, recorder=rec):
        raise RuntimeError("diverged")
    (marker,) = (directory / "timings.attempts").iterdir()
    return marker


def _killed_marker(directory: Path) -> Path:
    """Run 0 finished here; run 1 killed by SIGKILL in a child, its marker left."""
    Recorder(directory, policy="upsert").record("fit_train", 1.0, run_idx=0, started_at=T0)
    code = (
        "import os, signal, sys, stagetimer\n"
        "rec = stagetimer.Recorder(sys.argv[1], policy='upsert')\n"
        "with stagetimer.stage('fit_train', run_idx=1, recorder=rec):\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    killed = subprocess.run([sys.executable, "-c", code, str(directory)], timeout=120,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert -signal.SIGKILL == killed.returncode
    (marker,) = (directory / "timings.attempts").iterdir()
    return marker


def _otlp_leaves_out(tmp_path: Path, marker: Path, directory: Path) -> list[Any]:
    out = tmp_path / "spans.jsonl"
    ran = run_cli("export", "otlp", directory, "--to", out)
    assert 1 == ran.returncode, ran.stderr
    assert f"3 new spans from 2 recorded attempts to {out}\n" == ran.stdout
    _left_out(ran.stderr, "otlp", marker)
    return [attributes(s)["stagetimer.run_idx"] for s in spans(out) if s.name == "fit_train"]


@pytest.mark.parametrize(("field", "text"), _ODD, ids=_IDS)
def test_a_failed_attempt_with_an_odd_marker_is_left_out_of_an_otlp_export(
    tmp_path: Path, field: str, text: str
) -> None:
    require("opentelemetry.proto")
    marker = _failed_marker(tmp_path / "mlp")
    _replace(marker, field, text)
    assert [0] == _otlp_leaves_out(tmp_path, marker, tmp_path / "mlp")


@pytest.mark.parametrize("started", ["0001-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z"])
def test_a_killed_attempt_with_an_odd_start_and_heartbeat_is_left_out_of_an_otlp_export(
    tmp_path: Path, started: str
) -> None:
    require("opentelemetry.proto")
    marker = _killed_marker(tmp_path / "mlp")
    _replace(marker, "heartbeat", "1e-300")
    _replace(marker, "started_at", json.dumps(started))
    assert [0] == _otlp_leaves_out(tmp_path, marker, tmp_path / "mlp")
