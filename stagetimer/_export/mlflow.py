"""``stagetimer export mlflow``: one MLflow run per (artifact directory, run index, rank).

Each stage is a metric of that MLflow run: its value the run's seconds, its timestamp the
recorded start, its step the number the run's label ends with (``epoch3`` -> 3; else 0).
The hardware and software the first run recorded are the MLflow run's params; its key, its
directory and every hardware id are tags. An MLflow run is found again by its key tag
(``stagetimer.key``, a hash of directory, run index and rank), and a metric point is
written only when the run's history does not hold it already: a second export adds
nothing, one after new runs adds exactly those. The finding and adding happen under the
destination's lock (``stagetimer._export.lock``), so two exports at once add them once.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from typing import Any

from stagetimer._analysis.wall_span import posix_seconds
from stagetimer._export.lock import held, lock_beside, lock_in_cache
from stagetimer._export.runs import (
    Exported,
    ExportError,
    Group,
    digest,
    label_step,
    need,
    readable,
)

__all__ = ["export_mlflow", "metric_key", "store_path"]

KEY_TAG = "stagetimer.key"
_MAX_KEY = 250  # MLflow's limit on a metric, param or tag key
_MAX_VALUE = 5000  # within every MLflow release's limit on a tag or param value
_BATCH = 1000  # metrics per log_batch (MLflow's limit); params and tags: 100


_RENAMED = re.compile(r"-[0-9a-f]{16}\Z")  # what a renamed key ends with


def metric_key(stage: str) -> str:
    """``stage`` as a metric key MLflow accepts, distinct for distinct stages.

    A name of letters, digits, ``_ - .`` and space, at most 250 characters, is kept as
    it is. Any other is renamed: other characters become ``_``, a name MLflow would read
    as a path gets a leading ``_``, it is cut to fit, and it ends in ``-`` and 16 hex
    digits of a hash of the whole name (``a/b`` -> ``a_b-<hash>``, ``a:b`` ->
    ``a_b-<other hash>``). A kept name never ends that way (such a name is renamed too),
    so no two stages share a key."""
    key = re.sub(r"[^\w.\- ]", "_", stage)
    if key.strip(".") == "" or key.startswith(".."):
        key = "_" + key
    if key == stage and len(key) <= _MAX_KEY and not _RENAMED.search(key):
        return key
    tail = "-" + digest(stage, size=8)
    return key[: _MAX_KEY - len(tail)] + tail


def _stage_tag(key: str) -> str:
    """The tag that keeps a renamed metric's stage name: ``stagetimer.stage.<key>``, cut
    to MLflow's 250 characters with a hash of the whole key where it is longer."""
    tag = f"stagetimer.stage.{key}"
    if len(tag) <= _MAX_KEY:
        return tag
    tail = "-" + digest(key, size=8)
    return tag[: _MAX_KEY - len(tail)] + tail


def _short(text: str) -> str:
    return text if len(text) <= _MAX_VALUE else text[: _MAX_VALUE - 1] + "…"


def export_mlflow(
    groups: Iterable[Group], tracking_uri: str, experiment: str
) -> Exported:
    """Export ``groups`` into ``experiment`` at ``tracking_uri``; :class:`ExportError` when
    the store refuses or cannot be reached (what was written stays; a rerun completes it)."""
    need("mlflow", "mlflow")
    path = store_path(tracking_uri)
    if path is not None and tracking_uri.startswith("sqlite:"):
        _check_sqlite_writable(path, tracking_uri)
    lock_path = lock_beside(path) if path is not None else lock_in_cache(tracking_uri)
    with held(lock_path, tracking_uri, f"cannot export to MLflow at {tracking_uri!r}"):
        return _export(groups, tracking_uri, experiment)


def store_path(tracking_uri: str) -> str | None:
    """The local file or directory a tracking URI names (a SQLite database, a file
    store), or None (a server, an in-memory database)."""
    from urllib.parse import unquote, urlsplit

    if tracking_uri.startswith("sqlite:"):
        return _sqlite_path(tracking_uri[len("sqlite:"):])
    if tracking_uri.startswith("file:"):
        return unquote(urlsplit(tracking_uri).path) or None
    if re.match(r"[A-Za-z][A-Za-z0-9+.\-]*:", tracking_uri):
        return None  # http, https, databricks, postgresql, ...
    return tracking_uri


