"""A finished run waiting to be saved, and the live hardware it ran on."""

from __future__ import annotations

import time
from typing import Any

from stagetimer._store.rescue import build_run

__all__ = ["Pending", "reset_after_fork", "this_hardware", "utc_iso"]

_live_hardware: tuple[str, dict[str, Any]] | None = None


def this_hardware() -> tuple[str, dict[str, Any]]:
    """This process's (hardware_id, description), captured once (per forked child too)."""
    global _live_hardware
    if _live_hardware is None:
        from stagetimer.hardware import capture_hardware, description, hardware_id

        hw = capture_hardware()
        _live_hardware = (hardware_id(hw), description(hw))
    return _live_hardware


def utc_iso(timestamp: float) -> str:
    """``2026-11-29T22:28:02.123Z``"""
    whole = int(timestamp)
    millis = int((timestamp - whole) * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{millis:03d}Z"


class Pending:
    """One finished run waiting to be saved; its hardware is filled in by the first save."""

    __slots__ = ("attempted", "fields", "hardware", "hardware_id", "name", "run")

    def __init__(self, name: str, fields: tuple[Any, ...]) -> None:
        self.name = name
        self.fields = fields  # (seconds, run_idx, label, started_at, metadata)
        self.run: dict[str, Any] | None = None
        self.hardware_id: str | None = None
        self.hardware: dict[str, Any] | None = None
        self.attempted = False  # went through a write whose outcome may be unknown

    def resolve(self) -> dict[str, Any]:
        if self.run is None:
            hw_id, hw = this_hardware()
            seconds, run_idx, label, started_at, metadata = self.fields
            from stagetimer.hardware import job_identity

            self.hardware_id, self.hardware = hw_id, hw
            self.run = build_run(
                seconds, hw_id, run_idx, label, started_at, job_identity(), metadata
            )
        return self.run


def reset_after_fork() -> None:
    """In a forked child: capture again (the child may have set its own affinity)."""
    global _live_hardware
    _live_hardware = None
