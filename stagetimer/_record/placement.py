"""Where this process runs: its rank in a distributed launch, and the CPUs it is placed on.

Neither is hardware (two ranks, or two tasks pinned to CPU 0 and CPU 1, use the same
machine), so each run keeps them itself: ``rank``/``world_size`` and ``cpus``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from itertools import groupby

__all__ = ["RANK_VARIABLES", "format_cpu_list", "placed_cpus", "rank_of"]

#: (rank, world size) variables, first match wins:
#: torchrun and ``torch.distributed``'s env:// launch (RANK/WORLD_SIZE, torchrun(1));
#: a Slurm step (srun(1) OUTPUT ENVIRONMENT VARIABLES: SLURM_PROCID, SLURM_NTASKS);
#: Open MPI's mpirun (OMPI_COMM_WORLD_RANK/SIZE); MPICH and Intel MPI's Hydra (PMI_*).
RANK_VARIABLES: tuple[tuple[str, str], ...] = (
    ("RANK", "WORLD_SIZE"),
    ("SLURM_PROCID", "SLURM_NTASKS"),
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
    ("PMI_RANK", "PMI_SIZE"),
)


def _number(text: str | None) -> int | None:
    """A launcher's count: ASCII digits, spaces around them allowed; None for anything else.

    ``str.isdigit`` alone also passes digits ``int`` refuses (``"²"``) or reads
    (``"٣"``), and ``int`` refuses more than 4300 digits: each made every save fail."""
    text = (text or "").strip()  # unset: empty, which is no number
    # isdigit: no sign, no space inside; isascii: 0-9 only; 19 digits hold any int64
    if not (text.isascii() and text.isdigit()) or len(text) > 19:
        return None
    return int(text)


def rank_of(environ: Mapping[str, str] | None = None) -> tuple[int, int] | None:
    """``(rank, world_size)`` when this process is one of several ranks of one launch.

    None when no launcher's pair is set, when the world size is 1 (a single process, a
    Slurm step of one task: a job array's tasks are separate jobs, not ranks) or when
    the values are not a rank below a world size. A pair that does not parse is passed
    over for the next launcher's.

    >>> rank_of({"RANK": "3", "WORLD_SIZE": "4"})
    (3, 4)
    >>> rank_of({"SLURM_PROCID": "0", "SLURM_NTASKS": "1"}) is None
    True
    """
    found = os.environ if environ is None else environ
    for rank_name, size_name in RANK_VARIABLES:
        pair = _rank_below_size(found.get(rank_name), found.get(size_name))
        if pair is not None:
            return pair if pair[1] > 1 else None
    return None


def _rank_below_size(rank_text: str | None, size_text: str | None) -> tuple[int, int] | None:
    """One launcher's ``(rank, world_size)``; None unless both parse and the rank is below."""
    rank, size = _number(rank_text), _number(size_text)
    if rank is None or size is None or rank >= size:
        return None
    return rank, size


def placed_cpus() -> str | None:
    """The CPUs this process may run on now, in the kernel's list format (``"0-3,8"``).

    Read at each save (a process may re-pin itself): one ``sched_getaffinity`` call
    and a short join. None where the system has no affinity interface (macOS).
    """
    getaffinity = getattr(os, "sched_getaffinity", None)
    if getaffinity is None:
        return None
    try:
        return format_cpu_list(getaffinity(0))
    except OSError:
        return None


def format_cpu_list(cpus: Iterable[int]) -> str:
    """CPU numbers in the kernel's list format: ``{0, 1, 2, 3, 8}`` → ``"0-3,8"``.

    The inverse of ``stagetimer._system.files.parse_cpu_list``; the format of
    ``Cpus_allowed_list`` (``Documentation/admin-guide/cputopology.rst``). Empty for no
    CPU. Here, not beside the parser: a recorder's save path does not import the
    hardware probes before its first save needs them.
    """
    # Consecutive CPUs share ``cpu - position`` in the sorted list: one group per range.
    spans = groupby(enumerate(sorted(cpus)), lambda position_cpu: position_cpu[1] - position_cpu[0])
    return ",".join(_cpu_range([cpu for _, cpu in span]) for _, span in spans)


def _cpu_range(cpus: list[int]) -> str:
    """One range of consecutive CPUs, as the kernel writes it: ``"4-7"``, or ``"4"``."""
    return f"{cpus[0]}-{cpus[-1]}" if len(cpus) > 1 else str(cpus[0])
