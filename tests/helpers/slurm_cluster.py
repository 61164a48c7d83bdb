"""A throwaway single-node Slurm cluster on this machine, for ``tests/test_slurm.py``.

``slurm_cluster()`` starts ``munged``, ``slurmctld`` and ``slurmd`` from Debian's
packages, each in the foreground as a child of this process, with their
configuration, state, spool, logs and munge key in a fresh temporary directory
and their own ports, so nothing of the machine's own configuration is read or
changed. On exit it cancels the jobs it submitted, stops the daemons by PID
(slurmd first), removes the ``slurm_<host>`` cgroup folders slurmd created and
the temporary directory.

Written for Debian's Slurm 22.05 and munge 0.5.15 on a machine without systemd
as PID 1 and with the cgroup v1 memory controller mounted read-write: the daemons
run in the foreground (``munged -F``, ``slurmctld -D``, ``slurmd -D``), with
``MailProg=/bin/true`` (the default mail program is missing, which is an error)
and no accounting daemon (jobs are polled with ``squeue``).
This module knows nothing about pytest: it raises ``ClusterUnavailable`` (or
``InstallFailed``) and the test decides whether that skips or fails.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

__all__ = [
    "PACKAGES",
    "ClusterUnavailable",
    "DaemonDied",
    "InstallFailed",
    "SlurmCluster",
    "ensure_installed",
    "slurm_cluster",
]

PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge")
CGROUP_ROOT = Path("/sys/fs/cgroup")


class ClusterUnavailable(RuntimeError):
    """This machine cannot run the cluster; the message says why."""


class InstallFailed(ClusterUnavailable):
    """The Slurm/munge packages are missing and could not be installed."""


class DaemonDied(RuntimeError):
    """A daemon of the cluster exited while it was needed; the message holds the logs."""


# --- packages ----------------------------------------------------------------


def missing_packages() -> list[str]:
    """The packages of ``PACKAGES`` that dpkg does not list as installed."""
    missing = []
    for package in PACKAGES:
        status = subprocess.run(
            ["dpkg-query", "-W", "-f=${Status}", package],
            capture_output=True,
            text=True,
            check=False,
        )
        if status.returncode != 0 or not status.stdout.endswith(" installed"):
            missing.append(package)
    return missing


def ensure_installed() -> None:
    """Install the missing packages with apt-get; ``apt-get update`` first if the lists lack them.

    Raises ``InstallFailed`` with apt's output where that does not work (no dpkg,
    no package mirror).
    """
    if shutil.which("dpkg-query") is None or shutil.which("apt-get") is None:
        if all(shutil.which(tool) for tool in ("munged", "slurmctld", "slurmd", "sbatch")):
            return  # installed some other way
        raise InstallFailed("Slurm is not installed and there is no apt-get to install it")
    missing = missing_packages()
    if not missing:
        return
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "--no-install-recommends", *missing]
    attempt = _run_for_output(install, env)
    if attempt.returncode != 0:
        # Package lists absent or stale (a fresh image): refresh once and retry.
        update = _run_for_output(["apt-get", "update"], env)
        attempt = _run_for_output(install, env)
        if attempt.returncode != 0:
            raise InstallFailed(
                f"`{' '.join(install)}` failed (exit {attempt.returncode}):\n"
                f"{_tail(update.stdout)}\n{_tail(attempt.stdout)}"
            )


def _run_for_output(
    command: Sequence[str], env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=600,
        check=False,
    )


def _tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.splitlines()[-lines:])


# --- configuration -----------------------------------------------------------


def _free_ports(count: int) -> list[int]:
    """Ports free right now, distinct (all bound at once); the daemons bind them a moment later."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in sockets:
            sock.bind(("", 0))
        return [int(sock.getsockname()[1]) for sock in sockets]


def _real_memory_mib() -> int:
    """80% of MemTotal in MiB: what the node offers to jobs (slurmd refuses more than it has)."""
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 8 // 10 // 1024
    raise ClusterUnavailable("/proc/meminfo has no MemTotal line")


