"""An attempt's ``evidence`` is one line, and so is every text of a marker it is made
from (an exception's type name holding a newline, a carriage return, a Unicode line
separator, an escape sequence): each such character is written as its escape."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.attempt_markers import marker, plant
from helpers.cli import run_cli
from helpers.process_life import run_script

from stagetimer import attempts

BREAKS = ["\n", "\r", "\u2028", "\u2029", "\x1b[31m", "\x0b", "\x0c", "\x1c", "\x85", "\t"]

#: A real exception class whose name holds a newline.
TWO_LINE_CLASS = """
import sys
from stagetimer import Recorder, stage
Odd = type("Two\\nLines", (Exception,), {})
try:
    with stage("train", run_idx=0, recorder=Recorder(sys.argv[1])):
        raise Odd()
except Exception:
    pass
"""


def _one_line(text: str | None) -> bool:
    return text is None or (len(text.splitlines()) <= 1 and text.isprintable())


def test_an_exception_class_whose_name_holds_a_newline_gives_one_line(tmp_path: Path) -> None:
    run_script(TWO_LINE_CLASS, tmp_path)

    (found,) = attempts(tmp_path)

    assert "failed" == found.state
    assert _one_line(found.evidence) and _one_line(found.exception)
    assert "Two\\nLines" in found.evidence


@pytest.mark.parametrize("outcome", ["raised", "interrupted"])
@pytest.mark.parametrize("brk", BREAKS, ids=[repr(b) for b in BREAKS])
def test_every_text_that_ends_in_the_evidence_is_one_line(
    tmp_path: Path, outcome: str, brk: str
) -> None:
    plant(tmp_path, marker(outcome=outcome, exception=f"Bad{brk}Error", seconds=1.0,
                           ended_at=f"2026-01-01T00:00:00.000Z{brk}"))
    plant(tmp_path, marker(job={"scheduler": "pbs", "job_id": f"7{brk}8"},
                           writer={"host": f"node{brk}x", "boot_id": "b" * 36}))

    found = attempts(tmp_path)
    text = run_cli("lost", tmp_path).stdout

    assert 2 == len(found)
    for one in found:
        assert _one_line(one.evidence), one.evidence
        assert _one_line(one.exception), one.exception
    listed = text.split("Attempts lost or not decided:\n")[1]
    assert 2 == len(listed.splitlines())
