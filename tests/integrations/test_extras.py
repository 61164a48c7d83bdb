"""Without the frameworks: importing stagetimer imports none, and an exporter whose extra
is missing says, in one line, what to install."""

from __future__ import annotations

import pytest

from tests.integrations.conftest import run_python

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
