"""The on-disk contract in one room: file names, keys, limits, and the classes that
define a run (``RunTiming``) and a started marker (``MarkerContent``).

Writers (``_store``, ``_record``) and readers (``_analysis``, ``_render``) import these
names from here and nowhere else, so a change to the format is a change to this file.
Each stored key of a run or a marker is one field of its class, described by a ``Key``
in the field's metadata (``key_of``); the tables ``RUN_FIELDS`` and ``MARKER_FIELDS``,
the shape checks and the writers' key order are derived from those classes.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import attrs

__all__ = [
    "ATTEMPTS_DIR",
    "ATTEMPT_OUTCOMES",
    "AUTO_RESUME_SUFFIX",
    "CONTINUED_STAGES",
    "HARDWARE_FILE",
    "JSON_TYPES",
    "LEGACY_KEYS",
    "MARKER_FIELDS",
    "MARKER_FORMAT",
    "MARKER_MAX_BYTES",
    "MARKER_SUFFIX",
    "MAX_BYTES",
    "MAX_DEPTH",
    "MAX_FILE_DEPTH",
    "MAX_RUN_IDX",
    "POLICIES",
    "RESCUE_FORMAT",
    "RESCUE_PREFIX",
    "RESCUE_SUFFIX",
    "RESERVED_KEYS",
    "RESOURCE_FIELDS",
    "RUN_FIELDS",
    "SCHEMA_VERSION",
    "TIMINGS_FILE",
    "TRAINING_SUFFIX",
    "Key",
    "MarkerContent",
    "RunTiming",
    "can_continue",
    "continued_stage",
    "is_rescue_name",
    "is_training_name",
    "key_of",
    "stored_fields",
    "takes_expected_runs",
]

_NULL = type(None)
#: A stored key's JSON type: the Python types ``json.loads`` gives for it (a boolean is
#: no number), and its name in messages.
JSON_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "number": ((float, int), "a number"),
    "integer": ((int,), "an integer"),
    "string": ((str,), "a string"),
    "object": ((dict,), "an object"),
    "any": ((dict, list, str, int, float, bool, _NULL), "any JSON value"),
}


class Key(NamedTuple):
    """What the format says of one stored key: the metadata of its field (``key_of``),
    whose name is the key in the JSON."""

    #: its JSON type, a key of ``JSON_TYPES``
    json: str
    #: what it holds, in one line
    meaning: str
    #: the unit of a number (``"s"``), else None
    unit: str | None = None
    #: whether it may be null (or absent)
    optional: bool = True
    #: whether a reader refuses the record where it has another type (False: readers
    #: take what they can of it)
    strict: bool = True

    @property
    def kinds(self) -> frozenset[type]:
        """The Python types a parsed value may have (``NoneType`` among them where optional)."""
        kinds = JSON_TYPES[self.json][0]
        return frozenset((*kinds, _NULL) if self.optional else kinds)

    @property
    def words(self) -> str:
        """Its JSON type in a message: ``an integer``."""
        return JSON_TYPES[self.json][1]


def _key(json: str, meaning: str, **more: Any) -> dict[str, Key]:
    """A field's metadata: its ``Key``."""
    return {"key": Key(json, meaning, **more)}


def key_of(field: attrs.Attribute[Any]) -> Key | None:
    """The ``Key`` of a field of ``RunTiming`` or ``MarkerContent``; None for a field that
    is no stored key (a run's ``metadata``)."""
    key: Key | None = field.metadata.get("key")
    return key


def stored_fields(cls: type) -> tuple[tuple[str, Key], ...]:
    """``(key, Key)`` for each stored key of ``cls``, in the order writers write them."""
    return tuple((f.name, k) for f in attrs.fields(cls) if (k := key_of(f)) is not None)


