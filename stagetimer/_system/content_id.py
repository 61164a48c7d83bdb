"""The id of a stored description: the hash both ``hardware_id`` and ``software_id`` use.

A module of its own, without the description classes: the software capture names its
description with it and would otherwise import every hardware class at its first call
(``benchmarks/bench_software.py`` times that call).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["content_id"]


def content_id(prefix: str, stored: Mapping[str, Any]) -> str:
    """``prefix`` + the first 16 hex digits of the SHA-256 of ``stored``'s canonical JSON
    (sorted keys, no spaces): the id of a hardware or software description, equal for
    equal descriptions in any process, on any Python version."""
    import hashlib  # 2.7 ms at its first import (OpenSSL): not for a capture that names nothing

    canonical = json.dumps(stored, sort_keys=True, separators=(",", ":"))
    return prefix + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]
