"""Text from someone else's file, written so that GitHub's Markdown shows it as it is.

A stage or directory name may hold ``*x*`` (emphasis), ``<b>`` (raw HTML, which
GitHub strips), ``\\|`` (a table cell's escaped pipe eats the backslash),
``&amp;`` (an entity), ``[a](b)`` (a link) or start with ``#`` or ``-``. CommonMark
lets a backslash escape any ASCII punctuation character (spec 0.31, section 2.4,
"Backslash escapes"), and an escaped character is always literal, so every one of
them is escaped; GFM's tables split a row on unescaped ``|`` before the cells are
parsed (GFM spec, section 4.10, "Tables (extension)"), so the pipe's escape holds
there too. A cell drops leading and trailing spaces, and a line its leading ones:
those are written as ``&#32;``. Non-printable characters are made visible first
(``escape_text``), as in the text output.
"""

from __future__ import annotations

import string

from stagetimer._escape import escape_text

__all__ = ["markdown_text"]

_ESCAPED = {ord(c): "\\" + c for c in string.punctuation}


def markdown_text(text: str) -> str:
    """``text`` as Markdown inline content whose rendered text is ``escape_text(text)``."""
    shown = escape_text(text).translate(_ESCAPED)
    stripped = shown.strip(" ")
    if stripped == shown:
        return shown
    lead = len(shown) - len(shown.lstrip(" "))
    trail = len(shown) - len(shown.rstrip(" "))
    if not stripped:
        return "&#32;" * len(shown)
    return "&#32;" * lead + stripped + "&#32;" * trail
