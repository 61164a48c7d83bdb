"""What a rescue file holds, read and checked like a sidecar before ``recover`` trusts it.

A rescue file is a second way for a record to reach ``timings.json``, and in a shared
directory anyone may have written it. So it is opened as a sidecar is (no link
followed, nothing but a regular file, a bounded size), parsed with a sidecar's
structural checks (``parse_json``), and each record checked as a recorder checks its
arguments (``validate.check_run``): a run no writer could have made is refused and
named, never stored, and the other records of the file are still good.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from typing import Any

import attrs

from stagetimer._errors import InvalidRecordError, SidecarCorruptError, short_repr
from stagetimer._format import MAX_FILE_DEPTH, POLICIES
from stagetimer._store.parse import parse_json, read_with_stat
from stagetimer._store.shape import hardware_problem, json_type, software_problem
from stagetimer._store.validate import check_run

__all__ = ["RescueContent", "RescueRecord", "read_rescue"]

@attrs.frozen
class RescueRecord:
    """One record of a rescue file that passed every check: a run of stage ``stage``."""

    stage: str
    run: dict[str, Any]
    #: the rule it is put back by, where not the file's (a callback's part of a run)
    policy: str | None = None


@attrs.frozen
class RescueContent:
    """A rescue file as read: its good records, the ones refused (one line each, saying
    which and why), the hardware they reference, its writer, its file owner and its
    modification time."""

    path: str
    uid: int
    mtime: float  # its st_mtime as read
    owner: dict[str, Any] | None  # None: written before rescue files named their writer
    expected_runs: int | None
    hardware: dict[str, Any]
    records: tuple[RescueRecord, ...]
    refused: tuple[str, ...]
    #: the software descriptions its records reference (written since 0.3)
    software: dict[str, Any] = attrs.Factory(dict)
    #: the policy its writer saved by: ``recover`` applies its rules
    policy: str = "sequential"
    #: its inode as read: it is removed only while its name still holds that file
    ino: int = 0


def _read(path: str) -> tuple[bytes, os.stat_result]:
    """The file's bytes and its stat, read as a sidecar is (``parse.read_with_stat``).

    ``FileNotFoundError`` when it is gone (its writer saved its records and removed it
    meanwhile); any other failure to open or read it is ``SidecarCorruptError``.
    """
    try:
        read = read_with_stat(path)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise SidecarCorruptError(path, f"cannot be read ({exc.strerror})") from None
    if read is None:
        raise FileNotFoundError(errno.ENOENT, "removed meanwhile", path)
    return read


def _header(
    path: str, payload: object
) -> tuple[int | None, list[Any], dict[str, Any], dict[str, Any], str]:
    """The file-wide fields; a file whose own structure is wrong is refused whole (a
    ``policy`` that is none is too, though records are put back by no policy's rules)."""
    if type(payload) is not dict:
        raise SidecarCorruptError(path, f"is {json_type(payload)}, expected an object")
    policy = payload.get("policy")
    if policy not in POLICIES:
        raise SidecarCorruptError(path, f"policy {short_repr(policy)} is not one of {POLICIES}")
    records = payload.get("records")
    if type(records) is not list:
        raise SidecarCorruptError(path, f"'records' is {json_type(records)}, expected an array")
    hardware = _descriptions(path, payload, "hardware")
    software = _descriptions(path, payload, "software")
    return _expected_runs(path, payload), records, hardware, software, policy


def _descriptions(path: str, payload: dict[str, Any], key: str) -> dict[str, Any]:
    """The file's ``hardware`` or ``software`` descriptions (none where absent)."""
    value = payload.get(key, {})
    if type(value) is not dict:
        raise SidecarCorruptError(path, f"{key!r} is {json_type(value)}, expected an object")
    return value


def _expected_runs(path: str, payload: dict[str, Any]) -> int | None:
    """The writer's ``expected_runs``: none, or an int >= 1."""
    expected = payload.get("expected_runs")
    if expected is not None and (type(expected) is not int or expected < 1):
        raise SidecarCorruptError(path, f"expected_runs {short_repr(expected)} is not an int >= 1")
    return expected


def _well_shaped(
    entries: dict[str, Any], problem: Callable[[object], str | None]
) -> dict[str, Any]:
    """The descriptions of ``entries`` with a description's shape; the others are left
    out (a run whose software is not described keeps its ``software_id``, as an older
    writer's; one whose hardware is not is refused, see ``read_rescue``)."""
    return {key: entry for key, entry in entries.items() if problem(entry) is None}


def _check_entry(entry: object) -> RescueRecord:
    if type(entry) is not dict:
        raise InvalidRecordError(f"is {json_type(entry)}, expected a {{stage, run}} object")
    name, run = entry.get("stage"), entry.get("run")
    check_run(name, run)
    assert isinstance(name, str) and isinstance(run, dict)
    policy = entry.get("policy")
    if policy is not None and policy not in POLICIES:
        raise InvalidRecordError(f"policy {short_repr(policy)} is not one of {POLICIES}")
    return RescueRecord(name, run, policy)


def read_rescue(path: str) -> RescueContent:
    """Read and check one rescue file; ``SidecarCorruptError`` when the file as a whole
    cannot be read (not a regular file, not JSON, nested too deep, a key twice, a lone
    surrogate, wrong file-wide fields). A bad record is refused on its own."""
    raw, st = _read(path)
    # Twice a sidecar's depth: a record nested too deep is refused on its own (by
    # check_run) rather than with the whole file; past this, the file is refused.
    payload = parse_json(path, raw, 2 * MAX_FILE_DEPTH)
    expected, entries, hardware, software, policy = _header(path, payload)
    good_hardware = _well_shaped(hardware, hardware_problem)
    records: list[RescueRecord] = []
    refused: list[str] = []
    for i, entry in enumerate(entries):
        try:
            record = _check_entry(entry)
        except InvalidRecordError as exc:
            refused.append(f"record {i}: {exc}")
            continue
        hardware_id = record.run.get("hardware_id")
        if hardware_id in hardware and hardware_id not in good_hardware:
            refused.append(
                f"record {i}: its hardware description {short_repr(hardware_id)} does not "
                "have the shape of one"
            )
            continue
        records.append(record)
    owner = payload.get("owner")
    return RescueContent(
        path=path,
        uid=st.st_uid,
        mtime=st.st_mtime,
        owner=owner if type(owner) is dict else None,
        expected_runs=expected,
        hardware=good_hardware,
        records=tuple(records),
        refused=tuple(refused),
        software=_well_shaped(software, software_problem),
        policy=policy,
        ino=st.st_ino,
    )
