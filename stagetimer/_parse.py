"""Reading sidecar bytes and parsing them into the plain mappings the writers and loaders use.

Whatever a sidecar holds, these functions return its mapping or raise
``SidecarCorruptError`` naming the file and what is wrong.
"""

from __future__ import annotations

import json
import os
from typing import Any

from stagetimer._errors import SchemaVersionError, SidecarCorruptError

__all__ = [
    "SCHEMA_VERSION",
    "open_sidecar",
    "parse_hardware",
    "parse_timings",
    "read_all",
    "read_bytes",
]

#: Version of ``timings_hardware.json``.
#: 1 (stagetimer 0.1): {"schema_version": 1, "hardware": {hardware_id: description}}.
SCHEMA_VERSION = 1


def open_sidecar(path: str) -> tuple[int, os.stat_result] | None:
    """A read-only descriptor on ``path`` and its stat, or None when it does not exist.

    The caller closes the descriptor.
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        return fd, os.fstat(fd)
    except BaseException:
        os.close(fd)
        raise


def read_all(fd: int, size: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = os.read(fd, max(size - total, 0) + 65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)


def read_bytes(path: str) -> bytes | None:
    """The file's bytes, or None when it does not exist."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def _loads(path: str, raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SidecarCorruptError(path, f"does not parse as JSON ({exc})") from None


def parse_timings(path: str, raw: bytes | None) -> dict[str, Any]:
    """The top-level mapping of ``timings.json`` (empty when the file is missing)."""
    if raw is None:
        return {}
    data = _loads(path, raw)
    if not isinstance(data, dict):
        raise SidecarCorruptError(
            path, f"top level is a JSON {type(data).__name__}, expected an object"
        )
    return data


def parse_hardware(path: str, raw: bytes | None) -> dict[str, Any]:
    """The mapping of ``timings_hardware.json``; newer schemas raise ``SchemaVersionError``."""
    if raw is None:
        return {"schema_version": SCHEMA_VERSION, "hardware": {}}
    data = _loads(path, raw)
    if not isinstance(data, dict):
        raise SidecarCorruptError(
            path, f"top level is a JSON {type(data).__name__}, expected an object"
        )
    version = data.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        raise SchemaVersionError(path, version, SCHEMA_VERSION)
    if version != SCHEMA_VERSION:
        raise SidecarCorruptError(path, f"schema_version is {version!r}, expected 1")
    if not isinstance(data.get("hardware"), dict):
        raise SidecarCorruptError(path, "'hardware' is missing or not an object")
    return data
