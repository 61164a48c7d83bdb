"""Strict JSON text that every output stream can take.

- No ``NaN`` or ``Infinity`` (not JSON): a value that is not finite is written as
  null. The runs ``[0.0, 1e300]`` give a ratio past the largest float.
- No raw characters a terminal acts on (``stagetimer._escape.escape_json_text``).
- No lone surrogates: a path whose bytes are not UTF-8 reaches Python as a
  surrogate-escaped string (PEP 383, ``os.fsdecode``), which ``json.dumps(...,
  ensure_ascii=False)`` leaves raw and a UTF-8 stream refuses to encode
  (``UnicodeEncodeError``). Each is written as its ``\\udcXX`` escape: a JSON parser
  gives the same string back, and ``os.fsencode`` of it the original bytes.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from stagetimer._escape import escape_json_text

__all__ = ["indented_json", "json_escaped", "layered_json", "strict", "strict_json"]

_INF = math.inf
_SURROGATE = re.compile("[\ud800-\udfff]")


def strict(value: Any) -> Any:
    """``value`` with every non-finite float as None: what strict JSON can hold."""
    if isinstance(value, float):  # a subclass too (numpy.float64): the encoder's repr
        return value if -_INF < value < _INF else None
    if isinstance(value, dict):
        return {k: strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict(v) for v in value]
    return value


def json_escaped(text: str) -> str:
    """JSON text with terminal controls and lone surrogates written as ``\\uXXXX``."""
    if text.isascii() and "\x7f" not in text:  # the usual suite: nothing to escape (C speed)
        return text
    text = escape_json_text(text)
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def strict_json(layout: Callable[[Any, int], str], value: Any) -> str:
    """``layout(value, 0)`` (a JSON encoder refusing NaN) as text any stream encodes,
    a line end after it. Only a value holding a non-finite float is copied (``strict``)."""
    try:
        text = layout(value, 0)
    except ValueError:  # "Out of range float values are not JSON compliant"
        text = layout(strict(value), 0)
    return json_escaped(text) + "\n"


#: nesting level from which a value is written on one line (``layered_json``)
_ONE_LINE_LEVEL = 4

#: one value on one line, strict JSON: ``json.dumps(value, ensure_ascii=False, allow_nan=False)``
#: with its encoder built once
_ONE_LINE = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode


def _layered(value: Any, level: int) -> str:
    if level >= _ONE_LINE_LEVEL or not isinstance(value, (dict, list)):
        return _ONE_LINE(value)
    if not value:  # a comparison's many empty lists: no encoder built for each
        return "{}" if isinstance(value, dict) else "[]"
    inner, outer = "  " * (level + 1), "  " * level
    if isinstance(value, dict):
        items = [
            f"{inner}{_ONE_LINE(key)}: {_layered(item, level + 1)}"
            for key, item in value.items()
        ]
        return "{\n" + ",\n".join(items) + f"\n{outer}}}"
    items = [f"{inner}{_layered(item, level + 1)}" for item in value]
    return "[\n" + ",\n".join(items) + f"\n{outer}]"


def layered_json(value: Any) -> str:
    """``value`` as strict JSON text (``strict_json``) indented down to the fourth level,
    each value there on one line: a comparison's stages and differences, a history's
    points and changes."""
    return strict_json(_layered, value)


def _indented(value: Any, level: int) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)


def indented_json(value: Any) -> str:
    """``value`` as indented strict JSON text any stream encodes (``strict_json``)."""
    return strict_json(_indented, value)
