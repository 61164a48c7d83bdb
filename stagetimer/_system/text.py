"""Text from the operating system made writable as JSON: undecodable bytes spelled out.

Python decodes environment variables and the host name with the file system encoding
and the ``surrogateescape`` error handler (PEP 383): a byte that is not UTF-8 (a
Latin-1 directory name in ``SLURM_SUBMIT_DIR``, a host name set with ``hostname
$'\\xff'``) becomes a lone surrogate, U+DC80-U+DCFF, which has no UTF-8 form and makes
every write of a sidecar fail. Such a byte is written instead as the four characters
``\\xNN`` (backslash, ``x``, two lower-case hex digits), the spelling of Python's
``backslashreplace``: the text stays readable and no other value changes.
"""

from __future__ import annotations

__all__ = ["json_text"]


def json_text(value: str) -> str:
    """``value`` with each undecodable byte (a lone surrogate) written as ``\\xNN``.

    >>> json_text("/home/j\\udce9r\\udcf4me")
    '/home/j\\\\xe9r\\\\xf4me'
    """
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        # surrogateescape turns U+DC80-U+DCFF back into the bytes they stand for;
        # backslashreplace spells each byte that is not UTF-8 (and any other lone
        # surrogate) as \xNN.
        raw = value.encode("utf-8", "surrogateescape" if _only_escapes(value) else "surrogatepass")
        return raw.decode("utf-8", "backslashreplace")
    return value


def _only_escapes(value: str) -> bool:
    """Whether every lone surrogate of ``value`` is one of surrogateescape's bytes."""
    return all(not 0xD800 <= ord(c) <= 0xDFFF or 0xDC80 <= ord(c) <= 0xDCFF for c in value)