def _slurm_conf(root: Path, host: str, *, constrain_ram: bool) -> str:
    if constrain_ram:
        plugins = "ProctrackType=proctrack/cgroup\nTaskPlugin=task/cgroup,task/affinity\n"
    else:
        plugins = "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/affinity\n"
    cpus = os.cpu_count() or 1
    controller_port, node_port = _free_ports(2)
    return (
        "ClusterName=stagetimer-test\n"
        f"SlurmctldHost={host}(127.0.0.1)\n"
        f"SlurmctldPort={controller_port}\n"
        f"SlurmdPort={node_port}\n"
        "SlurmUser=root\n"
        "SlurmdUser=root\n"
        "AuthType=auth/munge\n"
        f"AuthInfo=socket={root / 'munge' / 'munge.socket'}\n"
        "CredType=cred/munge\n"
        "MpiDefault=none\n"
        # The default mail program is not installed and a missing one is an error.
        "MailProg=/bin/true\n"
        f"{plugins}"
        "SelectType=select/cons_tres\n"
        # Memory is a consumable resource, so --mem is scheduled and exported.
        "SelectTypeParameters=CR_Core_Memory\n"
        "SchedulerType=sched/backfill\n"
        # No slurmdbd: no sacct, poll squeue instead.
        "AccountingStorageType=accounting_storage/none\n"
        "JobAcctGatherType=jobacct_gather/none\n"
        "JobCompType=jobcomp/none\n"
        "ReturnToService=2\n"
        f"StateSaveLocation={root / 'state'}\n"
        f"SlurmdSpoolDir={root / 'spool'}\n"
        f"SlurmctldPidFile={root / 'run' / 'slurmctld.pid'}\n"
        f"SlurmdPidFile={root / 'run' / 'slurmd.pid'}\n"
        f"SlurmctldLogFile={root / 'log' / 'slurmctld.log'}\n"
        f"SlurmdLogFile={root / 'log' / 'slurmd.log'}\n"
        "SlurmctldDebug=info\n"
        "SlurmdDebug=info\n"
        f"NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={_real_memory_mib()}"
        " State=UNKNOWN\n"
        f"PartitionName=test Nodes={host} Default=YES MaxTime=INFINITE State=UP\n"
    )


# slurm.conf finds cgroup.conf in its own directory.
_CGROUP_CONF = (
    "CgroupPlugin=cgroup/v1\n"
    "CgroupMountpoint=/sys/fs/cgroup\n"
    "ConstrainCores=yes\n"
    "ConstrainRAMSpace=yes\n"
)


# --- the cluster ---------------------------------------------------------------


