"""The frameworks and exporters are optional: their tests skip, saying what to install,
unless ``STAGETIMER_REQUIRE_FRAMEWORKS=1`` (CI's frameworks lane), where a missing one
fails the test instead."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
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