#: The two sidecars of an artifact directory.
TIMINGS_FILE = "timings.json"
HARDWARE_FILE = "timings_hardware.json"
#: A recorder's rescue file: ``timings.rescue-<UTC time>Z-<pid>-<random>.json``, the time
#: as ``20261129T222802123456`` (to the microsecond), the random part 8 hex digits.
RESCUE_PREFIX = "timings.rescue-"
RESCUE_SUFFIX = ".json"
#: Version of a rescue file's content. 1: ``policy``, ``hardware``, ``records`` of
#: ``{stage, run}``; 2 (0.3): adds ``format``, ``owner`` and each record's ``id``.
RESCUE_FORMAT = 2



def is_rescue_name(name: str) -> bool:
    """Whether a file name is a recorder's rescue file's (``RESCUE_PREFIX``...``RESCUE_SUFFIX``)."""
    return name.startswith(RESCUE_PREFIX) and name.endswith(RESCUE_SUFFIX)


#: Started markers: one file per attempt (one entry into a recorded stage) in this
#: directory beside the sidecars, named ``<attempt_id>.json`` (32 hex digits).
ATTEMPTS_DIR = "timings.attempts"
MARKER_SUFFIX = ".json"
#: Version of a marker's content. 1 (0.4): the keys of ``MARKER_FIELDS``.
MARKER_FORMAT = 1
#: A started marker's content, one field per key in the order they are written.
#: Writers write every key of an entry (null where none; ``parent`` is absent before
#: 0.5); a failed attempt's marker adds ``ended_at``, ``seconds``, ``outcome`` and
#: ``exception``.
@attrs.define(kw_only=True, init=False, repr=False, eq=False, slots=False)
class MarkerContent:
    """The keys of a started marker (``timings.attempts/<attempt_id>.json``).

    A schema only: markers are written and read as mappings (``_store/markers.py``,
    ``_store/marker_read.py``), so attrs makes no methods for it (it is made at import).
    """

    format: int = attrs.field(metadata=_key(
        "integer", "the marker's format, MARKER_FORMAT", optional=False, strict=False))
    attempt_id: str = attrs.field(metadata=_key(
        "string", "random, 32 lower-case hex digits; the file's name", optional=False))
    stage: str = attrs.field(metadata=_key(
        "string", "the stage entered", optional=False))
    run_idx: int | None = attrs.field(default=None, metadata=_key(
        "integer", "the run's index, as in a run"))
    label: str | None = attrs.field(default=None, metadata=_key(
        "string", "the run's label, as in a run"))
    rank: int | None = attrs.field(default=None, metadata=_key(
        "integer", "the process's rank, as in a run"))
    world_size: int | None = attrs.field(default=None, metadata=_key(
        "integer", "the launch's number of ranks, as in a run"))
    started_at: str = attrs.field(metadata=_key(
        "string", "when the stage was entered, as the run's started_at", optional=False))
    writer: dict[str, Any] | None = attrs.field(default=None, metadata=_key(
        "object", "the process: host, boot_id, pid, start_time, uid (a rescue file's owner)"))
    job: dict[str, Any] | None = attrs.field(default=None, metadata=_key(
        "object", "the batch job, as a run's job"))
    software_id: str | None = attrs.field(default=None, metadata=_key(
        "string", "this process's software, where already captured", strict=False))
    hardware_id: str | None = attrs.field(default=None, metadata=_key(
        "string", "this process's hardware, where already captured", strict=False))
    heartbeat: float | None = attrs.field(default=None, metadata=_key(
        "number", "the seconds between beats (null: no beats)", unit="s"))
    parent: Any = attrs.field(default=None, metadata=_key(
        "any", "the stage open around it, as a run's parent (0.5)"))
    ended_at: str | None = attrs.field(default=None, metadata=_key(
        "string", "when a failed attempt's block ended", strict=False))
    seconds: float | None = attrs.field(default=None, metadata=_key(
        "number", "how long a failed attempt ran", unit="s"))
    outcome: str | None = attrs.field(default=None, metadata=_key(
        "string", "how a failed attempt ended: one of ATTEMPT_OUTCOMES"))
    exception: str | None = attrs.field(default=None, metadata=_key(
        "string", "a failed attempt's exception type name"))