class SlurmCluster:
    """A running single-node cluster: submit jobs, wait for them, read its logs.

    ``env`` is the environment for Slurm's client commands (it names this
    cluster's ``slurm.conf`` in ``SLURM_CONF``).
    """

    def __init__(self, root: Path, *, constrain_ram: bool) -> None:
        self.root = root
        self.host = socket.gethostname().split(".")[0]
        self.constrain_ram = constrain_ram
        self.conf = root / "etc" / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        for name in list(self.env):
            # An enclosing job's variables would leak into sbatch's --export=ALL.
            if name.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_")) and name != "SLURM_CONF":
                del self.env[name]
        self.daemons: dict[str, subprocess.Popen[bytes]] = {}
        self.job_ids: list[str] = []

    # -- start / stop --

    def start(self) -> None:
        """Write the configuration and start munged, slurmctld and slurmd; wait for an idle node."""
        existing = self._slurm_cgroups()
        if existing:
            raise ClusterUnavailable(
                f"{', '.join(map(str, existing))} already exist(s): another Slurm runs on this "
                "machine or a crashed run left them; rmdir them (leaves first) and rerun"
            )
        self._write_files()
        munge_dir = self.root / "munge"
        self._spawn(
            "munged",
            [
                "setpriv", "--reuid=munge", "--regid=munge", "--init-groups",
                "munged", "-F",
                f"--socket={munge_dir / 'munge.socket'}",
                f"--key-file={munge_dir / 'munge.key'}",
                f"--log-file={munge_dir / 'munged.log'}",
                f"--pid-file={munge_dir / 'munged.pid'}",
                f"--seed-file={munge_dir / 'munged.seed'}",
            ],
        )  # fmt: skip
        self._wait_for("munged to open its socket", lambda: (munge_dir / "munge.socket").exists())
        self._spawn("slurmctld", ["slurmctld", "-D", "-c", "-f", str(self.conf)])
        self._wait_for("slurmctld to answer", self._controller_up)
        self._spawn("slurmd", ["slurmd", "-D", "-f", str(self.conf)])
        self._wait_for("the node to become idle", self._node_idle)

    def stop(self) -> None:
        """Cancel our jobs, stop the daemons by PID (slurmd first), remove slurmd's cgroups."""
        if self.job_ids and self._alive("slurmctld"):
            self._client("scancel", *self.job_ids)
            with contextlib.suppress(TimeoutError):
                self._wait_for("cancelled jobs to end", lambda: not self.active(), timeout=10)
        for name in ("slurmd", "slurmctld", "munged"):
            process = self.daemons.get(name)
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        self._remove_cgroups()

    # -- jobs --

    def submit(self, script: Path, *args: str, cwd: Path, env: dict[str, str]) -> str:
        """``sbatch --parsable ARGS SCRIPT`` run in ``cwd``; returns the (array) job id."""
        result = subprocess.run(
            ["sbatch", "--parsable", *args, str(script)],
            cwd=cwd,
            env={**self.env, **env},
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(f"sbatch failed: {result.stderr}\n{self.logs()}")
        job_id = result.stdout.strip().split(";")[0]
        self.job_ids.append(job_id)
        return job_id

    def active(self, job_id: str | None = None) -> list[str]:
        """``squeue -h`` lines of the job (or of all our jobs) not yet finished."""
        ids = [job_id] if job_id else self.job_ids
        if not ids:
            return []
        result = self._client("squeue", "-h", "-o", "%i %T", "-j", ",".join(ids))
        return result.stdout.split("\n") if result.stdout.strip() else []

    def wait(self, job_id: str, timeout: float = 120) -> None:
        """Poll squeue until the job (every task of an array) has left the queue."""
        self._wait_for(f"job {job_id} to finish", lambda: not self.active(job_id), timeout)

    def show_job(self, job_id: str) -> str:
        """``scontrol show job`` (every task of an array); slurmctld keeps it MinJobAge (300 s)."""
        return self._client("scontrol", "show", "job", job_id).stdout

    def command(self, *command: str) -> subprocess.CompletedProcess[str]:
        """A Slurm client command (``scancel``, ``scontrol requeue``...) on this cluster."""
        return self._client(*command)

    def job_fields(self, job_id: str) -> dict[str, str]:
        """``scontrol -o show job JOB`` as ``{key: value}`` (one job: an array task's id)."""
        line = self._client("scontrol", "-o", "show", "job", job_id).stdout
        return dict(re.findall(r"(?:^|\s)([A-Za-z]+)=(\S*)", line.split("\n")[0]))

    def wait_for(self, what: str, ready: Callable[[], bool], timeout: float = 60) -> None:
        """Poll ``ready`` until it holds; a daemon that dies or the timeout fails it."""
        self._wait_for(what, ready, timeout)

    def logs(self) -> str:
        """What the daemons printed (the end of it), for failure messages.

        In the foreground each daemon prints to stderr everything it logs,
        including errors from before its log file was opened.
        """
        parts = []
        for log in sorted((self.root / "log").glob("*.out")):
            with contextlib.suppress(OSError):
                parts.append(f"==== {log.name} ====\n{_tail(log.read_text(errors='replace'), 60)}")
        return "\n".join(parts)

    # -- internals --

    def _write_files(self) -> None:
        self.root.chmod(0o755)  # munged, running as munge, must reach its directory
        for sub in ("etc", "state", "spool", "log", "run"):
            (self.root / sub).mkdir(mode=0o755)
        self.conf.write_text(_slurm_conf(self.root, self.host, constrain_ram=self.constrain_ram))
        if self.constrain_ram:
            (self.conf.parent / "cgroup.conf").write_text(_CGROUP_CONF)
        munge = pwd.getpwnam("munge")
        munge_dir = self.root / "munge"
        # munged wants execute permission for all on its socket's directory; the key is 0400.
        munge_dir.mkdir(mode=0o755)
        os.chown(munge_dir, munge.pw_uid, munge.pw_gid)
        key = munge_dir / "munge.key"
        # munged insists on a key only its owner can read; 1024 bits as mungekey makes.
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
        with os.fdopen(fd, "wb") as key_file:
            key_file.write(os.urandom(128))
        os.chown(key, munge.pw_uid, munge.pw_gid)

    def _spawn(self, name: str, command: list[str]) -> None:
        with open(self.root / "log" / f"{name}.out", "wb") as out:
            self.daemons[name] = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env,
                start_new_session=True,  # a Ctrl-C in the terminal reaches pytest, not them
            )

    def _alive(self, name: str) -> bool:
        process = self.daemons.get(name)
        return process is not None and process.poll() is None

    def _client(self, *command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            command, env=self.env, capture_output=True, text=True, timeout=30, check=False
        )

    def _controller_up(self) -> bool:
        return self._client("scontrol", "ping").returncode == 0

    def _node_idle(self) -> bool:
        state = self._client("sinfo", "-h", "-n", self.host, "-o", "%T").stdout.strip()
        return state == "idle"

    def _wait_for(self, what: str, ready: Callable[[], bool], timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while True:
            for name, process in self.daemons.items():
                if process.poll() is not None:
                    raise DaemonDied(
                        f"{name} exited with status {process.returncode} while waiting for "
                        f"{what}\n{self.logs()}"
                    )
            if ready():
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out after {timeout} s waiting for {what}\n{self.logs()}")
            time.sleep(0.2)

    def _slurm_cgroups(self) -> list[Path]:
        if not CGROUP_ROOT.is_dir():
            return []
        return sorted(CGROUP_ROOT.glob(f"*/slurm_{self.host}"))

    def _remove_cgroups(self) -> None:
        """rmdir slurmd's cgroup folders, leaves first; they empty once the job steps exited."""
        for top in self._slurm_cgroups():
            deadline = time.monotonic() + 10
            while top.exists():
                for path, _dirs, _files in os.walk(top, topdown=False):
                    with contextlib.suppress(OSError):
                        os.rmdir(path)
                if not top.exists() or time.monotonic() > deadline:
                    break
                time.sleep(0.2)


@contextlib.contextmanager
def slurm_cluster(*, constrain_ram: bool) -> Iterator[SlurmCluster]:
    """Start a single-node cluster for the ``with`` block; stop it and clean up afterwards.

    ``constrain_ram=False``: ``proctrack/linuxproc`` + ``task/affinity``, the job's
    memory shows only as ``SLURM_MEM_PER_NODE``. ``constrain_ram=True``:
    ``proctrack/cgroup`` + ``task/cgroup,task/affinity`` with a cgroup v1
    ``ConstrainRAMSpace``, the job's memory cgroup holds the allocation.

    Raises ``ClusterUnavailable`` where the daemons cannot start here.
    """
    with running(lambda root: SlurmCluster(root, constrain_ram=constrain_ram), "slurm") as cluster:
        yield cluster


_C = TypeVar("_C", bound="SlurmCluster")


@contextlib.contextmanager
def running(make: Callable[[Path], _C], name: str) -> Iterator[_C]:
    """A cluster made by ``make(root)`` in a fresh temporary root, started for the
    ``with`` block, then stopped and removed; ``ClusterUnavailable`` where it cannot
    start here (not root, no munge, a daemon that dies)."""
    if os.geteuid() != 0:
        raise ClusterUnavailable("needs root (slurmd runs the jobs as root and manages cgroups)")
    try:
        pwd.getpwnam("munge")
    except KeyError:
        raise ClusterUnavailable("there is no `munge` user: is munge installed?") from None
    root = Path(tempfile.mkdtemp(prefix=f"stagetimer-{name}-"))
    cluster = make(root)
    try:
        try:
            cluster.start()
        except (DaemonDied, TimeoutError) as error:
            raise ClusterUnavailable(f"the cluster did not start: {error}") from error
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
