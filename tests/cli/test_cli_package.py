"""The command line's shape: its docstring names every command, each command is a small
function, and the collector is off while a command runs and given back afterwards."""

from __future__ import annotations

import argparse
import ast
import gc
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.cli import run_cli

import stagetimer._cli as cli
from stagetimer import Recorder, record_timing
from stagetimer._cli import report
from stagetimer._cli.parser import build_parser

CLI = Path(cli.__file__).parent


def _commands() -> list[str]:
    """The commands as the usage line lists them: ``{report,table,...}``."""
    [choices] = re.findall(r"\{([a-z,]+)\}", build_parser().format_usage())
    return sorted(choices.split(","))


def test_the_package_docstring_names_every_command_and_the_exit_statuses() -> None:
    doc = cli.__doc__ or ""

    assert [
        "compare", "compute", "doctor", "export", "hardware", "history", "lost", "migrate", "plan",
        "recover", "report", "table", "watch",
    ] == _commands()
    assert [] == [name for name in _commands() if f"``{name}" not in doc]
    assert all(f"{status} " in doc for status in ("0", "1", "2"))


def _functions() -> Iterator[tuple[str, int]]:
    for path in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                assert node.end_lineno is not None
                yield f"{path.name}:{node.name}", node.end_lineno - node.lineno + 1


def test_no_function_of_the_command_line_is_over_60_lines() -> None:
    assert [] == [(name, lines) for name, lines in _functions() if lines > 60]


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    for d in range(20):
        rec = Recorder(tmp_path / f"env_{d}" / "ippo")
        for i in range(20):
            record_timing("ippo_train", 1.0 + i, run_idx=i, recorder=rec)
    return tmp_path


def test_no_collection_runs_while_a_command_reads_and_the_collector_is_given_back(
    suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inside: list[bool] = []
    collections: list[int] = []
    command = report.run

    def observed(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
        inside.append(True)
        try:
            return command(args, parser)
        finally:
            inside.clear()

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and inside:
            collections.append(info["generation"])

    monkeypatch.setattr(report, "run", observed)
    gc.callbacks.append(count)
    try:
        result = run_cli("report", suite)
    finally:
        gc.callbacks.remove(count)

    assert (0, [], True) == (result.returncode, collections, gc.isenabled())


def test_a_collector_the_caller_turned_off_stays_off(suite: Path) -> None:
    gc.disable()
    try:
        run_cli("table", suite)
        assert not gc.isenabled()
    finally:
        gc.enable()
