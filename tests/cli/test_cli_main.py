"""The command line's conventions: ``--help``, ``--version``, exit statuses, ``python -m``,
``stagetimer hardware``, and a reader that goes away (``| head``): one line, no traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.cli import LAUNCHERS, Ran, run_cli, run_process, stagetimer_script

import stagetimer
from stagetimer import Recorder, record_timing


@pytest.fixture(params=list(LAUNCHERS))
def launcher(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def run(launcher: str, *args: str) -> Ran:
    """A real process: its exit status and how it was started are the point here."""
    return run_process(*args, launcher=launcher, timeout=60)


def test_version_prints_the_package_version(launcher: str) -> None:
    result = run(launcher, "--version")

    assert 0 == result.returncode
    assert f"stagetimer {stagetimer.__version__}" == result.stdout.strip()


@pytest.mark.parametrize(
    "command",
    [[], ["report"], ["table"], ["compare"], ["hardware"], ["recover"], ["migrate"]],
)
def test_every_command_has_help(launcher: str, command: list[str]) -> None:
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
def test_usage_errors_exit_2_on_stderr(launcher: str, args: list[str]) -> None:
    result = run(launcher, *args)

    assert 2 == result.returncode
    assert "" == result.stdout
    assert "usage: stagetimer" in result.stderr
    assert "Traceback" not in result.stderr


def test_python_m_and_the_script_print_the_same_report(tmp_path: Path) -> None:
    record_timing("alpharank", 1.0, recorder=Recorder(tmp_path))

    outputs = {name: run(name, "report", str(tmp_path)).stdout for name in LAUNCHERS}

    assert outputs["script"] == outputs["python -m"]
    assert outputs["script"].startswith(str(tmp_path) + "\n")


def test_hardware_json_has_the_id_of_its_description() -> None:
    result = run_cli("hardware", "--json")

    assert 0 == result.returncode, result.stderr
    payload = json.loads(result.stdout)
    assert {"hardware_id", "hardware"} == set(payload)
    assert stagetimer.hardware_id(payload["hardware"]) == payload["hardware_id"]


def test_hardware_text_shows_the_id_and_the_sources() -> None:
    payload = json.loads(run_cli("hardware", "--json").stdout)

    result = run_cli("hardware")

    assert 0 == result.returncode, result.stderr
    assert f"hardware_id  {payload['hardware_id']}" == result.stdout.splitlines()[0]
    assert "(from " in result.stdout


def test_hardware_text_fits_a_100_column_terminal() -> None:
    result = run_cli("hardware")

    assert 0 == result.returncode, result.stderr
    assert [] == [line for line in result.stdout.splitlines() if len(line) > 100]


def test_hardware_json_holds_the_whole_description_with_its_sources() -> None:
    from stagetimer.hardware import capture_hardware, description

    payload = json.loads(run_cli("hardware", "--json").stdout)

    expected = description(capture_hardware())
    assert (set(expected), set(expected["sources"])) == (
        set(payload["hardware"]), set(payload["hardware"]["sources"])
    )


@pytest.mark.parametrize("reader", ["head -1", "true"])
def test_report_into_a_closed_pipe_says_so_in_one_line(tmp_path: Path, reader: str) -> None:
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
    # Where the pipe holds the whole report before the reader leaves (some kernels give a
    # pipe megabytes), nothing failed; otherwise one line and status 1, never a traceback.
    cut_short = ["stagetimer: cannot write to standard output (Broken pipe); output cut short"]
    assert (status, err.read_text().splitlines()) in [("0", []), ("1", cut_short)]


def test_a_report_without_plot_does_not_import_matplotlib(tmp_path: Path) -> None:
    record_timing("alpharank", 1.0, recorder=Recorder(tmp_path))
    code = (
        "import sys; from stagetimer._cli import main; status = main(['report', sys.argv[1]]);"
        "print('matplotlib' in sys.modules, status)"
    )

    result = subprocess.run([sys.executable, "-c", code, str(tmp_path)],
                            capture_output=True, text=True, timeout=60)

    assert "False 0" == result.stdout.splitlines()[-1]
