"""``STAGETIMER_DISABLE``: the switch that turns recording off, read at every stage."""

from __future__ import annotations

import os
from typing import Any

__all__ = ["recording_disabled"]

_DISABLE = "STAGETIMER_DISABLE"
# os.environ.get encodes the key and decodes the value on every call (~0.8 µs, half a
# disabled stage); os.environ keeps the encoded mapping it updates in ``_data``
# (CPython's os.py), which is read here directly when present.
_environ_data: Any = getattr(os.environ, "_data", None)
_disable_key: Any = None
_ONE: Any = None
if _environ_data is not None:
    _disable_key = os.environ.encodekey(_DISABLE)
    _ONE = os.environ.encodevalue("1")


def recording_disabled() -> bool:
    """``STAGETIMER_DISABLE=1`` (or true/yes/on) turns recording off."""
    if _environ_data is not None:
        raw = _environ_data.get(_disable_key)
        if raw is None:
            return False
        if raw == _ONE:
            return True
        value: str | None = os.environ.decodevalue(raw)
    else:
        value = os.environ.get(_DISABLE)
    return value is not None and value.strip().lower() in ("1", "true", "yes", "on")
