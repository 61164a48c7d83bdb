"""What every Slurm test starts with: root on Linux, Slurm installed, a cluster up — or
the test skipped with the reason, except on CI (``CI=true``), where the same reasons
fail it: CI must never pass by skipping its clusters."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest

from helpers.slurm_cluster import (
    ClusterUnavailable,
    InstallFailed,
    SlurmCluster,
    ensure_installed,
    slurm_cluster,
)

__all__ = ["CGROUP_V1_MEMORY", "cluster_or_skip", "require_slurm", "skip_or_fail"]

#: where Slurm's ConstrainRAMSpace puts a job's memory limit (cgroup v1)
CGROUP_V1_MEMORY = Path("/sys/fs/cgroup/memory")


def skip_or_fail(why: str) -> NoReturn:
    if os.environ.get("CI", "").lower() in {"true", "1", "yes"}:
        pytest.fail(f"CI must be able to run this Slurm test: {why}")
    pytest.skip(why)


def require_slurm() -> None:
    """Root on Linux (else skipped, on CI too: CI runs as root) and Slurm installed."""
    if sys.platform != "linux" or os.geteuid() != 0:
        pytest.skip("a Slurm cluster needs root on Linux")
    try:
        ensure_installed()
    except InstallFailed as error:
        skip_or_fail(f"Slurm is not installed and could not be: {error}")


def cluster_or_skip(constrain_ram: bool) -> Iterator[SlurmCluster]:
    """A fixture's body: the single-node cluster, up for the fixture's scope."""
    with contextlib.ExitStack() as stack:
        try:
            cluster = stack.enter_context(slurm_cluster(constrain_ram=constrain_ram))
        except ClusterUnavailable as error:
            skip_or_fail(f"no Slurm cluster on this machine: {error}")
        yield cluster
