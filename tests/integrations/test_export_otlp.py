"""``stagetimer export otlp``: spans in the OTLP/JSON file format, decoded with
opentelemetry-proto's own messages."""

from __future__ import annotations

import base64
import json
import signal
from pathlib import Path
from typing import Any

import pytest

from stagetimer import Recorder, stage
from tests.helpers.cli import run_cli
from tests.integrations.conftest import require, run_python
from tests.integrations.trees import T0

_IDS = ("traceId", "spanId", "parentSpanId")


@pytest.fixture(autouse=True)
def _otlp() -> None:
    require("opentelemetry.proto")


def decode(path: Path) -> list[Any]:
    """Each line as an ``ExportTraceServiceRequest``: OTLP/JSON writes ids in hex, which
    the protobuf JSON mapping reads as base64, so they are turned into base64 first."""
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    requests = []
    for line in path.read_text(encoding="utf-8").splitlines():
        data = json.loads(line)
        for resource in data["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    for key in _IDS:
                        if key in span:
                            span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
        requests.append(json_format.ParseDict(data, ExportTraceServiceRequest()))
    return requests


def spans(path: Path) -> list[Any]:
    return [
        span for request in decode(path) for resource in request.resource_spans
        for scope in resource.scope_spans for span in scope.spans
    ]


def attributes(span: Any) -> dict[str, Any]:
    found = {}
    for kv in span.attributes:
        kind = kv.value.WhichOneof("value")
        found[kv.key] = getattr(kv.value, kind)
    return found


def _record_attempts(directory: Path) -> None:
    """Seed 0 finished; seed 1 raised; seed 2 killed by SIGKILL inside its block."""
    rec = Recorder(directory, policy="upsert")
    with stage("fit_train", run_idx=0, recorder=rec):
        pass
    with pytest.raises(RuntimeError), stage("fit_train", run_idx=1, recorder=rec):
        raise RuntimeError("diverged")
    killed = run_python("-c", (
        "import os, signal, sys, stagetimer\n"
        "rec = stagetimer.Recorder(sys.argv[1], policy='upsert')\n"
        "with stagetimer.stage('fit_train', run_idx=2, recorder=rec):\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
    ), str(directory), check=False)
    assert -signal.SIGKILL == killed.returncode


def test_one_span_per_attempt_failed_and_killed_ones_in_error(tmp_path: Path) -> None:
    from opentelemetry.proto.trace.v1.trace_pb2 import Status

    directory = tmp_path / "suite" / "mlp"
    _record_attempts(directory)
    out = tmp_path / "spans.jsonl"
    ran = run_cli("export", "otlp", tmp_path / "suite", "--to", out)
    assert 0 == ran.returncode, ran.stderr
    assert f"7 new spans from 3 recorded attempts to {out}\n" == ran.stdout
    found = spans(out)
    by_name: dict[str, list[Any]] = {}
    for span in found:
        by_name.setdefault(span.name, []).append(span)
    (root,) = by_name[str(directory)]
    assert b"" == root.parent_span_id
    runs = [by_name[f"run {i}"][0] for i in range(3)]
    assert all(r.parent_span_id == root.span_id for r in runs)
    assert {s.trace_id for s in found} == {root.trace_id}
    attempts = {attributes(s)["stagetimer.run_idx"]: s for s in by_name["fit_train"]}
    assert {0, 1, 2} == set(attempts)
    for index, span in attempts.items():
        assert span.parent_span_id == runs[index].span_id
    assert Status.STATUS_CODE_OK == attempts[0].status.code
    assert Status.STATUS_CODE_ERROR == attempts[1].status.code
    assert "raised" == attempts[1].status.message
    assert "RuntimeError" == attributes(attempts[1])["stagetimer.exception"]
    assert Status.STATUS_CODE_ERROR == attempts[2].status.code
    assert "killed" == attempts[2].status.message
    assert "killed" == attributes(attempts[2])["stagetimer.state"]
    for span in attempts.values():
        assert span.start_time_unix_nano <= span.end_time_unix_nano


def test_a_second_export_adds_nothing_and_a_later_one_exactly_the_new_attempts(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "mlp"
    rec = Recorder(directory, policy="upsert")
    rec.record("fit_train", 3.0, run_idx=0, started_at=T0)
    out = tmp_path / "spans.jsonl"
    assert 0 == run_cli("export", "otlp", directory, "--to", out).returncode
    first = out.read_bytes()
    assert 3 == len(spans(out))  # the directory, the run, the attempt
    again = run_cli("export", "otlp", directory, "--to", out)
    assert f"0 new spans from 1 recorded attempts to {out}\n" == again.stdout
    assert first == out.read_bytes()
    rec.record("train_epoch", 1.0, run_idx=0, label="epoch0", started_at=T0 + 1)
    later = run_cli("export", "otlp", directory, "--to", out)
    assert f"1 new spans from 2 recorded attempts to {out}\n" == later.stdout
    (added,) = spans(out)[3:]
    assert "train_epoch" == added.name
    assert int((T0 + 1) * 1e9) == added.start_time_unix_nano
    assert int((T0 + 2) * 1e9) == added.end_time_unix_nano


def test_an_unwritable_destination_is_one_line_and_exit_1(tmp_path: Path) -> None:
    Recorder(tmp_path / "mlp").record("fit_train", 3.0, run_idx=0, started_at=T0)
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    ran = run_cli("export", "otlp", tmp_path / "mlp", "--to", blocked / "spans.jsonl")
    assert 1 == ran.returncode
    assert "" == ran.stdout
    assert 1 == len(ran.stderr.splitlines()), ran.stderr
    assert "stagetimer export otlp: cannot read " in ran.stderr or "cannot write" in ran.stderr
