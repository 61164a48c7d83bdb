"""A suite as rows: ``to_records`` (one dict per run) and ``to_frame`` (a pandas DataFrame).

The rows are what a notebook starts from: which directory, which stage, which
seed, how long, on what. Every row has the same keys, in this order:
``RECORD_COLUMNS``, then ``meta.<key>`` for each metadata key of any run (first
seen first; None where a run lacks it). Values are as stored, also the ones the
report flags (a negative ``seconds`` stays negative here).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from stagetimer._analysis.tree import Artifact, load_tree
from stagetimer._errors import MissingExtraError
from stagetimer._format import RESOURCE_FIELDS, continued_stage
from stagetimer._store.records import RunTiming
from stagetimer.hardware import Hardware
from stagetimer.software import Software

if TYPE_CHECKING:
    import pandas  # type: ignore[import-untyped, unused-ignore]  # stubs are optional

__all__ = [
    "HARDWARE_COLUMNS",
    "INSTALL_HINT",
    "RECORD_COLUMNS",
    "WHO_COLUMNS",
    "job_id",
    "records_from",
    "to_frame",
    "to_records",
]

HARDWARE_COLUMNS = (
    "cpu_model",
    "logical_cpus",
    "physical_cores",
    "memory_limit_bytes",
    "gpu_count",
    "gpu_name",
    "gpu_peak_bandwidth_bytes_per_s",
)
#: who ran each run: its software (and the code's commit), its rank, its CPUs
WHO_COLUMNS = ("software_id", "commit", "dirty", "rank", "world_size", "cpus")
RECORD_COLUMNS = (
    "artifact",
    "stage",
    "base_stage",
    "auto_resume",
    "run_idx",
    "label",
    "seconds",
    "started_at",
    "hardware_id",
    *WHO_COLUMNS,
    "job_id",
    *HARDWARE_COLUMNS,
    *RESOURCE_FIELDS,
)
INSTALL_HINT = "pip install 'stagetimer[pandas]'"
_USED = RESOURCE_FIELDS  # what the stage used (``run.resources``), as stored
_NO_RESOURCES = (None,) * len(RESOURCE_FIELDS)
_RESERVED_META = frozenset({"job"})  # the scheduler job: its id is the job_id column


def job_id(run: RunTiming) -> str | None:
    """The scheduler job id the run was measured in (``job.job_id``), or None."""
    value = run.job.get("job_id") if run.job else None
    return value if isinstance(value, str) else None


def _hardware_columns(hw: Hardware | None) -> tuple[Any, ...]:
    if hw is None:
        return (None,) * len(HARDWARE_COLUMNS)
    names = list(dict.fromkeys(g.name for g in hw.gpus if g.name))
    return (
        hw.cpu.model_name,
        hw.cpu.logical_cpus,
        hw.cpu.physical_cores,
        hw.memory.limit_bytes,
        len(hw.gpus),
        " + ".join(names) if names else None,
        hw.gpus[0].peak_memory_bandwidth_bytes_per_s if hw.gpus else None,
    )


def _code_columns(sw: Software | None) -> tuple[Any, Any]:
    """The software's ``commit`` and ``dirty`` (None where unknown)."""
    code = sw.code if sw is not None else None
    return (None, None) if code is None else (code.commit, code.dirty)


def _add_rows(rows: list[dict[str, Any]], artifact: Artifact, meta_keys: dict[str, None],
              ) -> None:
    """Add the rows of one artifact directory, and the metadata keys they hold."""
    described = artifact.hardware.hardware
    software = artifact.hardware.software
    summaries: dict[str | None, tuple[Any, ...]] = {}
    for name, stage in artifact.timings.stages.items():
        continued = continued_stage(name)  # evaluate_auto_resume continues nothing
        base = name if continued is None else continued
        for run in stage.runs:
            hw = summaries.get(run.hardware_id)
            if hw is None:
                hw = summaries[run.hardware_id] = _hardware_columns(
                    described.get(run.hardware_id) if run.hardware_id else None)
            sw = software.get(run.software_id) if run.software_id else None
            row = dict(zip(RECORD_COLUMNS, (
                artifact.path, name, base, continued is not None, run.run_idx, run.label,
                run.seconds, run.started_at, run.hardware_id, run.software_id,
                *_code_columns(sw), run.rank, run.world_size, run.cpus, job_id(run), *hw,
                *_resource_columns(run),
            ), strict=True))
            _add_metadata(row, run, meta_keys)
            rows.append(row)


def _resource_columns(run: RunTiming) -> Iterable[Any]:
    """What the stage used, in ``RESOURCE_FIELDS``' order (None where not measured)."""
    return _NO_RESOURCES if run.resources is None else map(run.resources.get, _USED)


