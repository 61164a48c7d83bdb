"""Output files (a picture, a page): whether one can be written where the user named it,
asked before any reading or drawing is done, and writing it.

A page or picture is written as every file of the project is (``durable.write_file``): a
temporary file of a random name, created new without following links, renamed into
place. In a directory others may write, nothing they planted (a link at the page's name
or at any name a temporary file could have) is ever written through.
"""

from __future__ import annotations

import io
import os
from typing import Any

from stagetimer._system.durable import write_file

__all__ = ["unwritable", "write_figure", "write_output"]


def unwritable(path: str, what: str) -> str | None:
    """Why ``what`` (``"picture"``, ``"page"``) cannot be written at ``path``, or None: it
    must name a file in an existing, writable directory."""
    if os.path.isdir(path):
        return f"is a directory; name the {what}'s file"
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        return f"its directory {folder} does not exist"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"its directory {folder} is not writable"
    return None


def write_output(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` whole (``durable.write_file``): a reader never opens
    half a file, and nothing planted at any name is written through."""
    write_file(path, data)


def write_figure(figure: Any, path: str, image_format: str | None = None, **options: Any) -> None:
    """Save a matplotlib ``figure`` to ``path`` as ``write_output`` writes: drawn into
    memory first (matplotlib would open ``path`` itself, following a link there).
    ``image_format``: as ``savefig``'s ``format`` (default: ``path``'s suffix, else
    matplotlib's ``savefig.format``)."""
    if image_format is None:
        image_format = os.path.splitext(path)[1][1:].lower() or None
    buffer = io.BytesIO()
    figure.savefig(buffer, format=image_format, **options)
    write_output(path, buffer.getvalue())
