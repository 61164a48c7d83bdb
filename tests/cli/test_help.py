"""Every command's ``--help`` renders, and shows ``%`` where it means a percent: a help
string argparse does not %-format (a description) must not double it."""

from __future__ import annotations

import re

import pytest

from tests.helpers.cli import run_cli


def _commands() -> list[str]:
    """The commands ``stagetimer --help`` lists in its usage (``{report,table,...}``)."""
    usage = run_cli("--help").stdout
    found = re.search(r"\{([a-z,-]+)\}", usage)
    assert found is not None, usage
    return found.group(1).split(",")


def test_the_top_level_help_renders_without_a_doubled_percent() -> None:
    ran = run_cli("--help")
    assert (0, "") == (ran.returncode, ran.stderr)
    assert ran.stdout.startswith("usage: stagetimer ")
    assert "%%" not in ran.stdout
    assert len(_commands()) >= 12


@pytest.mark.parametrize("command", _commands())
def test_each_command_help_renders_without_a_doubled_percent(command: str) -> None:
    ran = run_cli(command, "--help")
    assert (0, "") == (ran.returncode, ran.stderr)
    assert ran.stdout.startswith(f"usage: stagetimer {command} ")
    assert "%%" not in ran.stdout, [line for line in ran.stdout.splitlines() if "%%" in line]
