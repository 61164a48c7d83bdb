"""Text from someone else's file, written so that pdflatex typesets it as it is.

TeX's special characters are escaped; ``[`` and ``]`` braced (after ``\\\\`` a row
starting with ``[`` is read as an optional argument); ``< > | - " ' ` `` written so the
default OT1 encoding prints them and not other glyphs; the few signs the outputs use
(micro, plus-minus, times) as math; anything else past ASCII as its code. Non-printable
characters are made visible first (``escape_text``), as in the text output. The table
and the compute statement both write their LaTeX with it.
"""

from __future__ import annotations

from stagetimer._escape import escape_text

__all__ = ["latex_text"]

_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    # "[" and "]" braced: after "\\" a row starting with "[" is read as its optional
    # argument (the space below the line) and does not compile
    "[": "{[}", "]": "{]}",
    # in the default OT1 encoding these print other glyphs; "-" braced: no "--" dash
    "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}", "-": "-{}",
    '"': r"\texttt{\char34}", "`": r"\textasciigrave{}", "'": r"\textquotesingle{}",
    "\N{MICRO SIGN}": r"$\mu$", "\N{PLUS-MINUS SIGN}": r"$\pm$",
    "\N{MULTIPLICATION SIGN}": r"$\times$",
}


def _latex_char(char: str) -> str:
    special = _LATEX_SPECIAL.get(char)
    if special is not None:
        return special
    if " " <= char <= "~":
        return char
    # pdflatex has no glyph for most of Unicode ("Unicode character not set up for use
    # with LaTeX"): anything past ASCII is written as its code, in the text escapes' form
    return r"\textbackslash{}" + (f"x{ord(char):02x}" if ord(char) < 0x100 else f"u{ord(char):04x}")


def latex_text(text: str) -> str:
    """``text`` (a name from the files) as LaTeX text that typesets as its characters."""
    return "".join(map(_latex_char, escape_text(text)))
