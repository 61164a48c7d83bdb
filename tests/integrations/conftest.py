"""The frameworks and exporters are optional: their tests skip, saying what to install,
unless ``STAGETIMER_REQUIRE_FRAMEWORKS=1`` (CI's frameworks lane), where a missing one
fails the test instead."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

FITS = Path(__file__).parent / "fits"
ROOT = Path(__file__).resolve().parents[2]

#: What each extra installs, in the order ``require`` tries them: a test's skip names the
#: first extra that installs every module it needs (torch comes with lightning and with
#: transformers alike; the transformers tests need the transformers extra).
EXTRAS: dict[str, tuple[str, ...]] = {
    "lightning": ("torch", "lightning"),
    "transformers": ("torch", "transformers", "accelerate"),
    "keras-jax": ("keras", "jax"),
    "mlflow": ("mlflow",),
    "tensorboard": ("tensorboard",),
    "otlp": ("opentelemetry.proto",),
}


def extra_for(modules: tuple[str, ...]) -> str:
    """The extra that installs every one of ``modules``, else ``frameworks-test``."""
    for extra, installed in EXTRAS.items():
        if set(modules) <= set(installed):
            return extra
    return "frameworks-test"


def require(*modules: str) -> None:
    """Skip (or, in the frameworks lane, fail) unless every module imports."""
    for module in modules:
        try:  # found, not imported: the fits import them in their own processes
            found = importlib.util.find_spec(module)
        except ImportError:
            found = None
        if found is None:
            reason = f"needs {module} (pip install 'stagetimer[{extra_for(modules)}]')"
            if os.environ.get("STAGETIMER_REQUIRE_FRAMEWORKS") == "1":
                pytest.fail(f"STAGETIMER_REQUIRE_FRAMEWORKS=1 but this test {reason}")
            pytest.skip(reason)


def run_python(
    *args: str | Path, timeout: float = 240, env: dict[str, str] | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` with this checkout first on the path; stops by itself."""
    environ = dict(os.environ)
    environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), environ.get("PYTHONPATH", "")) if p
    )
    environ.setdefault("KERAS_BACKEND", "jax")
    environ.update(env or {})
    # A session of its own: a timeout ends the whole tree (torchrun's workers included).
    with subprocess.Popen(
        [sys.executable, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=environ, start_new_session=True,
    ) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            stdout, stderr = process.communicate()
            raise AssertionError(f"timed out after {timeout} s\n{stderr[-5000:]}") from None
    done = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    if check and done.returncode != 0:
        raise AssertionError(
            f"exit {done.returncode}\nstdout:\n{done.stdout[-3000:]}"
            f"\nstderr:\n{done.stderr[-5000:]}"
        )
    return done


def stages(directory: Path) -> dict[str, list[dict[str, Any]]]:
    """Stage name -> its runs, as ``timings.json`` holds them."""
    data = json.loads((directory / "timings.json").read_text(encoding="utf-8"))
    return {k: v["runs"] for k, v in data.items() if isinstance(v, dict) and "runs" in v}


def runs_of(found: dict[str, list[dict[str, Any]]], stage: str) -> list[tuple[Any, ...]]:
    """(run_idx, label, rank) of each run of ``stage``, sorted."""
    return sorted(
        ((r.get("run_idx"), r.get("label"), r.get("rank")) for r in found.get(stage, ())),
        key=repr,
    )


def free_port() -> int:
    """A TCP port free on the loopback now (torchrun's rendezvous)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class Session:
    """An interactive interpreter (``python -i``, as a notebook's kernel runs cells: an
    exception a line raises is shown and the session goes on) fed ``lines``, with this
    checkout first on the path. ``until(prefix)`` reads its standard output up to a line
    starting with ``prefix`` while it lives on; leaving the ``with`` block ends it."""

    def __init__(self, lines: list[str], env: dict[str, str], errors: Path) -> None:
        environ = dict(os.environ)
        environ["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(ROOT), environ.get("PYTHONPATH", "")) if p
        )
        environ.setdefault("KERAS_BACKEND", "jax")
        environ.update(env)
        self.errors = errors
        self._stderr = errors.open("w")
        self._read = b""
        self.process = subprocess.Popen(
            [sys.executable, "-i", "-q"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self._stderr, env=environ, start_new_session=True,
        )
        assert self.process.stdin is not None
        self.process.stdin.write("".join(line + "\n" for line in lines).encode())
        self.process.stdin.flush()

    def until(self, prefix: str, timeout: float = 240) -> str:
        """The first line of output starting with ``prefix`` (without it)."""
        import selectors

        stdout = self.process.stdout
        assert stdout is not None
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as selector:
            selector.register(stdout, selectors.EVENT_READ)
            while True:
                lines = self._read.split(b"\n")
                self._read = lines.pop()  # the part of a line not yet complete
                for line in lines:
                    text = line.decode(errors="replace")
                    if text.startswith(prefix):
                        return text[len(prefix):]
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    raise AssertionError(f"no {prefix!r} line in {timeout} s\n{self._tail()}")
                chunk = os.read(stdout.fileno(), 65536)  # unbuffered: select tells the truth
                if not chunk:
                    raise AssertionError(f"the session ended before {prefix!r}\n{self._tail()}")
                self._read += chunk

    def _tail(self) -> str:
        self._stderr.flush()
        return self.errors.read_text(errors="replace")[-5000:]

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(OSError):
            assert self.process.stdin is not None
            self.process.stdin.close()  # end of input: the interpreter exits
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        self._stderr.close()
