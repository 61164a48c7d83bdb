"""Several FUSE (bindfs) mounts of one backing directory: clients whose flock is their own.

Each bindfs mount keeps ``flock`` in its own FUSE superblock, so two mounts of one
directory behave like two NFS clients mounted ``local_lock=all``: a lock taken through
one mount does not exclude a writer through the other, while ``link``, ``rename`` and
``O_EXCL`` creation act on the one backing directory. Needs root (``allow_other`` is not
needed: every writer is root) and the ``bindfs`` program (Debian's ``bindfs``).

``writer_main`` is what each writer process runs (``python -m helpers.bindfs ...`` is not
used: tests start ``python -c`` with tests/ on the path).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = [
    "WRITER",
    "BindfsUnavailable",
    "bindfs_mounts",
    "finish",
    "promised_runs",
    "start_writer",
    "stored_runs",
    "unavailable",
]

TESTS = Path(__file__).resolve().parent.parent


class BindfsUnavailable(RuntimeError):
    """No bindfs mount can be made here; the message says why."""


def unavailable() -> str | None:
    """Why bindfs mounts cannot be made here, or None when they can."""
    if sys.platform != "linux" or os.geteuid() != 0:
        return "bindfs mounts of one directory need root on Linux"
    if shutil.which("bindfs") is None:
        return "bindfs is not installed (apt-get install bindfs)"
    if not os.path.exists("/dev/fuse"):
        return "there is no /dev/fuse"
    return None


def _unmount(mountpoint: Path) -> None:
    for _ in range(50):
        done = subprocess.run(["fusermount", "-u", str(mountpoint)], capture_output=True,
                              check=False, timeout=30)
        if done.returncode == 0 or not os.path.ismount(mountpoint):
            return
        time.sleep(0.1)  # busy: a killed writer's descriptors are still closing
    subprocess.run(["umount", "-l", str(mountpoint)], capture_output=True, check=False)


@contextlib.contextmanager
def bindfs_mounts(base: Path, count: int, *options: str) -> Iterator[tuple[Path, list[Path]]]:
    """``count`` bindfs mounts of ``base/backing``: yields (backing, [mountpoints])."""
    why = unavailable()
    if why:
        raise BindfsUnavailable(why)
    backing = base / "backing"
    backing.mkdir()
    mounted: list[Path] = []
    try:
        for i in range(count):
            mountpoint = base / f"client{i}"
            mountpoint.mkdir()
            done = subprocess.run(["bindfs", *options, str(backing), str(mountpoint)],
                                  capture_output=True, text=True, check=False, timeout=30)
            if done.returncode != 0:
                raise BindfsUnavailable(f"bindfs failed: {done.stderr.strip()}")
            mounted.append(mountpoint)
        yield backing, mounted
    finally:
        for mountpoint in mounted:
            _unmount(mountpoint)


# A writer: WRITER_ARGS = json [directory, writer id, records, policy, threads, stages].
# Each thread records `records` runs of the shared stage (run_idx unique over all writers)
# and, with stages == "distinct" as well, of its own stage; it prints one line per record
# saved ("saved <stage> <run_idx>") so a test that kills it knows what was promised.
# Writers are pinned to different CPUs, so their hardware descriptions differ and the
# hardware sidecar grows from every client too (a FUSE client's stale size of a file
# another client replaced once cut reads of it short).
WRITER = r"""
import json, os, sys, threading, warnings
from stagetimer import Recorder, record_timing
directory, wid, n, policy, threads, stages = json.loads(sys.argv[1])
cpus = sorted(os.sched_getaffinity(0))
if wid % 3 and len(cpus) > 1:
    os.sched_setaffinity(0, {cpus[wid % len(cpus)]})
warnings.simplefilter("ignore")
rec = Recorder(directory, policy=policy, lock_timeout=120, strict=True)
out = threading.Lock()
failed = []
def work(t):
    try:
        records(t)
    except BaseException:
        import traceback
        traceback.print_exc()
        failed.append(t)
def records(t):
    for i in range(n):
        idx = (wid * threads + t) * n + i
        shared_idx = idx if policy == "upsert" else idx + 1
        record_timing("shared", 0.001 * (i + 1), run_idx=shared_idx, recorder=rec)
        line = f"saved shared {shared_idx}"
        if stages == "distinct":
            record_timing(f"own_{wid}_{t}", 0.001, run_idx=i + 1, recorder=rec)
            line += f"\nsaved own_{wid}_{t} {i + 1}"
        with out:
            print(line, flush=True)
ts = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
for t in ts: t.start()
for t in ts: t.join()
rec.close()
sys.exit(1 if failed else 0)
"""


def start_writer(directory: Path, wid: int, records: int, policy: str, threads: int,
                 stages: str, **settings: str) -> subprocess.Popen[str]:
    """One writer process (see ``WRITER``) saving into ``directory``.

    ``settings``: environment variables for it (``STAGETIMER_CLAIM_STALE_SECONDS=...``).
    """
    args = json.dumps([str(directory), wid, records, policy, threads, stages])
    env = {k: v for k, v in os.environ.items() if not k.startswith("STAGETIMER_")}
    env.update(settings)
    return subprocess.Popen([sys.executable, "-c", WRITER, args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=tempfile.gettempdir())


def finish(writers: list[subprocess.Popen[str]], wait: float) -> list[str]:
    """Wait for every writer (killing all on timeout); their stdout lines; fail on an error."""
    lines: list[str] = []
    try:
        for writer in writers:
            out, err = writer.communicate(timeout=wait)
            assert writer.returncode == 0, err
            assert "could not be saved" not in err, err  # no save failed or waited too long
            lines += out.splitlines()
    finally:
        for writer in writers:
            if writer.poll() is None:
                writer.kill()
                writer.communicate()
    return lines


def stored_runs(directory: Path) -> dict[str, list[int]]:
    """Stage -> the run_idx of each run ``directory/timings.json`` holds (totals checked)."""
    data = json.loads((directory / "timings.json").read_text(encoding="utf-8"))
    out = {}
    for name, stage in data.items():
        runs = stage["runs"]
        assert stage["total_seconds"] == pytest.approx(sum(r["seconds"] for r in runs))
        out[name] = [r["run_idx"] for r in runs]
    return out


def promised_runs(lines: list[str]) -> dict[str, list[int]]:
    """Stage -> the run_idx of each record the writers said they saved (``saved s i``)."""
    promised: dict[str, list[int]] = {}
    for line in lines:
        _, stage, run_idx = line.split()
        promised.setdefault(stage, []).append(int(run_idx))
    return promised