#: The keys of a marker, in the order they are written (``MarkerContent``).
MARKER_FIELDS: tuple[str, ...] = tuple(key for key, _ in stored_fields(MarkerContent))
ATTEMPT_OUTCOMES = ("raised", "interrupted")
#: A marker larger than this is not one of ours: readers name it and pass over it.
MARKER_MAX_BYTES = 64 * 1024


#: Version of ``timings_hardware.json``.
#: 1 (stagetimer 0.1): {"schema_version": 1, "hardware": {hardware_id: description}}.
#: Still 1 (0.3): an optional top-level "software": {software_id: description}; writers
#: of 0.1 and 0.2 keep a top-level key they do not know, so they share a directory.
SCHEMA_VERSION = 1

@attrs.frozen
class RunTiming:
    """One run of a stage: each field but ``metadata`` and ``legacy_metadata`` is a key
    of the run in ``timings.json``, in the order writers write them."""

    seconds: float = attrs.field(metadata=_key(
        "number", "wall-clock duration, from time.perf_counter()", unit="s", optional=False))
    #: None only in legacy files
    hardware_id: str | None = attrs.field(default=None, metadata=_key(
        "string", "the key of this run's hardware description in timings_hardware.json"))
    run_idx: int | None = attrs.field(default=None, metadata=_key(
        "integer", "the run's index (the seed); None for one-off stages"))
    label: str | None = attrs.field(default=None, metadata=_key(
        "string", "what stage(..., label=...) was given"))
    #: ISO-8601 UTC time the stage started, e.g. "2026-11-29T22:28:02.123Z"
    started_at: str | None = attrs.field(default=None, metadata=_key(
        "string", "when the run started, ISO-8601 UTC with milliseconds"))
    #: the batch job the run was measured in (``{"scheduler": "slurm", "job_id": "4711", ...}``,
    #: see ``stagetimer.hardware.job_identity``); None outside a job and in older files
    job: dict[str, Any] | None = attrs.field(default=None, metadata=_key(
        "object", "the batch job the run was measured in"))
    #: the run's software (``HardwareSidecar.software``); None in older files and where the
    #: recorder was told not to capture it (0.3)
    software_id: str | None = attrs.field(default=None, metadata=_key(
        "string", "the key of this run's software description in timings_hardware.json"))
    #: the process's rank and the launch's world size when it was one of several ranks
    #: (torchrun, a Slurm step of several tasks, MPI); None otherwise (0.3)
    rank: int | None = attrs.field(default=None, metadata=_key(
        "integer", "the process's rank in a distributed launch"))
    world_size: int | None = attrs.field(default=None, metadata=_key(
        "integer", "the number of ranks of the launch"))
    #: the CPUs the process was placed on, in the kernel's list format (``"0-3,8"``) (0.3)
    cpus: str | None = attrs.field(default=None, metadata=_key(
        "string", "the CPUs the process was placed on, in the kernel's list format"))
    #: what the stage used besides wall time: ``cpu_seconds``, ``children_cpu_seconds``,
    #: ``memory_peak_bytes``, ``gpu_energy_joules`` (``RESOURCE_FIELDS``), each where
    #: measured (a plain dict, as stored: keys a later version adds survive); None in
    #: older files (0.3)
    resources: dict[str, Any] | None = attrs.field(default=None, metadata=_key(
        "object", "what the stage used besides wall time, each number where measured"))
    #: the id of the attempt that wrote the run (its started marker in ``timings.attempts/``,
    #: 32 hex digits); None for ``record_timing`` and in older files (0.4)
    attempt_id: str | None = attrs.field(default=None, metadata=_key(
        "string", "the id of the attempt (its started marker) that wrote the run"))
    #: the stage open around it in the same thread or task: ``{"stage": name,
    #: "attempt_id": id}`` as stored (None where none was recorded; in a file of an older
    #: writer, whatever its metadata ``parent`` held) (0.5). Any JSON value: only an object
    #: whose "attempt_id" is a string names a parent (``_analysis/nesting.py``).
    parent: Any = attrs.field(default=None, metadata=_key(
        "any", "the stage open around it: {\"stage\", \"attempt_id\"}"))
    #: user metadata and keys this version does not know
    metadata: dict[str, Any] = attrs.Factory(dict)
    #: ``system_ram_gb`` / ``gpu_ram_gb`` recorded by a legacy writer
    legacy_metadata: dict[str, Any] = attrs.Factory(dict)


