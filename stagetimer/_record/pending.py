"""A finished run waiting to be saved, and the live hardware it ran on."""

from __future__ import annotations

import itertools
import os
import time
from typing import Any

import attrs

from stagetimer._format import RUN_FIELDS

__all__ = ["Finished", "LiveHardware", "Pending", "build_run", "this_hardware", "utc_iso"]


@attrs.frozen
class LiveHardware:
    """This process's hardware: its ``hardware_id`` and the description stored under it."""

    id: str
    description: dict[str, Any]


_live_hardware: LiveHardware | None = None


def this_hardware() -> LiveHardware:
    """This process's hardware, captured once (per forked child too)."""
    global _live_hardware
    if _live_hardware is None:
        from stagetimer.hardware import capture_hardware, description, hardware_id

        hw = capture_hardware()
        _live_hardware = LiveHardware(hardware_id(hw), description(hw))
    return _live_hardware


def utc_iso(timestamp: float) -> str:
    """``2026-11-29T22:28:02.123Z``"""
    whole = int(timestamp)
    millis = int((timestamp - whole) * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{millis:03d}Z"


def build_run(
    finished: Finished, hardware_id: str | None, job: dict[str, str] | None
) -> dict[str, Any]:
    """One run as ``timings.json`` stores it, keys in the file's order (``RUN_FIELDS``)."""
    values = (
        finished.seconds, hardware_id, finished.run_idx, finished.label, finished.started_at, job,
        finished.resources,
    )
    run = {key: value for key, value in zip(RUN_FIELDS, values, strict=True) if value is not None}
    if finished.metadata:
        run.update(finished.metadata)
    return run


@attrs.frozen
class Finished:
    """What a finished stage recorded, checked: its name, duration and the run's fields."""

    name: str
    seconds: float
    run_idx: int | None
    label: str | None
    started_at: str | None  # UTC, ``utc_iso``
    metadata: dict[str, Any] | None
    #: what the stage used besides wall time (``resources.py``); None for ``record_timing``
    resources: dict[str, Any] | None = None


#: Serial numbers of this process's records (``next`` on a count is one atomic C call).
_serials = itertools.count(1)


@attrs.define(eq=False)
class Pending:
    """One finished run waiting to be saved; its hardware is filled in by the first save.

    ``attempted``: it went through a write whose outcome may be unknown (an interrupt),
    so a save first looks whether the file already holds it. ``serial``: the record's
    identity in this process (its rescue file ``id``, what the last resort printed),
    never reused, unlike ``id()`` of a freed object. Equality is identity (``eq=False``):
    two identical runs are two records.
    """

    finished: Finished
    run: dict[str, Any] | None = None
    hardware: LiveHardware | None = None
    attempted: bool = False
    serial: int = attrs.field(factory=_serials.__next__, init=False)

    @property
    def name(self) -> str:
        return self.finished.name

    def resolve(self) -> dict[str, Any]:
        """The run as stored, with this process's hardware and job (captured once)."""
        if self.run is None:
            hardware = this_hardware()
            from stagetimer.hardware import job_identity

            self.hardware = hardware
            self.run = build_run(self.finished, hardware.id, job_identity())
        return self.run

    def run_or_bare(self) -> dict[str, Any]:
        """The run as stored; without hardware or job when capturing them fails."""
        try:
            return self.resolve()
        except Exception:  # the hardware capture itself failed: keep the run without it
            return build_run(self.finished, None, None)


def _reset_after_fork() -> None:
    """In a forked child: capture again (the child may have set its own affinity)."""
    global _live_hardware
    _live_hardware = None  # the capture's own cache is reset by its own at-fork hook


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)
