"""``stagetimer export tensorboard``: event files TensorBoard reads, one scalar per run.

A TensorBoard run (a sub-directory of the destination) per artifact directory, run
index and rank (``<relpath>/run<i>/rank<r>``, each part only where runs have one), as
MLflow has one MLflow run for each; a scalar tag per stage; its step the number the
run's label ends with (``epoch3`` -> 3; else 0), as MLflow's step, so an epoch's stage
plots against epochs and each seed is a line of its own; its value the seconds, its wall
time the recorded start. Under the destination's lock (``stagetimer._export.lock``) the
events already in a run's directory are read back and only the missing ones are written,
into one new event file: a second export writes nothing, one after new runs writes
exactly those, and two at once write them once.
"""

from __future__ import annotations

import glob
import os
import shutil
import tempfile
from collections.abc import Iterable
from typing import Any

from stagetimer._analysis.wall_span import posix_seconds
from stagetimer._export.lock import held, lock_beside
from stagetimer._export.runs import Exported, ExportError, Group, label_step, need
from stagetimer._system.durable import fsync_directory

__all__ = ["export_tensorboard", "run_directory"]

_Point = tuple[str, int, float]  # tag, step, wall time (ms precision)


def run_directory(group: Group) -> str:
    """The group's TensorBoard run, relative to the destination (``/``-separated)."""
    parts = [p for p in group.relpath.split("/") if p not in ("", ".", "..")] or ["."]
    if group.run_idx is not None:
        parts.append(f"run{group.run_idx}")
    if group.rank is not None:
        parts.append(f"rank{group.rank}")
    return "/".join(parts)


def export_tensorboard(groups: Iterable[Group], destination: str) -> Exported:
    """Write the scalars ``destination`` does not hold yet; :class:`ExportError` when it
    cannot be read or written."""
    need("tensorboard", "tensorboard")
    by_run: dict[str, list[tuple[_Point, float]]] = {}
    runs = 0
    for group in groups:
        runs += len(group.rows)
        points = by_run.setdefault(run_directory(group), [])
        for row in group.rows:
            step = label_step(row["label"])
            started = posix_seconds(row["started_at"]) or 0.0
            points.append(((row["stage"], step, round(started, 3)), float(row["seconds"])))
    failure = f"cannot write TensorBoard events into {destination!r}"
    with held(lock_beside(destination), destination, failure):
        written, created = _add_missing(destination, by_run)
    return Exported(created, written, runs)


def _add_missing(
    destination: str, by_run: dict[str, list[tuple[_Point, float]]]
) -> tuple[int, int]:
    """(points written, runs created): what each run's event files lack, added."""
    written = created = 0
    for run, points in sorted(by_run.items()):
        path = os.path.join(destination, *run.split("/"))
        try:
            added, new_run = _add_run(path, points)
        except ExportError:
            raise
        except Exception as exc:  # the writer's and the file system's errors: one line
            reason = getattr(exc, "strerror", None) or str(exc).splitlines()[0]
            raise ExportError(
                f"cannot write TensorBoard events into {path!r}: {type(exc).__name__}: {reason}"
            ) from exc
        written += added
        created += new_run
    return written, created


def _add_run(path: str, points: list[tuple[_Point, float]]) -> tuple[int, bool]:
    """What one run's event files in ``path`` lack, added: (points written, whether the
    run was created)."""
    held_points = _held(path)
    new = [(p, v) for p, v in points if p not in held_points]
    if not new:
        return 0, False
    _write(path, sorted(new, key=lambda pv: (pv[0][1], pv[0][2], pv[0][0])))
    return len(new), not held_points


def _held(path: str) -> set[_Point]:
    """The scalars the event files in ``path`` (not below it) already hold."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    held: set[_Point] = set()
    for file in sorted(glob.glob(os.path.join(glob.escape(path), "*tfevents*"))):
        for event in EventFileLoader(file).Load():
            if event.HasField("summary"):
                for value in event.summary.value:
                    held.add((value.tag, int(event.step), round(event.wall_time, 3)))
    return held


def _write(path: str, new: list[tuple[_Point, float]]) -> None:
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    os.makedirs(path, exist_ok=True)  # an unwritable destination fails here, plainly
    # TensorBoard's writer opens a predictable name (time, host, pid) following links: it
    # writes into a private directory of a random name (0700), and each file it made is
    # then linked into ``path`` under a name never taken (link(2) fails on any name that
    # exists, a planted link included), so nothing planted in ``path`` is written through.
    private = tempfile.mkdtemp(prefix=".stagetimer-", dir=path)
    try:
        writer: Any = EventFileWriter(private, max_queue_size=len(new) + 1)
        try:
            for (tag, step, wall), seconds in new:
                summary = Summary(value=[Summary.Value(tag=tag, simple_value=seconds)])
                writer.add_event(Event(wall_time=wall, step=step, summary=summary))
        finally:
            writer.close()
        for name in sorted(os.listdir(private)):
            _publish(os.path.join(private, name), path, name)
    finally:
        shutil.rmtree(private, ignore_errors=True)


def _publish(made: str, path: str, name: str) -> None:
    """Link the event file ``made`` into ``path`` as ``name``, or as ``name.<random>``
    where that name is taken (never replacing, never following what lies there)."""
    target = name
    for _ in range(100):
        try:
            os.link(made, os.path.join(path, target), follow_symlinks=False)
            break
        except FileExistsError:
            target = f"{name}.{os.urandom(4).hex()}"
    else:
        raise FileExistsError(f"no free name for {name} in {path}")
    fsync_directory(path)
