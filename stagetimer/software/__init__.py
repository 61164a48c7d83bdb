"""Probes of the software a run ran: its Python, code commit, packages and accelerator libraries."""

from __future__ import annotations

from stagetimer.software._capture import capture_software
from stagetimer.software._differences import format_software_differences, software_differences
from stagetimer.software._model import CodeInfo, Software, software_description, software_id

__all__ = [
    "CodeInfo",
    "Software",
    "capture_software",
    "format_software_differences",
    "software_description",
    "software_differences",
    "software_id",
]
