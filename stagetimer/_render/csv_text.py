"""CSV that a spreadsheet shows as text: the records of ``report --csv`` and the table's CSV.

A name from the files may start like a formula (``=HYPERLINK(...)``): every text cell
is made safe (``spreadsheet_safe``) before it is written.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from typing import Any

from stagetimer._analysis.rows import RECORD_COLUMNS
from stagetimer._escape import escape_text

__all__ = ["records_csv", "spreadsheet_safe"]


def records_csv(rows: Sequence[dict[str, Any]]) -> str:
    """The rows as CSV with a header; text from the files with control characters escaped."""
    columns = list(rows[0]) if rows else list(RECORD_COLUMNS)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([spreadsheet_safe(c) for c in columns])
    for row in rows:
        writer.writerow([_cell(row[c]) for c in columns])
    return out.getvalue()


#: what a spreadsheet reads as the start of a formula (OWASP, "CSV Injection"):
#: ``=HYPERLINK(...)`` in a name would run when the file is opened
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(text: str) -> str:
    """``text`` with control characters escaped, and a leading ``'`` when it starts like a
    formula, so that a spreadsheet shows it as text and never runs it."""
    text = escape_text(text)
    return "'" + text if text.startswith(_FORMULA_START) else text


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, str):
        return spreadsheet_safe(value)
    if isinstance(value, (dict, list)):
        return spreadsheet_safe(json.dumps(value, ensure_ascii=False, sort_keys=True))
    return value
