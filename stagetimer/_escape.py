"""Text from someone else's file, made safe to print: no terminal control sequences.

A stage name, a label, a metadata value or a directory name may hold ``ESC [ 2 J``
or a bidirectional override; printed raw, they rewrite the reader's terminal or
the order of what it shows. The text outputs write every character that is not
printable as a visible escape (``\\x1b``, ``\\u202e``); JSON output writes them as
JSON escapes, so a parser still reads the original text.
"""

from __future__ import annotations

import re

__all__ = ["escape_json_text", "escape_text"]


def _visible(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_text(text: str) -> str:
    """``text`` with each non-printable character (control, format, separator other than
    the space) written as ``\\xNN`` / ``\\uNNNN``."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _visible(c) for c in text)


# What json.dumps(ensure_ascii=False) leaves raw but a terminal may act on: DEL, the C1
# controls (U+0080-U+009F, e.g. U+009B is CSI) and the Unicode format/separator
# characters that reorder or break lines.
_JSON_RAW = re.compile("[\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]")


def escape_json_text(text: str) -> str:
    """JSON text (from ``json.dumps(..., ensure_ascii=False)``) with the characters a
    terminal acts on written as ``\\uNNNN`` escapes; still the same JSON."""
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