def _sqlite_path(rest: str) -> str | None:
    """The database file of a ``sqlite:`` URI (``rest`` follows the scheme), or None for
    an in-memory database."""
    from urllib.parse import unquote, urlsplit

    if not rest.startswith("///"):
        return None  # sqlite:// is an in-memory database
    path = rest[3:].split("?", 1)[0]
    if path.startswith("file:"):  # a SQLite URI filename (``?uri=true``)
        path = unquote(urlsplit(path).path)
    return path if path not in ("", ":memory:") else None


def _check_sqlite_writable(path: str, tracking_uri: str) -> None:
    """Refuse a database this user cannot write, before MLflow does: MLflow retries the
    connection ten times over about 100 s where it cannot create the database file."""
    full = os.path.abspath(path)
    directory = os.path.dirname(full)
    if os.path.lexists(full):
        if not os.access(full, os.W_OK):
            raise _refused(tracking_uri, f"{full!r} is not writable by this user")
    else:
        while not os.path.lexists(directory) and os.path.dirname(directory) != directory:
            directory = os.path.dirname(directory)
    if not os.access(directory, os.W_OK | os.X_OK):
        raise _refused(tracking_uri, f"the directory {directory!r} is not writable by this user "
                "(SQLite writes the database and its journal there)")


def _refused(tracking_uri: str, why: str) -> ExportError:
    return ExportError(f"cannot export to MLflow at {tracking_uri!r}: {why}")


def _export(groups: Iterable[Group], tracking_uri: str, experiment: str) -> Exported:
    """What the store lacks, added; under the destination's lock."""
    from mlflow.tracking import MlflowClient

    try:
        client = MlflowClient(tracking_uri=tracking_uri)
        experiment_id = _experiment(client, experiment)
        known = _known_runs(client, experiment_id)
        created = points = runs = 0
        for group in groups:
            runs += len(group.rows)
            run_id = known.get(group.key)
            if run_id is None:
                run_id = _create(client, experiment_id, group)
                created += 1
            points += _log_new(client, run_id, group)
    except ExportError:
        raise
    except Exception as exc:  # the store's own errors: one line, never a traceback
        raise _refused(tracking_uri, _reason(exc)) from exc
    return Exported(created, points, runs)


def _reason(exc: BaseException) -> str:
    """The innermost cause's first line (``attempt to write a readonly database``,
    ``Connection refused``): what the layers above it wrap in longer words."""
    seen = {id(exc)}
    while (inner := _wrapped(exc)) is not None and id(inner) not in seen:
        seen.add(id(inner))
        exc = inner
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {_sentences(text[0]) if text else ''}"


def _wrapped(exc: BaseException) -> BaseException | None:
    """What ``exc`` wraps: a database driver's error (SQLAlchemy's ``orig``), else its
    cause, else its context; None for none."""
    inner = getattr(exc, "orig", None) or exc.__cause__ or exc.__context__
    return inner if isinstance(inner, BaseException) else None


def _sentences(line: str, limit: int = 2000) -> str:
    """``line`` whole, or its sentences that fit ``limit`` characters and then ``…``:
    never cut mid-sentence."""
    if len(line) <= limit:
        return line
    end = line.rfind(". ", 0, limit)
    return (line[: end + 1] if end > 0 else line[:limit]) + " …"


def _experiment(client: Any, name: str) -> str:
    found = client.get_experiment_by_name(name)
    if found is None:
        return str(client.create_experiment(name))
    if found.lifecycle_stage != "active":
        raise ExportError(f"MLflow experiment {name!r} is deleted; restore it or name another")
    return str(found.experiment_id)


def _known_runs(client: Any, experiment_id: str) -> dict[str, str]:
    """Key tag -> MLflow run id, for every run this exporter made in the experiment."""
    known: dict[str, str] = {}
    token = None
    while True:
        page = client.search_runs(
            [experiment_id], filter_string=f"tags.`{KEY_TAG}` != ''",
            max_results=1000, page_token=token,
        )
        for run in page:
            key = run.data.tags.get(KEY_TAG)
            if key:
                known.setdefault(key, run.info.run_id)
        token = page.token
        if not token:
            return known