#: The keys a run may hold besides metadata, in the order they are written (``RunTiming``).
RUN_FIELDS: tuple[str, ...] = tuple(key for key, _ in stored_fields(RunTiming))
#: What a run's ``resources`` object holds, each where it was measured (docs/resources.md).
RESOURCE_FIELDS = ("cpu_seconds", "children_cpu_seconds", "memory_peak_bytes", "gpu_energy_joules")
#: Keys of a run (and of a stage) that user metadata may not reuse. ``expected_runs``
#: is a key of the stage object only, never of a run, so metadata may use it.
RESERVED_KEYS = frozenset({*RUN_FIELDS, "total_seconds", "runs"})
#: Numbers older writers embedded in timings.json (top level and/or runs). They describe
#: the writer's machine, never the reader's.
LEGACY_KEYS = ("system_ram_gb", "gpu_ram_gb")

#: The replacement policies of ``Recorder(policy=...)``.
POLICIES = ("sequential", "upsert")

#: A training stage's name ends so; a continuation's is its stage's name plus the other.
TRAINING_SUFFIX = "_train"
AUTO_RESUME_SUFFIX = "_auto_resume"
#: The stages besides training stages that a continuation (``<stage>_auto_resume``) repeats.
CONTINUED_STAGES = ("checkpoint_save", "nashconv")


def is_training_name(name: str) -> bool:
    """Whether ``name`` is a training stage's: it ends in ``_train``, and ``_train`` alone
    names no algorithm. The one rule for writers and readers alike."""
    return name.endswith(TRAINING_SUFFIX) and name != TRAINING_SUFFIX


def can_continue(name: str) -> bool:
    """Whether stage ``name`` may have a continuation, ``<name>_auto_resume``: a training
    stage (``is_training_name``), ``checkpoint_save`` or ``nashconv``. The one rule for
    writers and readers alike."""
    return is_training_name(name) or name in CONTINUED_STAGES


def takes_expected_runs(name: str, run_idx: object) -> bool:
    """Whether a recorder with ``expected_runs`` writes it into stage ``name`` for a run
    with ``run_idx``: an indexed run of a stage every seed runs. A continuation
    (``x_auto_resume``) runs only for the seeds that needed one, so it never counts
    toward a suite's progress."""
    return run_idx is not None and continued_stage(name) is None


def continued_stage(name: str) -> str | None:
    """The stage ``name`` continues (``x`` for ``x_auto_resume`` when ``x`` may have a
    continuation, see ``can_continue``), else None: ``evaluate_auto_resume`` is a stage
    of its own."""
    if not name.endswith(AUTO_RESUME_SUFFIX):
        return None
    base = name[: -len(AUTO_RESUME_SUFFIX)]
    return base if can_continue(base) else None

#: The largest run index: JSON readers in other languages read integers as int64.
MAX_RUN_IDX = 2**63 - 1
#: Nesting levels a metadata value may have (``{"a": [1]}`` has 2); deeper is refused.
MAX_DEPTH = 100
#: Nesting levels a sidecar may have: a metadata value sits inside the top-level object,
#: its stage, the ``runs`` list and its run.
MAX_FILE_DEPTH = MAX_DEPTH + 4
#: The largest sidecar read (1 GiB): a file of ten million runs; anything larger (or a
#: device that never ends) is refused before it fills the memory.
MAX_BYTES = 1 << 30


#: The seconds between heartbeats a writer may be asked for, and a reader believes: from a
#: millisecond (a thread cannot beat faster than it is scheduled) to about 30 years.
HEARTBEAT_SECONDS = (1e-3, 1e9)
