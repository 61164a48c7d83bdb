"""Probes of the software a run ran: its Python, code commit, packages and accelerator libraries.

``software_differences`` is imported on first use: it needs ``stagetimer.hardware``'s
``Difference``, and a process's first save should not pay for the hardware probes'
import twice over when it only captures its software.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stagetimer._lazy import lazy_attributes
from stagetimer.software._capture import capture_software
from stagetimer.software._model import CodeInfo, Software, software_description, software_id

if TYPE_CHECKING:
    from stagetimer.software._differences import (
        format_software_differences,
        software_differences,
    )

__all__ = [
    "CodeInfo",
    "Software",
    "capture_software",
    "format_software_differences",
    "software_description",
    "software_differences",
    "software_id",
]

_LAZY = {
    "format_software_differences": "stagetimer.software._differences",
    "software_differences": "stagetimer.software._differences",
}
__getattr__ = lazy_attributes(__name__, _LAZY, globals())
