"""The on-disk contract in one room: file names, keys, limits and the run fields.

Writers (``_store``, ``_record``) and readers (``_analysis``, ``_render``) import these
names from here and nowhere else, so a change to the format is a change to this file.
"""

from __future__ import annotations

__all__ = [
    "ATTEMPTS_DIR",
    "ATTEMPT_OUTCOMES",
    "AUTO_RESUME_SUFFIX",
    "CONTINUED_STAGES",
    "HARDWARE_FILE",
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
    "can_continue",
    "continued_stage",
    "is_rescue_name",
    "is_training_name",
    "takes_expected_runs",
]

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
#: The keys of a marker, in the order they are written. ``writer`` is the process
#: identity rescue files record as ``owner``; ``heartbeat`` the seconds between beats
#: (null: no beats); ``parent`` the stage open around it (``{"stage", "attempt_id"}``,
#: null: none; 0.5, absent before). A failed attempt's marker adds ``ended_at``, ``seconds``,
#: ``outcome`` (one of ``ATTEMPT_OUTCOMES``) and ``exception`` (the type name).
MARKER_FIELDS: tuple[str, ...] = (
    "format", "attempt_id", "stage", "run_idx", "label", "rank", "world_size", "started_at",
    "writer", "job", "software_id", "hardware_id", "heartbeat", "parent",
    "ended_at", "seconds", "outcome", "exception",
)
ATTEMPT_OUTCOMES = ("raised", "interrupted")
#: A marker larger than this is not one of ours: readers name it and pass over it.
MARKER_MAX_BYTES = 64 * 1024


#: Version of ``timings_hardware.json``.
#: 1 (stagetimer 0.1): {"schema_version": 1, "hardware": {hardware_id: description}}.
#: Still 1 (0.3): an optional top-level "software": {software_id: description}; writers
#: of 0.1 and 0.2 keep a top-level key they do not know, so they share a directory.
SCHEMA_VERSION = 1

#: The keys a run may hold besides metadata, in the order they are written.
RUN_FIELDS: tuple[str, ...] = (
    "seconds", "hardware_id", "run_idx", "label", "started_at", "job",
    # who ran it (0.3): the software, the rank of a distributed launch, the CPUs
    "software_id", "rank", "world_size", "cpus",
    # what the stage used besides wall time (0.3)
    "resources",
    # the attempt that wrote it (0.4): its started marker's id
    "attempt_id",
    # the stage open around it in the same thread or task (0.5): {"stage", "attempt_id"}
    "parent",
)
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
