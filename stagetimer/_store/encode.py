"""encode: the sidecars' bytes, written the one way every writer writes them.

``timings.json`` is indented with one run per line (readable, diffable, and encoded by
the C encoder); the runs a writer already encoded are reused from its
``TimingsCache`` (defined here, kept across saves by ``sidecar.update_file``).
``timings_hardware.json`` is plain indented JSON.
"""

from __future__ import annotations

import json
from typing import Any

from stagetimer._store.rules import is_stage

__all__ = ["TimingsCache", "dumps_hardware", "dumps_timings", "timings_bytes"]


class TimingsCache:
    """What one writer last saved to a file, reused while the file still holds those bytes.

    Saves of large files are dominated by parsing and encoding; when the bytes on disk
    are the bytes this writer wrote, its parsed data and encoded runs are still exact.
    """

    def __init__(self) -> None:
        self.raw: bytes | None = None
        self.data: dict[str, Any] | None = None
        #: stage -> (its runs list, how many of them are encoded, the UTF-8 of those:
        #: run, separator, run, ...)
        self.runs_text: dict[str, tuple[list[Any], int, bytearray]] = {}
        #: stages whose total_seconds this writer computed from their runs
        self.trusted_totals: set[str] = set()
        self.buffer = bytearray()

    def clear(self) -> None:
        self.raw, self.data = None, None
        self.runs_text.clear()
        self.trusted_totals.clear()


# One encoder object: json.dumps with keyword arguments builds a new one per call.
# Without indent it uses the C encoder. New values are checked finite before they get
# here; a NaN read from an older file is written back as it was read.
_encode = json.JSONEncoder(ensure_ascii=False).encode


def _indented(value: Any, depth: int) -> str:
    if value is None or isinstance(value, (str, int, float)):
        return _encode(value)  # a scalar needs no indentation (and json.dumps is slow)
    return json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n" + "  " * depth)


_RUN_SEPARATOR = b",\n      "


def _runs_text(
    runs: list[Any], cached: tuple[list[Any], int, bytearray] | None
) -> tuple[list[Any], int, bytearray]:
    """The runs' text (``cached``'s, with the runs added since), and what to cache.

    The runs list of a stage only ever grows in place (sequential appends); any other
    change replaces the list object. So the text cached for the same list object is the
    text of its first runs: encode only the rest. One buffer per stage, not a piece per
    run: a save of 10,000 runs joins a few buffers, not 20,000 pieces.
    """
    if cached is not None and cached[0] is runs and cached[1] <= len(runs):
        done, text = cached[1], cached[2]
    else:
        done, text = 0, bytearray()
    for run in runs[done:]:
        if text:
            text += _RUN_SEPARATOR
        text += _encode(run).encode("utf-8")
    return runs, len(runs), text


def _stage_pieces(
    name: str, stage: dict[str, Any], cache: TimingsCache | None, out: list[bytes | bytearray]
) -> None:
    out.append(b"{\n")
    for i, (key, value) in enumerate(stage.items()):
        out.append(b"    " if i == 0 else b",\n    ")
        if key == "runs" and value:
            out.append(b'"runs": [\n      ')
            out.append(_cached_runs_text(name, value, cache))
            out.append(b"\n    ]")
        else:
            out.append(f"{_encode(key)}: {_indented(value, 2)}".encode())
    out.append(b"\n  }")


def _cached_runs_text(name: str, runs: list[Any], cache: TimingsCache | None) -> bytearray:
    """The text of stage ``name``'s ``runs``, through (and into) the ``cache``."""
    encoded = _runs_text(runs, cache.runs_text.get(name) if cache else None)
    if cache is not None:
        cache.runs_text[name] = encoded
    return encoded[2]


def timings_bytes(data: dict[str, Any], cache: TimingsCache | None = None) -> bytes:
    """``timings.json`` as UTF-8: indented, one run per line (readable, diffable, C-encoded).

    With a ``cache``, the runs a stage already had are not encoded again.
    """
    if not data:
        return b"{}\n"
    out: list[bytes | bytearray] = [b"{\n"]
    for i, (key, value) in enumerate(data.items()):
        out.append(f"  {_encode(key)}: ".encode() if i == 0 else f",\n  {_encode(key)}: ".encode())
        if is_stage(value):
            _stage_pieces(key, value, cache, out)
        else:
            out.append(_indented(value, 1).encode())
    out.append(b"\n}\n")
    return b"".join(out)


def dumps_timings(data: dict[str, Any]) -> str:
    """``timings.json`` text (see ``timings_bytes``)."""
    return timings_bytes(data).decode("utf-8")


def dumps_hardware(data: dict[str, Any]) -> str:
    """``timings_hardware.json`` text."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