def _create(client: Any, experiment_id: str, group: Group) -> str:
    """The group's MLflow run, created with its key tag in the same call (so a rerun
    after a failure finds it) and its params."""
    from mlflow.entities import Param

    start, end = _span_ms(group)
    run = client.create_run(experiment_id, start_time=start, tags=_run_tags(group))
    run_id: str = run.info.run_id
    params = [Param(k, _short(v)) for k, v in group.described().items()]
    _log_batches(client, run_id, "params", params, 100)
    client.set_terminated(run_id, "FINISHED", end_time=end)
    return run_id


def _span_ms(group: Group) -> tuple[int | None, int | None]:
    """The group's first start and last end, in ms since the epoch; None for both where
    no run has a start."""
    spans = [
        (s, s + float(r["seconds"]))
        for r in group.rows if (s := posix_seconds(r["started_at"])) is not None
    ]
    if not spans:
        return None, None
    return int(min(s for s, _ in spans) * 1000), int(max(e for _, e in spans) * 1000)


def _run_tags(group: Group) -> dict[str, str]:
    """The tags a group's run is created with: its key, directory and name, and its
    run_idx and rank where it has them."""
    tags = {
        KEY_TAG: group.key,
        "stagetimer.directory": _short(readable(group.directory)),
        "mlflow.runName": _short(group.name),
    }
    if group.run_idx is not None:
        tags["stagetimer.run_idx"] = str(group.run_idx)
    if group.rank is not None:
        tags["stagetimer.rank"] = str(group.rank)
    return tags


def _points(group: Group) -> Iterator[tuple[str, str, float, int, int]]:
    """(key, stage, value, timestamp in ms, step) for each recorded run of the group."""
    for row in group.rows:
        started = posix_seconds(row["started_at"])
        yield (
            metric_key(row["stage"]), row["stage"], float(row["seconds"]),
            round(started * 1000) if started is not None else 0, label_step(row["label"]),
        )


def _held(client: Any, run_id: str, data: Any, keys: set[str]) -> set[tuple[str, float, int, int]]:
    """The points (key, value, timestamp, step) the run already holds of ``keys``."""
    return {
        (key, m.value, m.timestamp, m.step)
        for key in keys if key in data.metrics
        for m in client.get_metric_history(run_id, key)
    }


def _log_new(client: Any, run_id: str, group: Group) -> int:
    """Write the group's points the MLflow run does not hold yet; how many were written."""
    from mlflow.entities import Metric

    points = list(_points(group))
    data = client.get_run(run_id).data
    held = _held(client, run_id, data, {p[0] for p in points})
    new = [p for p in points if (p[0], p[2], p[3], p[4]) not in held]
    _log_batches(client, run_id, "tags", _new_tags(new, group, data.tags), 100)
    metrics = [Metric(key, value, timestamp, step) for key, _, value, timestamp, step in new]
    _log_batches(client, run_id, "metrics", metrics, _BATCH)
    return len(new)


def _new_tags(new: list[tuple[str, str, float, int, int]], group: Group,
              held: dict[str, str]) -> list[Any]:
    """The tags the new points need: the stage name behind each key that differs from
    it, and the group's hardware ids where the run's tag does not say them yet."""
    from mlflow.entities import RunTag

    tags = [
        RunTag(_stage_tag(key), _short(stage))
        for key, stage in {(p[0], p[1]) for p in new} if key != stage
    ]
    return tags + _hardware_tags(group, held)


def _hardware_tags(group: Group, held: dict[str, str]) -> list[Any]:
    """The tag naming the group's hardware ids, where the run's does not say them yet."""
    from mlflow.entities import RunTag

    hardware = ",".join(sorted({r["hardware_id"] for r in group.rows if r.get("hardware_id")}))
    if not hardware or held.get("stagetimer.hardware_ids") == hardware:
        return []
    return [RunTag("stagetimer.hardware_ids", _short(hardware))]


def _log_batches(client: Any, run_id: str, kind: str, items: list[Any], size: int) -> None:
    """``items`` (params, tags or metrics) logged ``size`` at a time."""
    for i in range(0, len(items), size):
        client.log_batch(run_id, **{kind: items[i : i + size]})
