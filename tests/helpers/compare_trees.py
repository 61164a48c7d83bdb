"""compare's test trees: the artifact writer of ``helpers.trees`` (durations whose answer
is known, on a described machine), durations drawn at random, and first-edition files."""

from __future__ import annotations

import random
from pathlib import Path

from helpers.trees import GIB, MACHINE, write_artifact

__all__ = ["FIRST_EDITION", "GIB", "MACHINE", "lognormal", "write_artifact"]

FIRST_EDITION = Path(__file__).parent.parent / "data" / "first_edition_slurm"


def lognormal(seed: int, median: float, sigma: float, n: int) -> list[float]:
    """``n`` durations around ``median``, log-normal with spread ``sigma``, from ``seed``."""
    rng = random.Random(seed)
    return [median * rng.lognormvariate(0.0, sigma) for _ in range(n)]
