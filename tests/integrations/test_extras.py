"""Without the frameworks: importing stagetimer imports none, and an exporter whose extra
is missing says, in one line, what to install."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.integrations.conftest import ROOT, run_python

_FRAMEWORKS = (
    "torch", "lightning", "transformers", "keras", "jax", "mlflow", "tensorboard",
    "opentelemetry",
)


def test_importing_stagetimer_and_its_integrations_imports_no_framework() -> None:
    done = run_python("-c", (
        "import sys, stagetimer, stagetimer.integrations, stagetimer._cli.parser\n"
        f"print(sorted(m for m in {_FRAMEWORKS!r} if m in sys.modules))\n"
    ))
    assert "[]\n" == done.stdout


@pytest.mark.parametrize(
    ("destination", "module", "extra"),
    [
        ("mlflow", "mlflow", "mlflow"),
        ("tensorboard", "tensorboard", "tensorboard"),
        ("otlp", "opentelemetry", "otlp"),
    ],
)
def test_a_missing_extra_is_one_line_naming_it_and_exit_1(
    tmp_path: object, destination: str, module: str, extra: str
) -> None:
    # The package made unimportable in the child, installed or not.
    done = run_python("-c", (
        "import sys\n"
        f"sys.modules[{module!r}] = None\n"
        "from stagetimer._cli import main\n"
        f"sys.exit(main(['export', {destination!r}, {str(tmp_path)!r}, '--to', "
        f"{str(tmp_path) + '/dest'!r}]))\n"
    ), check=False)
    assert 1 == done.returncode
    assert "" == done.stdout
    line = done.stderr.splitlines()
    assert 1 == len(line), done.stderr
    assert line[0].startswith(
        f"stagetimer export {destination}: needs the {extra} package: "
        f"pip install 'stagetimer[{extra}]'"
    )


#: Each integration test module, and the extra its tests need.
_OWN_EXTRA = {
    "test_lightning.py": {"lightning", "otlp"},  # a killed fit, exported as spans too
    "test_transformers.py": {"transformers"},
    "test_keras.py": {"keras-jax"},
    "test_export_mlflow.py": {"mlflow"},
    "test_export_tensorboard.py": {"tensorboard", "mlflow"},  # the steps beside MLflow's
    "test_export_otlp.py": {"otlp"},
    "test_export_concurrency.py": {"mlflow", "tensorboard", "otlp"},
    "test_export_odd_values.py": {"mlflow", "tensorboard", "otlp"},
}


def _require_calls(path: Path) -> list[tuple[str, ...]]:
    """The modules of each ``require(...)`` call in a test module."""
    import ast

    calls = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "require":
            calls.append(tuple(ast.literal_eval(arg) for arg in node.args))
    return calls


def test_every_integration_test_module_is_listed_with_its_extra() -> None:
    here = Path(__file__).parent
    found = {p.name for p in here.glob("test_*.py") if _require_calls(p)}
    assert set(_OWN_EXTRA) == found


@pytest.mark.parametrize("module", sorted(_OWN_EXTRA))
def test_a_skip_names_the_extra_that_installs_what_the_test_needs(
    module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each ``require`` call with every module it asks for missing: the skip names the
    module's own extra, which (pyproject.toml) lists what it needs."""
    import importlib.util

    from tests.integrations import conftest

    monkeypatch.delenv("STAGETIMER_REQUIRE_FRAMEWORKS", raising=False)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    named = set()
    for modules in _require_calls(Path(__file__).parent / module):
        with pytest.raises(pytest.skip.Exception) as skipped:
            conftest.require(*modules)
        found = re.fullmatch(
            rf"needs {re.escape(modules[0])} \(pip install 'stagetimer\[([a-z-]+)\]'\)",
            str(skipped.value),
        )
        assert found is not None, str(skipped.value)
        named.add(found.group(1))
    assert _OWN_EXTRA[module] == named
    extras = _extras()
    assert named <= set(extras)


def _extras() -> dict[str, list[str]]:
    """pyproject.toml's optional dependencies."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        pytest.skip("reading pyproject.toml needs tomllib (Python 3.11+)")
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    extras: dict[str, list[str]] = data["project"]["optional-dependencies"]
    return extras


def test_the_keras_extras_bring_a_backend() -> None:
    extras = _extras()
    assert any(d.startswith("jax") for d in extras["keras-jax"])
    assert any(d.startswith("torch") for d in extras["keras-torch"])
    assert any("keras-jax" in d for d in extras["frameworks-test"])
