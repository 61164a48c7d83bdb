"""A throwaway three-node Slurm cluster on this machine: three ``slurmd -N nX`` daemons.

Debian's Slurm is built with multiple-slurmd support, so nodes n1, n2 and n3 each get a
daemon of their own on one host (own port, spool, pid and log file; ``%n`` expands to
the node name), with ``SlurmdParameters=config_overrides`` so that each node may declare
what the host does not have. Jobs tell their node by ``SLURMD_NODENAME``; ``hostname``
is the same everywhere. No cgroups: tasks are tracked by ``proctrack/linuxproc``.
Built on ``helpers.slurm_cluster`` (munged, slurmctld, job submission and teardown).
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

from helpers.slurm_cluster import (
    SlurmCluster,
    _free_ports,
    running,
)

__all__ = ["NODES", "MultiNodeCluster", "multi_node_cluster"]

NODES = ("n1", "n2", "n3")


def _conf(root: Path, host: str) -> str:
    controller, *nodes = _free_ports(1 + len(NODES))
    lines = [
        "ClusterName=stagetimer-mn",
        f"SlurmctldHost={host}(127.0.0.1)",
        f"SlurmctldPort={controller}",
        f"SlurmdPort={nodes[0]}",
        "SlurmdParameters=config_overrides",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        f"AuthInfo=socket={root / 'munge' / 'munge.socket'}",
        "CredType=cred/munge",
        "MpiDefault=none",
        "MailProg=/bin/true",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/affinity",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core_Memory",
        "SchedulerType=sched/backfill",
        "AccountingStorageType=accounting_storage/none",
        "JobAcctGatherType=jobacct_gather/none",
        "JobCompType=jobcomp/none",
        "ReturnToService=2",
        f"StateSaveLocation={root / 'state'}",
        f"SlurmdSpoolDir={root / 'spool'}/%n",
        f"SlurmctldPidFile={root / 'run' / 'slurmctld.pid'}",
        f"SlurmdPidFile={root / 'run'}/slurmd.%n.pid",
        f"SlurmctldLogFile={root / 'log' / 'slurmctld.log'}",
        f"SlurmdLogFile={root / 'log'}/slurmd.%n.log",
        "SlurmctldDebug=info",
        "SlurmdDebug=info",
    ]
    for i, (name, port) in enumerate(zip(NODES, nodes, strict=True)):
        lines.append(f"NodeName={name} NodeAddr=127.0.0.1 Port={port} CPUs=2 "
                     f"RealMemory={1000 * (i + 1)} State=UNKNOWN")
    lines.append("PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


class MultiNodeCluster(SlurmCluster):
    """Three nodes on one host; otherwise the single-node cluster's API."""

    def __init__(self, root: Path) -> None:
        super().__init__(root, constrain_ram=False)

    def start(self) -> None:
        self._write_files()
        self.conf.write_text(_conf(self.root, self.host))
        for name in NODES:
            (self.root / "spool" / name).mkdir(parents=True, exist_ok=True)
        munge_dir = self.root / "munge"
        self._spawn("munged", [
            "setpriv", "--reuid=munge", "--regid=munge", "--init-groups", "munged", "-F",
            f"--socket={munge_dir / 'munge.socket'}", f"--key-file={munge_dir / 'munge.key'}",
            f"--log-file={munge_dir / 'munged.log'}", f"--pid-file={munge_dir / 'munged.pid'}",
            f"--seed-file={munge_dir / 'munged.seed'}",
        ])
        self._wait_for("munged to open its socket", lambda: (munge_dir / "munge.socket").exists())
        self._spawn("slurmctld", ["slurmctld", "-D", "-c", "-f", str(self.conf)])
        self._wait_for("slurmctld to answer", self._controller_up)
        for name in NODES:
            self._spawn(f"slurmd-{name}", ["slurmd", "-D", "-N", name, "-f", str(self.conf)])
        self._wait_for("the nodes to become idle", self._node_idle)

    def stop(self) -> None:
        if self.job_ids and self._alive("slurmctld"):
            self._client("scancel", *self.job_ids)
            with contextlib.suppress(TimeoutError):
                self._wait_for("cancelled jobs to end", lambda: not self.active(), timeout=10)
        for name in [*(f"slurmd-{n}" for n in NODES), "slurmctld", "munged"]:
            process = self.daemons.get(name)
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()

    def _node_idle(self) -> bool:
        states = self._client("sinfo", "-h", "-N", "-o", "%N %T").stdout.split("\n")
        idle = {line.split()[0] for line in states if line.strip().endswith(" idle")}
        return idle == set(NODES)


@contextlib.contextmanager
def multi_node_cluster() -> Iterator[MultiNodeCluster]:
    """Start the three-node cluster for the ``with`` block; stop it and clean up afterwards.

    Raises ``ClusterUnavailable`` where it cannot start here.
    """
    with running(MultiNodeCluster, "slurm-mn") as cluster:
        yield cluster
