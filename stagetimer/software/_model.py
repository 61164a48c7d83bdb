"""The software description: frozen attrs classes stored in ``timings_hardware.json``.

The hardware says what a run could use; this says what ran: the Python, the commit
of the experiment's code and its uncommitted edits, the versions of the libraries the
process imported and what accelerator libraries loaded at run time. Like the hardware
description it is hashed (``software_id``) and stored once, so nothing volatile (time,
pid, host, paths of temporary directories) belongs in it. Missing values stay ``None``;
``Software.sources`` says where each value came from, or why it is missing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from stagetimer._system.content_id import content_id

__all__ = ["CodeInfo", "Software", "software_description", "software_id"]


@attrs.frozen
class CodeInfo:
    """The git commit of the work tree holding the program's entry point, and its edits."""

    #: 40 hex digits (64 in a SHA-256 repository)
    commit: str | None = None
    #: tracked files differ from the commit (staged or not); untracked files do not count
    dirty: bool | None = None
    #: SHA-256 of ``git diff HEAD`` (tracked files) when dirty, so that two different sets
    #: of edits on one commit are told apart; None when clean
    diff_sha256: str | None = None


@attrs.frozen
class Software:
    """What the timed process ran. Stored once per ``software_id``."""

    #: implementation and full version, ``"CPython 3.11.7"``
    python: str | None = None
    #: None outside a git work tree (``sources["code"]`` says why)
    code: CodeInfo | None = None
    #: distribution name -> version, for each installed distribution providing an
    #: imported module (the standard library is not a distribution)
    packages: dict[str, str] = attrs.Factory(dict)
    #: library -> version loaded at run time (``cuda``, ``cudnn``, ``nccl``, ``nvidia_driver``)
    accelerators: dict[str, str] = attrs.Factory(dict)
    #: field -> where its value came from, or why it is missing
    sources: dict[str, str] = attrs.Factory(dict)


def software_description(software: Software | Mapping[str, Any]) -> dict[str, Any]:
    """The JSON-ready description of ``software``, exactly as stored in the sidecar."""
    if isinstance(software, Software):
        return attrs.asdict(software)
    return dict(software)


def software_id(software: Software | Mapping[str, Any]) -> str:
    """``"sw-"`` + the first 16 hex digits of the SHA-256 of the canonical JSON description.

    Equal descriptions give equal ids in any process, on any Python version.

    >>> software_id({"python": "CPython 3.11.7"})
    'sw-...'
    """
    return content_id("sw-", software_description(software))
