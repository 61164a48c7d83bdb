"""Shared helpers of the reliability tests: real processes, a real tmpfs, sidecar checks.

The tests that use these run real writer processes (``sys.executable`` running a
small script), kill them with real signals, and mount a real tmpfs (root only).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import pytest

from stagetimer import load_hardware, load_timings

__all__ = [
    "STDERR_PREFIX",
    "TMP_NAMES",
    "Watcher",
    "assert_sidecars_sound",
    "call_with_guard",
    "fill_filesystem",
    "is_root",
    "remount",
    "spawn_python",
    "stderr_payloads",
    "tmpfs",
]

#: The fixed-name temporary files a save may leave behind when its process is killed.
TMP_NAMES = (".timings.json.tmp", ".timings_hardware.json.tmp")

#: What ``Recorder`` writes to standard error before the JSON of records it could not
#: save anywhere (the last resort of docs/guarantees.md).
STDERR_PREFIX = "stagetimer: could not save "


T = TypeVar("T")


def call_with_guard(fn: Callable[[], T], timeout: float) -> T:
    """``fn()`` in a helper thread: its result or its exception, or a failed test (not a
    hung suite) when it has not returned after ``timeout`` seconds."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append((True, fn()))
        except BaseException as exc:  # handed over to the caller's thread
            outcome.append((False, exc))

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        pytest.fail(f"still blocked after {timeout} s: a hang")
    ok, value = outcome[0]
    if not ok:
        raise value
    return value  # type: ignore[no-any-return]


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _run(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, text=True, timeout=30)


@contextlib.contextmanager
def tmpfs(mountpoint: Path, size: str = "256k") -> Iterator[Path]:
    """Mount a real tmpfs of ``size`` at ``mountpoint`` (created), unmounted on exit."""
    mountpoint.mkdir(parents=True, exist_ok=True)
    _run("mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(mountpoint))
    try:
        yield mountpoint
    finally:
        try:
            _run("umount", str(mountpoint))
        except subprocess.CalledProcessError:
            _run("umount", "-l", str(mountpoint))  # busy: detach now, freed when released


def remount(mountpoint: Path, *, read_only: bool) -> None:
    """Remount the filesystem at ``mountpoint`` read-only or read-write."""
    _run("mount", "-o", f"remount,{'ro' if read_only else 'rw'}", str(mountpoint))


def fill_filesystem(directory: Path) -> Path:
    """Write a filler file in ``directory`` until the filesystem answers ENOSPC; return it.

    Large writes first, then single bytes, so that not even one more byte fits.
    """
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for chunk in (1 << 16, 1 << 12, 1):
            block = b"\0" * chunk
            while True:
                try:
                    written = os.write(fd, block)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    break
                if written == 0:  # pragma: no cover - a filesystem that neither writes nor fails
                    break
    finally:
        os.close(fd)
    probe = directory / "probe"
    # Sanity: the filesystem is really full.
    with pytest.raises(OSError) as info, open(probe, "wb", buffering=0) as f:
        f.write(b"x")
    with contextlib.suppress(FileNotFoundError):
        probe.unlink()
    assert info.value.errno == errno.ENOSPC
    return filler


def spawn_python(
    script: str,
    *args: object,
    env: Mapping[str, str] | None = None,
    stdout: int | None = subprocess.PIPE,
    stderr: int | None = subprocess.PIPE,
) -> subprocess.Popen[str]:
    """Start ``sys.executable -c script args...`` (a real process) with text pipes."""
    child_env = dict(os.environ)
    child_env.pop("STAGETIMER_DISABLE", None)
    child_env.pop("STAGETIMER_DIR", None)
    child_env["PYTHONUNBUFFERED"] = "1"
    if env:
        child_env.update(env)
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script), *map(str, args)],
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=stderr,
        text=True,
        env=child_env,
    )


def assert_sidecars_sound(directory: Path) -> dict[str, Any]:
    """Both sidecars parse as JSON, load, and every ``hardware_id`` resolves.

    Temporary files a killed writer left are bounded (one per sidecar at most, by
    construction of their fixed names) and hold nothing readers look at. Returns the
    parsed ``timings.json``.
    """
    raw_timings = json.loads((directory / "timings.json").read_bytes())
    raw_hardware = json.loads((directory / "timings_hardware.json").read_bytes())
    assert isinstance(raw_timings, dict)
    assert raw_hardware["schema_version"] == 1
    timings = load_timings(directory)
    hardware = load_hardware(directory)
    unresolved = {
        (name, run.hardware_id)
        for name, stage in timings.stages.items()
        for run in stage.runs
        if run.hardware_id not in hardware.hardware
    }
    assert set() == unresolved
    leftovers = sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))
    assert set(leftovers) <= set(TMP_NAMES), leftovers
    return raw_timings


class Watcher:
    """A reader thread that checks ``directory`` over and over while writers run.

    Each look reads ``timings.json`` and then ``timings_hardware.json`` (entries are
    never removed, so in that order every ``hardware_id`` must resolve) and notes a
    file that does not parse or an id that does not resolve. ``with Watcher(d) as w:``
    then ``w.problems`` (empty when all went well) and ``w.looks``.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.problems: list[str] = []
        self.looks = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Watcher:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _read(self, name: str) -> Any:
        try:
            raw = (self.directory / name).read_bytes()
        except FileNotFoundError:
            return None
        try:
            return json.loads(raw)
        except ValueError as exc:
            self.problems.append(f"{name} does not parse ({exc}): {raw[:200]!r}")
            return None

    def _run(self) -> None:
        while not self._stop.wait(0.001):
            timings = self._read("timings.json")
            hardware = self._read("timings_hardware.json")
            self.looks += 1
            if not isinstance(timings, dict):
                continue
            known = hardware.get("hardware", {}) if isinstance(hardware, dict) else {}
            for name, stage in timings.items():
                for run in stage.get("runs", []) if isinstance(stage, dict) else []:
                    if run.get("hardware_id") not in known:
                        self.problems.append(f"{name}: {run.get('hardware_id')} does not resolve")


def stderr_payloads(text: str) -> list[dict[str, Any]]:
    """The JSON payloads ``Recorder`` wrote to standard error as a last resort.

    Each is one line: a ``stagetimer: could not save ...`` prefix, then the JSON
    object (``records`` and ``hardware``) up to the end of the line.
    """
    decoder = json.JSONDecoder()
    payloads = []
    for line in text.splitlines():
        line = line.rstrip()
        if not line.startswith(STDERR_PREFIX):
            continue
        for start in (i for i, c in enumerate(line) if c == "{"):
            try:
                payload, end = decoder.raw_decode(line, start)
            except json.JSONDecodeError:
                continue
            if end == len(line) and isinstance(payload, dict) and "records" in payload:
                payloads.append(payload)
                break
    return payloads
