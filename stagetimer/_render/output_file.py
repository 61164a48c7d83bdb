"""Whether an output file (a picture, a page) can be written where the user named it,
asked before any reading or drawing is done."""

from __future__ import annotations

import os

__all__ = ["unwritable"]


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
