"""Standard output full (``/dev/full``), closed (``>&-``) or a pipe whose reader left:
every command says so in one line on standard error and exits with status 1, never a
traceback. Real processes: the descriptor the process starts with is the point."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.cli import LAUNCHERS, stagetimer_script

from stagetimer import Recorder, record_timing


def _recorded(directory: Path) -> Path:
    record_timing("ippo_train", 1.5, run_idx=0, recorder=Recorder(directory))
    return directory


def _migratable(root: Path) -> Path:
    _recorded(root / "pursuit" / "classic_3" / "algorithms" / "ippo")
    return root


#: argv of each command on real input in ``tmp_path``: each writes to standard output
COMMANDS: dict[str, Callable[[Path], list[str]]] = {
    "report": lambda tmp: ["report", str(_recorded(tmp / "art"))],
    "table": lambda tmp: ["table", str(_recorded(tmp / "art"))],
    "compare": lambda tmp: ["compare", str(_recorded(tmp / "a")), str(_recorded(tmp / "b"))],
    "hardware": lambda tmp: ["hardware"],
    "recover": lambda tmp: ["recover", str(_recorded(tmp / "art"))],
    "migrate": lambda tmp: ["migrate", "--root", str(_migratable(tmp / "root")),
                            "--from", "pursuit/{s}/algorithms/{a}", "--to", "pursuit/{s}/{a}"],
    "--help": lambda tmp: ["--help"],
    "report --help": lambda tmp: ["report", "--help"],
    "--version": lambda tmp: ["--version"],
}

FULL = "stagetimer: cannot write to standard output (No space left on device); output cut short"
LEFT = "stagetimer: cannot write to standard output (Broken pipe); output cut short"
CLOSED = "stagetimer: standard output is closed; nothing done"


def _into_dev_full(argv: list[str]) -> subprocess.CompletedProcess[str]:
    with open("/dev/full", "w") as full:
        return subprocess.run(argv, stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)


def _closed(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", 'exec "$@" >&-', "bash", *argv],
                          stderr=subprocess.PIPE, text=True, timeout=60)


def _reader_left(argv: list[str]) -> subprocess.CompletedProcess[str]:
    # The read end is closed before the command starts: its first write fails, however
    # much the pipe could hold.
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(argv, stdout=write, stderr=subprocess.PIPE, text=True,
                              timeout=60)
    finally:
        os.close(write)


OUTPUTS = {
    "/dev/full": (_into_dev_full, FULL),
    "closed": (_closed, CLOSED),
    "reader left": (_reader_left, LEFT),
}


@pytest.mark.parametrize("output", list(OUTPUTS))
@pytest.mark.parametrize("command", list(COMMANDS))
def test_unwritable_standard_output_is_one_line_and_status_1(
    tmp_path: Path, command: str, output: str
) -> None:
    start, line = OUTPUTS[output]

    result = start([stagetimer_script(), *COMMANDS[command](tmp_path)])

    assert (1, [line]) == (result.returncode, result.stderr.splitlines())


@pytest.mark.parametrize("output", list(OUTPUTS))
def test_python_m_stagetimer_says_so_in_one_line_too(tmp_path: Path, output: str) -> None:
    start, line = OUTPUTS[output]

    result = start([*LAUNCHERS["python -m"](), *COMMANDS["report"](tmp_path)])

    assert (1, [line]) == (result.returncode, result.stderr.splitlines())


def test_closed_standard_output_changes_nothing_on_disk(tmp_path: Path) -> None:
    root = _migratable(tmp_path / "root")
    before = sorted(p.relative_to(root) for p in root.rglob("*"))

    _closed([stagetimer_script(), *COMMANDS["migrate"](tmp_path)])

    assert before == sorted(p.relative_to(root) for p in root.rglob("*"))
