"""Rescue files: where a record whose save failed waits, and ``recover`` folding them back.

A recorder keeps, per process, one rescue file ``timings.rescue-<UTC time>-<pid>.json``
beside the sidecar holding exactly its records not yet saved. It is rewritten
atomically whenever that set changes and removed once it is empty, so a record is
never only in memory: ``os._exit``, SIGKILL or the order of exit handlers cannot lose
it. ``recover(directory)`` (``stagetimer recover DIR``) stores the records of every
rescue file in a directory under the usual lock and rules, then removes the file.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from typing import Any

import attrs

from stagetimer._errors import InvalidRecordError, InvalidTypeError, SidecarCorruptError
from stagetimer._format import (
    HARDWARE_FILE,
    POLICIES,
    RESCUE_PREFIX,
    RESCUE_SUFFIX,
    TIMINGS_FILE,
)
from stagetimer._store.rules import apply_run, is_stage
from stagetimer._store.sidecar import (
    add_hardware,
    add_software,
    dumps_hardware,
    timings_bytes,
    update_file,
)

__all__ = [
    "Recovered",
    "recover",
    "rescue_files",
    "run_is_stored",
]

_MAX_BYTES = 256 * 1024 * 1024


def run_is_stored(data: dict[str, Any], name: str, run: dict[str, Any]) -> bool:
    """Whether stage ``name`` of ``data`` already holds ``run`` (equal in every key)."""
    stage: Any = data.get(name)
    if not is_stage(stage):
        return False
    runs: list[Any] = stage["runs"]
    return any(r == run for r in runs)


@attrs.frozen
class Recovered:
    """What ``recover`` did with one rescue file: ``stored`` records written, ``already``
    found in ``timings.json`` (stored before), the rescue file then removed."""

    path: str
    stored: int
    already: int


def rescue_files(directory: str) -> list[str]:
    """The rescue files of an artifact directory, oldest name first."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    return sorted(
        os.path.join(directory, n)
        for n in names
        if n.startswith(RESCUE_PREFIX) and n.endswith(RESCUE_SUFFIX)
    )


def _read_rescue(path: str) -> dict[str, Any]:
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise SidecarCorruptError(path, f"cannot be opened ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SidecarCorruptError(path, "is not a regular file")
        if st.st_size > _MAX_BYTES:
            raise SidecarCorruptError(path, f"is {st.st_size} bytes, too large for a rescue file")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(fd)
    try:
        payload = json.loads(b"".join(chunks))
    except (ValueError, RecursionError) as exc:
        raise SidecarCorruptError(path, f"does not parse as JSON ({exc})") from None
    if not isinstance(payload, dict):
        raise SidecarCorruptError(path, "is not a JSON object")
    if payload.get("policy") not in POLICIES:
        problem = f"policy {payload.get('policy')!r} is not one of {POLICIES}"
        raise SidecarCorruptError(path, problem)
    records = payload.get("records")
    if not isinstance(records, list) or not all(
        isinstance(r, dict) and isinstance(r.get("stage"), str) and isinstance(r.get("run"), dict)
        for r in records
    ):
        raise SidecarCorruptError(path, "'records' is not a list of {stage, run} objects")
    for key in ("hardware", "software"):
        if not isinstance(payload.get(key, {}), dict):
            raise SidecarCorruptError(path, f"{key!r} is not an object")
    expected = payload.get("expected_runs")
    if expected is not None and (
        isinstance(expected, bool) or not isinstance(expected, int) or expected < 1
    ):
        raise SidecarCorruptError(path, f"expected_runs {expected!r} is not an int >= 1")
    return payload


def _recover_one(directory: str, path: str, lock_timeout: float) -> Recovered:
    from stagetimer._store.parse import parse_hardware, parse_timings

    payload = _read_rescue(path)
    records: list[dict[str, Any]] = payload["records"]
    hardware: dict[str, Any] = payload.get("hardware", {})
    needed = {
        r["run"]["hardware_id"]: hardware[r["run"]["hardware_id"]]
        for r in records
        if r["run"].get("hardware_id") in hardware
    }
    software: dict[str, Any] = payload.get("software", {})
    needed_software = {
        r["run"]["software_id"]: software[r["run"]["software_id"]]
        for r in records
        if r["run"].get("software_id") in software
    }
    if needed or needed_software:

        def change_hardware(data: dict[str, Any]) -> str | None:
            added = add_hardware(data, needed)
            added_software = add_software(data, needed_software)
            return dumps_hardware(data) if added or added_software else None

        update_file(
            os.path.join(directory, HARDWARE_FILE), parse_hardware, change_hardware, lock_timeout
        )
    counts = [0, 0]
    policy: str = payload["policy"]
    expected: int | None = payload.get("expected_runs")

    def change(data: dict[str, Any]) -> bytes | None:
        counts[:] = [0, 0]
        for record in records:
            name, run = record["stage"], record["run"]
            if run_is_stored(data, name, run):
                counts[1] += 1
                continue
            try:
                apply_run(data, name, run, policy)
            except InvalidRecordError as exc:
                raise InvalidRecordError(f"{path}: {exc}", exc.value) from None
            counts[0] += 1
            if expected is not None and run.get("run_idx") is not None:
                data[name]["expected_runs"] = expected
        return timings_bytes(data) if counts[0] else None

    update_file(os.path.join(directory, TIMINGS_FILE), parse_timings, change, lock_timeout)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    return Recovered(path, counts[0], counts[1])


def recover(directory: str | os.PathLike[str], *, lock_timeout: float = 60.0) -> list[Recovered]:
    """Fold the rescue files of ``directory`` back into its ``timings.json``.

    Each rescue file's records are stored under the file's lock with the replacement
    rules of the recorder that wrote it (its ``policy``); a record already in
    ``timings.json`` is not stored again. Each rescue file is removed once its records
    are stored, so running it again changes nothing. Returns what was done, one
    ``Recovered`` per rescue file. Raises ``SidecarCorruptError`` for a rescue file or
    sidecar that does not parse (nothing written, the rescue file kept),
    ``InvalidRecordError`` for a record the file refuses, ``LockTimeoutError``,
    ``InvalidTypeError`` (a ``TypeError``) for a ``directory`` that is not a path,
    ``NotADirectoryError``/``FileNotFoundError`` for a path that is not a directory.

    >>> recover("exports/pursuit/classic_3/ippo")
    [Recovered(path='.../timings.rescue-20261129T222802123456Z-4242.json', stored=2, already=0)]
    """
    if isinstance(directory, bytes) or not isinstance(directory, (str, os.PathLike)):
        raise InvalidTypeError(
            f"directory {directory!r} is not valid: expected a str or os.PathLike", directory
        )
    path = os.fspath(directory)
    if not os.path.isdir(path):
        if os.path.lexists(path):
            raise NotADirectoryError(f"{path}: not a directory")
        raise FileNotFoundError(f"{path}: no such directory")
    return [_recover_one(path, rescue, lock_timeout) for rescue in rescue_files(path)]
