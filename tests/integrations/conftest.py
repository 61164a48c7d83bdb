"""The frameworks and exporters are optional: their tests skip, saying what to install,
unless ``STAGETIMER_REQUIRE_FRAMEWORKS=1`` (CI's frameworks lane), where a missing one
fails the test instead."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

FITS = Path(__file__).parent / "fits"
ROOT = Path(__file__).resolve().parents[2]

_EXTRA = {
    "lightning": "lightning", "transformers": "transformers", "accelerate": "transformers",
    "keras": "keras", "jax": "frameworks-test", "torch": "lightning", "mlflow": "mlflow",
    "tensorboard": "tensorboard", "opentelemetry.proto": "otlp",
}


def require(*modules: str) -> None:
    """Skip (or, in the frameworks lane, fail) unless every module imports."""
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            extra = _EXTRA.get(module, module)
            reason = f"needs {module} (pip install 'stagetimer[{extra}]'): {exc}"
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
    done = subprocess.run(
        [sys.executable, *map(str, args)], capture_output=True, text=True, timeout=timeout,
        env=environ,
    )
    if check and done.returncode != 0:
        raise AssertionError(
            f"exit {done.returncode}\nstdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-5000:]}"
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
