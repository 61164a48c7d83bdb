"""``stagetimer export otlp``: one OpenTelemetry span per attempt, in the OTLP/JSON file
format (JSON Lines: each line one ``ExportTraceServiceRequest``, appended).

A trace per artifact directory: a root span for the directory, a child span per run
(run index and rank), and under it a span per attempt of that run. Finished attempts
have status OK; failed and killed ones status ERROR with the cause as the message (a
killed attempt ends at the lower end of its interval, the upper end is an attribute).
Running attempts, and those whose fate is unknown, are not exported yet: a later export
writes them once decided. Every id is a hash of what it names (an attempt's id, the
directory, the run), so the spans already in the file are recognised and never written
twice; a directory's or a run's span is written with its first attempt and spans the
attempts exported with it. The reading of the file and the appending happen under the
destination's lock (``stagetimer._export.lock``): two exports at once write each span
once. An attempt whose times no writer could have recorded (``stagetimer._export.
plausible``) is left out and named on standard error.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Sequence
from typing import Any

from stagetimer._analysis.attempts.scan import Attempt
from stagetimer._analysis.tree import Problem
from stagetimer._export.lock import held as lock_held
from stagetimer._export.lock import lock_beside
from stagetimer._export.plausible import implausible
from stagetimer._export.runs import Exported, ExportError, digest, need, readable
from stagetimer._format import ATTEMPTS_DIR, MARKER_SUFFIX, TIMINGS_FILE
from stagetimer._system.durable import read_regular, write_file

__all__ = ["export_otlp", "span_ids"]

_ERROR, _OK = 2, 1  # Status.StatusCode
_INTERNAL = 1  # Span.SpanKind
_IDS = ("traceId", "spanId", "parentSpanId")


def _nanos(posix: float) -> int:
    return round(posix * 1e6) * 1000


def span_ids(attempt: Attempt) -> tuple[str, str, str, str]:
    """(trace id, directory span, run span, attempt span) of ``attempt``, in hex."""
    directory = os.path.abspath(attempt.directory)
    own = attempt.attempt_id or digest(
        directory, attempt.stage, attempt.run_idx, attempt.label, attempt.rank,
        attempt.started_at.isoformat() if attempt.started_at else None,
    )
    return (
        digest("trace", directory),
        digest("directory", directory, size=8),
        digest("run", directory, attempt.run_idx, attempt.rank, size=8),
        digest("attempt", own, size=8),
    )


def _times(attempt: Attempt, now: float) -> tuple[float, float, str | None] | str:
    """(start, end, upper end of a killed one's interval) in POSIX seconds and text, or
    why the attempt cannot be placed in time (``implausible``)."""
    assert attempt.started_at is not None
    if attempt.odd:  # its marker holds values no writer could have written
        return "; ".join(attempt.odd)
    start = attempt.started_at.timestamp()
    upper: str | None = None
    if attempt.seconds is not None:
        why = implausible(start, attempt.seconds, now)
        end = start + attempt.seconds
    else:
        end, upper = _killed_end(attempt, start)
        why = implausible(start, end - start, now)
    return why if why is not None else (start, end, upper)


def _killed_end(attempt: Attempt, start: float) -> tuple[float, str | None]:
    """A killed attempt's end, the lower end of its interval (its start, if none), and the
    upper end as text (None if nothing bounds it)."""
    low, high = attempt.ended_between or (None, None)
    end = max(start, low.timestamp()) if low is not None else start
    return end, None if high is None else high.isoformat()


def _exportable(attempt: Attempt) -> bool:
    """Decided, and placed in time (a run written before ``started_at`` existed is not)."""
    return attempt.state in ("finished", "failed", "killed") and attempt.started_at is not None


def _where(attempt: Attempt) -> str:
    """The file an attempt was read from: its marker, or the sidecar holding its run."""
    if attempt.state != "finished" and attempt.attempt_id:
        return os.path.join(attempt.directory, ATTEMPTS_DIR, attempt.attempt_id + MARKER_SUFFIX)
    return os.path.join(attempt.directory, TIMINGS_FILE)


_Placed = tuple[Attempt, tuple[float, float, str | None]]


def export_otlp(
    paths: Sequence[str | os.PathLike[str]], destination: str
) -> tuple[Exported, list[Problem]]:
    """Append the spans ``destination`` does not hold yet; :class:`ExportError` when it
    cannot be read or written."""
    need("opentelemetry.proto.collector.trace.v1.trace_service_pb2", "otlp")
    from stagetimer._analysis.attempts.scan import scan_attempts

    found, problems = scan_attempts(paths)
    now = time.time()
    placed: list[_Placed] = []
    for attempt in found:
        if _exportable(attempt):
            times = _times(attempt, now)
            if isinstance(times, str):
                problems.append(Problem(_where(attempt), (
                    f"attempt of stage {attempt.stage!r} (run {attempt.run_idx}, "
                    f"{attempt.state}) left out of the export: {times}"
                )))
            else:
                placed.append((attempt, times))
    with lock_held(lock_beside(destination), destination, f"cannot write {destination!r}"):
        spans = _spans(placed, _held(destination))
        if spans:
            _append(destination, _request(spans))
    return Exported(len({s["traceId"] for s in spans}), len(spans), len(found)), problems


def _held(destination: str) -> set[str]:
    """The span ids the file holds (a line cut short by a crash is skipped)."""
    try:
        found = read_regular(destination)  # never through a link planted there
        if found is None:
            return set()
        lines = found[0].decode("utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ExportError(f"cannot read {destination!r}: {_why(exc)}") from exc
    held: set[str] = set()
    for line in lines:
        try:
            _add_span_ids(json.loads(line), held)
        except (ValueError, AttributeError, KeyError, TypeError):
            continue
    return held


def _add_span_ids(request: Any, held: set[str]) -> None:
    """Add the span ids of one line's request to ``held``, up to where it is malformed
    (which raises)."""
    for resource in request.get("resourceSpans", ()):
        for scope in resource.get("scopeSpans", ()):
            held.update(span["spanId"].lower() for span in scope.get("spans", ()))


def _why(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or str(exc)


def _attribute(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": readable(str(value))}}


def _attributes(values: dict[str, Any]) -> list[dict[str, Any]]:
    return [_attribute(f"stagetimer.{k}", v) for k, v in values.items() if v is not None]


def _span(
    ids: tuple[str, str | None, str], name: str, start: int, end: int,
    attributes: dict[str, Any], status: tuple[int, str | None],
) -> dict[str, Any]:
    trace, parent, own = ids
    span: dict[str, Any] = {"traceId": trace, "spanId": own}
    if parent is not None:
        span["parentSpanId"] = parent
    span.update(
        name=readable(name), kind=_INTERNAL, startTimeUnixNano=str(start),
        endTimeUnixNano=str(max(end, start)), attributes=_attributes(attributes),
    )
    code, message = status
    span["status"] = {"code": code, **({"message": message} if message else {})}
    return span


def _attempt_span(attempt: Attempt, ids: tuple[str, str | None, str], start: int, end: int,
                  upper: str | None) -> dict[str, Any]:
    """An attempt's own span: what the attempt says of itself, an error unless finished."""
    status = (_OK, None) if attempt.state == "finished" else (
        _ERROR, attempt.cause or attempt.state
    )
    return _span(
        ids, attempt.stage, start, end,
        {
            "directory": attempt.directory, "stage": attempt.stage,
            "run_idx": attempt.run_idx, "label": attempt.label, "rank": attempt.rank,
            "world_size": attempt.world_size, "attempt_id": attempt.attempt_id,
            "state": attempt.state, "cause": attempt.cause,
            "exception": attempt.exception, "seconds": attempt.seconds,
            "ended_before": upper,
            "evidence": attempt.evidence if attempt.state != "finished" else None,
            "host": attempt.host, "hardware_id": attempt.hardware_id,
            "software_id": attempt.software_id,
            "job_id": (attempt.job or {}).get("job_id"),
        },
        status,
    )


def _parents(
    attempt: Attempt, trace: str, directory_span: str, run_span: str
) -> tuple[tuple[tuple[str, str | None, str], str, dict[str, Any]], ...]:
    """The ids, name and attributes of the directory's and the run's span above an attempt."""
    run_name = "run" + ("" if attempt.run_idx is None else f" {attempt.run_idx}") + (
        "" if attempt.rank is None else f" rank {attempt.rank}"
    )
    return (
        ((trace, None, directory_span), attempt.directory,
         {"directory": attempt.directory}),
        ((trace, directory_span, run_span), run_name,
         {"directory": attempt.directory, "run_idx": attempt.run_idx,
          "rank": attempt.rank}),
    )


def _spans(placed: Iterable[_Placed], held: set[str]) -> list[dict[str, Any]]:
    """The attempts' spans not in ``held``, with each new directory's and run's span."""
    new: list[dict[str, Any]] = []
    parents: dict[str, tuple[tuple[str, str | None, str], str, dict[str, Any], list[int]]] = {}
    for attempt, (started, ended, upper) in sorted(
        placed, key=lambda pair: (pair[0].directory, pair[1][0])
    ):
        trace, directory_span, run_span, own = span_ids(attempt)
        if own in held:
            continue
        start, end = _nanos(started), _nanos(ended)
        new.append(_attempt_span(attempt, (trace, run_span, own), start, end, upper))
        for ids, name, values in _parents(attempt, trace, directory_span, run_span):
            if ids[2] in held:
                continue
            bounds = parents.setdefault(ids[2], (ids, name, values, [start, end]))[3]
            bounds[0], bounds[1] = min(bounds[0], start), max(bounds[1], end)
    for ids, name, values, (start, end) in parents.values():
        new.append(_span(ids, name, start, end, values, (0, None)))
    return new


def _request(spans: list[dict[str, Any]]) -> str:
    """One ``ExportTraceServiceRequest`` line, checked by the protobuf schema itself."""
    import base64

    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    from stagetimer import __version__

    request = {"resourceSpans": [{
        "resource": {"attributes": [
            {"key": "service.name", "value": {"stringValue": "stagetimer"}},
        ]},
        "scopeSpans": [{"scope": {"name": "stagetimer", "version": __version__},
                        "spans": spans}],
    }]}
    # OTLP/JSON writes ids in hex; the protobuf JSON mapping reads bytes as base64.
    as_proto = json.loads(json.dumps(request))
    for span in as_proto["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        for key in _IDS:
            if key in span:
                span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    json_format.ParseDict(as_proto, ExportTraceServiceRequest())  # raises on a bad field
    return json.dumps(request, ensure_ascii=False, separators=(",", ":"))


def _append(destination: str, line: str) -> None:
    """Add ``line`` (after a newline when a crash cut the last one short): the file is
    rewritten whole (``durable.write_file``), never opened through a link planted at its
    name, its permission bits kept."""
    data = line.encode("utf-8") + b"\n"
    try:
        found = read_regular(destination)
        if found is None:
            write_file(destination, data)
        else:
            held, mode = found
            if held and not held.endswith(b"\n"):
                held += b"\n"
            write_file(destination, held + data, mode)
    except OSError as exc:
        raise ExportError(f"cannot write {destination!r}: {_why(exc)}") from exc
