"""The command line's conventions: ``--help``, ``--version``, exit statuses, ``python -m``,
``stagetimer hardware``, and a reader that goes away (``| head``) without a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import stagetimer_script

import stagetimer
from stagetimer import Recorder, record_timing

LAUNCHERS = {
    "script": lambda: [stagetimer_script()],
    "python -m": lambda: [sys.executable, "-m", "stagetimer"],
}


@pytest.fixture(params=list(LAUNCHERS))
def launcher(request: pytest.FixtureRequest) -> list[str]:
    return LAUNCHERS[request.param]()


def run(launcher: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*launcher, *args], capture_output=True, text=True, timeout=60)


def test_version_prints_the_package_version(launcher: list[str]) -> None:
    result = run(launcher, "--version")

    assert 0 == result.returncode
    assert f"stagetimer {stagetimer.__version__}" == result.stdout.strip()


@pytest.mark.parametrize("command", [[], ["report"], ["hardware"], ["migrate"]])
def test_every_command_has_help(launcher: list[str], command: list[str]) -> None:
    result = run(launcher, *command, "--help")

    assert 0 == result.returncode
    assert result.stdout.startswith("usage: stagetimer")


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["frobnicate"],
        ["report"],
        ["report", ".", "--bogus"],
        ["migrate", "--root", "."],
    ],
)
def test_usage_errors_exit_2_on_stderr(launcher: list[str], args: list[str]) -> None:
    result = run(launcher, *args)

    assert 2 == result.returncode
    assert "" == result.stdout
    assert "usage: stagetimer" in result.stderr
    assert "Traceback" not in result.stderr


def test_python_m_and_the_script_print_the_same_report(tmp_path: Path) -> None:
    record_timing("alpharank", 1.0, recorder=Recorder(tmp_path))

    outputs = {name: run(make(), "report", str(tmp_path)).stdout for name, make in
               LAUNCHERS.items()}

    assert outputs["script"] == outputs["python -m"]
    assert outputs["script"].startswith(str(tmp_path) + "\n")


def test_hardware_json_has_the_id_of_its_description(launcher: list[str]) -> None:
    result = run(launcher, "hardware", "--json")

    assert 0 == result.returncode, result.stderr
    payload = json.loads(result.stdout)
    assert {"hardware_id", "hardware"} == set(payload)
    assert stagetimer.hardware_id(payload["hardware"]) == payload["hardware_id"]


def test_hardware_text_shows_the_id_and_the_sources(launcher: list[str]) -> None:
    payload = json.loads(run(launcher, "hardware", "--json").stdout)

    result = run(launcher, "hardware")

    assert 0 == result.returncode, result.stderr
    assert f"hardware_id  {payload['hardware_id']}" == result.stdout.splitlines()[0]
    assert "(from " in result.stdout


def test_hardware_text_fits_a_100_column_terminal(launcher: list[str]) -> None:
    result = run(launcher, "hardware")

    assert 0 == result.returncode, result.stderr
    assert [] == [line for line in result.stdout.splitlines() if len(line) > 100]


def test_hardware_json_holds_the_whole_description_with_its_sources(
    launcher: list[str],
) -> None:
    from stagetimer.hardware import capture_hardware, description

    payload = json.loads(run(launcher, "hardware", "--json").stdout)

    expected = description(capture_hardware())
    assert (set(expected), set(expected["sources"])) == (
        set(payload["hardware"]), set(payload["hardware"]["sources"])
    )


@pytest.mark.parametrize("reader", ["head -1", "true"])
def test_report_into_a_closed_pipe_prints_no_traceback(tmp_path: Path, reader: str) -> None:
    # Enough output to overflow the pipe, so the writer is still writing when ``head``
    # exits; ``true`` exits before the report even starts writing.
    stages = {
        f"stage_{i:05d}": {"total_seconds": 1.0, "runs": [{"seconds": 1.0}]}
        for i in range(5000)
    }
    (tmp_path / "timings.json").write_text(json.dumps(stages))
    err = tmp_path.parent / f"{tmp_path.name}.stderr"

    result = subprocess.run(
        ["bash", "-c", f'"$0" report "$1" 2>"$2" | {reader}; echo "${{PIPESTATUS[0]}}"',
         stagetimer_script(), str(tmp_path), str(err)],
        capture_output=True, text=True, timeout=60,
    )

    *shown, status = result.stdout.splitlines()
    assert ([str(tmp_path)] if reader.startswith("head") else []) == shown
    assert status in ("0", "1")
    assert "" == err.read_text()


def test_a_report_without_plot_does_not_import_matplotlib(tmp_path: Path) -> None:
    record_timing("alpharank", 1.0, recorder=Recorder(tmp_path))
    code = (
        "import sys; from stagetimer._cli import main; status = main(['report', sys.argv[1]]);"
        "print('matplotlib' in sys.modules, status)"
    )

    result = subprocess.run([sys.executable, "-c", code, str(tmp_path)],
                            capture_output=True, text=True, timeout=60)

    assert "False 0" == result.stdout.splitlines()[-1]