def _add_metadata(row: dict[str, Any], run: RunTiming, meta_keys: dict[str, None]) -> None:
    """The run's metadata as ``meta.<key>`` columns (its job aside: the job_id column)."""
    for key, value in run.metadata.items():
        if key not in _RESERVED_META:
            meta_keys.setdefault(key)
            row[f"meta.{key}"] = value


def records_from(artifacts: Iterable[Artifact]) -> list[dict[str, Any]]:
    """The rows of artifacts already read (``load_tree`` / ``scan_tree``)."""
    rows: list[dict[str, Any]] = []
    meta_keys: dict[str, None] = {}
    for artifact in artifacts:
        _add_rows(rows, artifact, meta_keys)
    columns = [f"meta.{k}" for k in meta_keys]
    for row in rows:
        for column in columns:
            row.setdefault(column, None)
    return rows


def to_records(*paths: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """One dict per run of every artifact directory at or under ``paths``.

    Keys: ``artifact`` (the directory), ``stage``, ``base_stage`` (the stage a
    continuation ``<stage>_auto_resume`` continues, else ``stage``), ``auto_resume``
    (whether it is such a continuation: only of a training stage, ``checkpoint_save`` or
    ``nashconv``), ``run_idx``, ``label``, ``seconds``,
    ``started_at``, ``hardware_id``, ``software_id`` with the software's ``commit`` and
    ``dirty`` (None where not recorded), ``rank`` and ``world_size`` (each rank's run of a
    distributed launch is a row), ``cpus``, ``job_id``, the hardware summary (``cpu_model``,
    ``logical_cpus``, ``physical_cores``, ``memory_limit_bytes``, ``gpu_count``,
    ``gpu_name`` — distinct names joined by `` + `` —, ``gpu_peak_bandwidth_bytes_per_s``
    of the first GPU; None where the description is missing), what the stage used
    (``cpu_seconds``, ``children_cpu_seconds``, ``memory_peak_bytes``,
    ``gpu_energy_joules``; None where not measured) and ``meta.<key>`` per metadata key.
    Errors as ``load_tree``.

    >>> rows = to_records("exports")
    >>> sum(r["seconds"] for r in rows if r["base_stage"] == "ippo_train")
    """
    return records_from(load_tree(*paths))


def to_frame(*paths: str | os.PathLike[str]) -> pandas.DataFrame:
    """``to_records(*paths)`` as a pandas DataFrame, one row per run, the same columns.

    Needs pandas (``pip install 'stagetimer[pandas]'``); without it, ``ImportError``.

    ``run_idx``, the integer hardware columns and every metadata key holding only whole
    numbers are pandas' nullable ``Int64``; ``started_at`` is ``datetime64[ns, UTC]``.

    The time a seed took is its runs of a stage and of the stage's continuation
    (``<stage>_auto_resume``) summed: sum per seed first, then average.

    >>> frame = to_frame("exports")
    >>> per_seed = frame.groupby(["artifact", "base_stage", "run_idx"])["seconds"].sum()
    >>> per_seed.groupby(["artifact", "base_stage"]).agg(["mean", "std", "count"])
    """
    try:
        import pandas
    except ImportError as exc:
        raise MissingExtraError(
            f"to_frame needs pandas ({exc}); install it with: {INSTALL_HINT}"
        ) from None
    rows = to_records(*paths)
    columns = list(rows[0]) if rows else list(RECORD_COLUMNS)
    return _typed(pandas, pandas.DataFrame.from_records(rows, columns=columns), rows, columns)


#: the columns of RECORD_COLUMNS that hold whole numbers (or None)
_INTEGER_COLUMNS = (
    "run_idx", "rank", "world_size", "logical_cpus", "physical_cores", "memory_limit_bytes",
    "gpu_count",
    "gpu_peak_bandwidth_bytes_per_s", "memory_peak_bytes",
)
_INT64 = (-(2**63), 2**63 - 1)


def _whole_numbers(rows: Sequence[dict[str, Any]], column: str) -> bool:
    """Whether every value of ``column`` is an int (not a bool) within int64, or None."""
    found = False
    for row in rows:
        value = row[column]
        if value is None:
            continue
        if type(value) is not int or not _INT64[0] <= value <= _INT64[1]:
            return False
        found = True
    return found


def _typed(
    pandas: Any, frame: Any, rows: Sequence[dict[str, Any]], columns: list[str]
) -> Any:
    """Integer columns as pandas' nullable ``Int64`` (a missing value does not turn them
    into floats: run_idx 3, not 3.0), ``started_at`` as ``datetime64[ns, UTC]`` (NaT
    where missing or unreadable)."""
    for column in columns:
        integer = column in _INTEGER_COLUMNS or column.startswith("meta.")
        if integer and _whole_numbers(rows, column):
            frame[column] = pandas.array([row[column] for row in rows], dtype="Int64")
    frame["started_at"] = pandas.to_datetime(
        frame["started_at"], utc=True, errors="coerce", format="ISO8601"
    ).astype("datetime64[ns, UTC]")
    return frame
