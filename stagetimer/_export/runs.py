"""The runs an export writes: one row per recorded run (``records_from``), grouped per
(artifact directory, run index, rank), with names made safe for other tools."""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Iterable
from typing import Any

import attrs

from stagetimer._analysis.rows import HARDWARE_COLUMNS, WHO_COLUMNS, records_from
from stagetimer._analysis.tree import Artifact, Problem, scan_tree
from stagetimer._errors import ExportError, MissingExtraError

__all__ = [
    "ExportError",
    "Exported",
    "Group",
    "Read",
    "digest",
    "label_step",
    "need",
    "read_groups",
    "readable",
]


def need(module: str, extra: str) -> Any:
    """``import module``, or :class:`MissingExtraError` naming the extra to install."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(
            f"needs the {extra} package: pip install 'stagetimer[{extra}]' ({exc})"
        ) from None


def readable(text: str) -> str:
    """``text`` as valid UTF-8: bytes a file name held that are not UTF-8 written as
    ``\\xNN`` (the documented renaming; stage names and labels are UTF-8 already)."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def digest(*parts: object, size: int = 16) -> str:
    """``size`` bytes of SHA-256 over ``parts``, in hex: a deterministic id."""
    text = "\0".join("" if p is None else str(p) for p in parts)
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[: 2 * size]


_TRAILING_INT = re.compile(r"(\d+)$")


def label_step(label: str | None) -> int:
    """A labelled run's step: the number its label ends with (``epoch3`` -> 3), else 0."""
    found = _TRAILING_INT.search(label) if label else None
    return int(found.group(1)) if found else 0


@attrs.frozen
class Group:
    """The runs of one artifact directory with one run index and rank."""

    directory: str  # absolute
    relpath: str  # as the walk found it, made readable
    run_idx: int | None
    rank: int | None
    rows: tuple[dict[str, Any], ...]

    @property
    def key(self) -> str:
        """Deterministic: the same directory, run index and rank give the same key."""
        return digest(self.directory, self.run_idx, self.rank)

    @property
    def name(self) -> str:
        where = self.relpath
        run = "" if self.run_idx is None else f" run {self.run_idx}"
        rank = "" if self.rank is None else f" rank {self.rank}"
        return f"{where}{run}{rank}"

    def described(self) -> dict[str, str]:
        """What ran it, as text: the first run's hardware and software columns."""
        first = self.rows[0]
        keys = ("hardware_id", *HARDWARE_COLUMNS, *WHO_COLUMNS, "job_id")
        return {
            k: readable(str(first[k])) for k in keys
            if first.get(k) is not None and k not in ("rank", "cpus")
        }


@attrs.frozen
class Exported:
    """What one export did."""

    created: int  # destination runs (MLflow runs, TensorBoard runs, traces) created
    points: int  # metric points, scalars or spans written
    runs: int  # recorded runs (or attempts) read


@attrs.frozen
class Read:
    groups: list[Group]
    problems: list[Problem]
    runs: int


def read_groups(paths: Iterable[str | os.PathLike[str]]) -> Read:
    """Every run under ``paths``, grouped; the problems met reading (``scan_tree``), and
    a problem for each run left out for times no writer could have recorded
    (``stagetimer._export.plausible``)."""
    from stagetimer._analysis.wall_span import posix_seconds
    from stagetimer._export.plausible import implausible
    from stagetimer._format import TIMINGS_FILE

    artifacts, problems = scan_tree(paths)
    relpaths = {a.path: _relpath(a) for a in artifacts}
    by_key: dict[tuple[str, int | None, int | None], list[dict[str, Any]]] = {}
    rows = records_from(artifacts)
    now = time.time()
    for row in rows:
        why = implausible(posix_seconds(row["started_at"]), row["seconds"], now)
        if why is not None:
            problems.append(Problem(
                os.path.join(row["artifact"], TIMINGS_FILE),
                f"{_run_name(row)} left out of the export: {why}",
            ))
            continue
        by_key.setdefault((row["artifact"], row["run_idx"], row["rank"]), []).append(row)
    groups = [
        Group(os.path.abspath(path), relpaths[path], run_idx, rank, tuple(found))
        for (path, run_idx, rank), found in by_key.items()
    ]
    return Read(groups, problems, len(rows))


def _relpath(artifact: Artifact) -> str:
    """A directory's name in the export: its path below the one given, or, for the one
    given itself, its own name."""
    if artifact.relpath != ".":
        return readable(artifact.relpath)
    return readable(os.path.basename(os.path.abspath(artifact.path)) or artifact.path)


def _run_name(row: dict[str, Any]) -> str:
    """``stage 'fit' run 1 (epoch0) rank 0``: a run of a sidecar, for a problem line."""
    parts = [f"stage {row['stage']!r}"]
    if row["run_idx"] is not None:
        parts.append(f"run {row['run_idx']}")
    if row["label"] is not None:
        parts.append(f"({row['label']})")
    if row["rank"] is not None:
        parts.append(f"rank {row['rank']}")
    return " ".join(parts)
