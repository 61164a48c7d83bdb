"""A finished run waiting to be saved, and the live hardware and software it ran on."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from stagetimer._record.placement import placed_cpus, rank_of
from stagetimer._system import process_state

__all__ = [
    "Finished",
    "Live",
    "Pending",
    "Placement",
    "build_run",
    "declare_rank",
    "descriptions",
    "known_identity",
    "this_hardware",
    "this_software",
    "utc_iso",
]


@attrs.frozen
class Live:
    """This process's hardware or software: its id (``hw-…``, ``sw-…``) and the
    description stored under it."""

    id: str
    description: dict[str, Any]


@attrs.frozen
class Placement:
    """Who and where, for one run: its software, rank and CPUs (each None where unknown)."""

    software_id: str | None = None
    rank: tuple[int, int] | None = None
    cpus: str | None = None


#: What a save reads about this process once, at its first save: "hardware" and
#: "software" (``Live``), "job" and "rank". Later saves import nothing: while the
#: interpreter shuts down an import fails ("sys.meta_path is None"), and a record a
#: ``__del__`` makes then must still be saved whole. Emptied in a forked child, which
#: reads its own (it may set its own affinity, or import other modules before its first
#: save); the captures' own caches are reset by their own at-fork hooks.
_live: dict[str, Any] = {}


def _captured(what: str, capture: Callable[[], Live]) -> Live:
    """This process's ``what`` ("hardware", "software"), captured once (per forked child too)."""
    live: Live | None = _live.get(what)
    if live is None:
        live = _live[what] = capture()
    return live


def _capture_software() -> Live:
    from stagetimer.software import capture_software, software_description, software_id

    sw = capture_software()
    return Live(software_id(sw), software_description(sw))


def _capture_hardware() -> Live:
    from stagetimer.hardware import capture_hardware, description, hardware_id

    hw = capture_hardware()
    return Live(hardware_id(hw), description(hw))


def this_software() -> Live:
    """This process's software, captured once at its first save (per forked child too)."""
    return _captured("software", _capture_software)


def this_hardware() -> Live:
    """This process's hardware, captured once (per forked child too)."""
    return _captured("hardware", _capture_hardware)


def _job() -> dict[str, str] | None:
    """The job this process runs in (``job_identity``), read once; each run its own copy."""
    if "job" not in _live:
        from stagetimer.hardware import job_identity

        _live["job"] = job_identity()
    job: dict[str, str] | None = _live["job"]
    return None if job is None else dict(job)


def _placement(software: Live | None) -> Placement:
    """The run's software id, this process's rank (read once) and its CPUs (read now)."""
    if "rank" not in _live:
        _live["rank"] = rank_of()
    return Placement(None if software is None else software.id, _live["rank"], placed_cpus())


def declare_rank(rank: int, world_size: int) -> None:
    """This process is rank ``rank`` of ``world_size``, as its framework says (Lightning's
    own launcher sets no ``RANK``): the runs it saves from now on hold that rank. A world
    of one process is no distributed launch (no rank). A forked child reads it again."""
    _live["rank"] = (rank, world_size) if world_size > 1 else None


def known_identity() -> dict[str, Any]:
    """What a started marker says of this process besides the stage: ``rank``,
    ``world_size``, ``job`` (each read once, as saves read them) and the ``software_id``
    and ``hardware_id`` already captured (None where not yet: nothing is captured for
    a marker)."""
    if "rank" not in _live:
        _live["rank"] = rank_of()
    rank, world_size = _live["rank"] or (None, None)
    software: Live | None = _live.get("software")
    hardware: Live | None = _live.get("hardware")
    return {
        "rank": rank,
        "world_size": world_size,
        "job": _job(),
        "software_id": None if software is None else software.id,
        "hardware_id": None if hardware is None else hardware.id,
    }


def utc_iso(timestamp: float) -> str:
    """``2026-11-29T22:28:02.123Z``"""
    whole = int(timestamp)
    millis = int((timestamp - whole) * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{millis:03d}Z"


def build_run(
    finished: Finished,
    hardware_id: str | None,
    job: dict[str, str] | None,
    placement: Placement | None = None,
) -> dict[str, Any]:
    """One run as ``timings.json`` stores it: its values by key, in the file's order
    (``RUN_FIELDS``, the fields of ``RunTiming``: ``tests/test_schema.py`` holds this to
    them), the null ones left out."""
    where = placement or _NOWHERE
    rank, world_size = where.rank or (None, None)
    values = {
        "seconds": finished.seconds,
        "hardware_id": hardware_id,
        "run_idx": finished.run_idx,
        "label": finished.label,
        "started_at": finished.started_at,
        "job": job,
        "software_id": where.software_id,
        "rank": rank,
        "world_size": world_size,
        "cpus": where.cpus,
        "resources": finished.resources,
        "attempt_id": finished.attempt_id,
        "parent": finished.parent,
    }
    run = {key: value for key, value in values.items() if value is not None}
    if finished.metadata:
        run.update(finished.metadata)
    return run


_NOWHERE = Placement()


def descriptions(
    records: Iterable[Pending],
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """The hardware and the software descriptions resolved ``records`` refer to, by id."""
    hardware = {p.hardware.id: p.hardware.description for p in records if p.hardware is not None}
    software = {p.software.id: p.software.description for p in records if p.software is not None}
    return hardware, software


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
    #: the attempt's id (its started marker), None for ``record_timing``
    attempt_id: str | None = None
    #: the stage open around it (``{"stage", "attempt_id"}``), None where none was
    parent: dict[str, str] | None = None


#: Serial numbers of this process's records (``next`` on a count is one atomic C call).
_serials = itertools.count(1)


@attrs.define(eq=False)
class Pending:
    """One finished run waiting to be saved; its hardware is filled in by the first save.

    ``written``: it went through a write whose outcome may be unknown (an interrupt),
    so a save first looks whether the file already holds it. ``serial``: the record's
    identity in this process (its rescue file ``id``, what the last resort printed),
    never reused, unlike ``id()`` of a freed object. Equality is identity (``eq=False``):
    two identical runs are two records.
    """

    finished: Finished
    run: dict[str, Any] | None = None
    hardware: Live | None = None
    written: bool = False
    serial: int = attrs.field(factory=_serials.__next__, init=False)
    #: whether to capture software (the recorder's setting with the environment's)
    with_software: bool = True
    software: Live | None = None
    #: the attempt whose run it is (``attempt.Started``): its marker goes once it is saved
    attempt: Any = None
    #: the replacement rule it is saved by; None: its recorder's policy
    policy: str | None = None

    @property
    def name(self) -> str:
        return self.finished.name

    def resolve(self) -> dict[str, Any]:
        """The run as stored, with this process's software and hardware (captured once),
        job, rank and CPUs."""
        if self.run is None:
            # Software first: the hardware capture imports pynvml, which the program
            # itself may not have imported.
            software = this_software() if self.with_software else None
            hardware = this_hardware()
            self.hardware, self.software = hardware, software
            self.run = build_run(self.finished, hardware.id, _job(), _placement(software))
        return self.run

    def run_or_bare(self) -> dict[str, Any]:
        """The run as stored; without hardware or job when capturing them fails."""
        try:
            return self.resolve()
        except Exception:  # the hardware capture itself failed: keep the run without it
            return build_run(self.finished, None, None)


def _reset_after_fork() -> None:
    """In a forked child: read this process's hardware, software, job and rank again."""
    _live.clear()


process_state.register_at_fork("record.pending", after_in_child=_reset_after_fork)
