"""Type checkers see what ``@timed_stage`` returns: the function's own signature, its
``.auto_resume`` form, and methods bound as methods (checked with mypy on small files)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

PRELUDE = '''
from __future__ import annotations

import asyncio
from collections.abc import Iterator

from stagetimer import timed_stage


@timed_stage("checkpoint_save", run_idx="run_idx")
def checkpoint_save(path: str, run_idx: int) -> str:
    return path


@timed_stage
def nashconv(policy: float) -> float:
    return policy


@timed_stage("nashconv", run_idx="run_idx")
async def evaluate(run_idx: int) -> int:
    return run_idx


@timed_stage
def items(n: int) -> Iterator[int]:
    yield from range(n)


class Trainer:
    @timed_stage("checkpoint_save", run_idx="run_idx")
    def save(self, run_idx: int) -> int:
        return run_idx


trainer = Trainer()
'''


def mypy(tmp_path: Path, body: str, *, with_lines: bool = False) -> list[Any]:
    """mypy --strict's messages for the prelude followed by ``body`` (with their line
    numbers when asked); types are named without their ``builtins.`` prefix."""
    source = tmp_path / "use.py"
    source.write_text(PRELUDE + textwrap.dedent(body))
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental",
         "--cache-dir", str(tmp_path / "cache"), str(source)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={"MYPYPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    messages = []
    for line in result.stdout.replace("builtins.", "").splitlines():
        where, _, message = line.partition(": ")
        if message:
            number = int(where.rsplit(":", 1)[-1]) if where.count(":") else 0
            messages.append((number, message) if with_lines else message)
    return messages


def test_calls_and_auto_resume_keep_the_functions_types(tmp_path: Path) -> None:
    notes = mypy(tmp_path, """
        reveal_type(checkpoint_save("x", 0))
        reveal_type(checkpoint_save.auto_resume("x", run_idx=0))
        reveal_type(nashconv.auto_resume(0.5))
        reveal_type(asyncio.run(evaluate.auto_resume(1)))
        reveal_type(list(items(3)))
        reveal_type(trainer.save(1))
        reveal_type(Trainer.save.auto_resume(trainer, 1))
        reveal_type(nashconv.__wrapped__)
    """)

    assert [
        'note: Revealed type is "str"',
        'note: Revealed type is "str"',
        'note: Revealed type is "float"',
        'note: Revealed type is "int"',
        'note: Revealed type is "list[int]"',
        'note: Revealed type is "int"',
        'note: Revealed type is "int"',
        'note: Revealed type is "def (policy: float) -> float"',
    ] == [n for n in notes if n.startswith("note:")]


WRONG = {
    'nashconv("x")': 'incompatible type "str"; expected "float"',
    "nashconv.auto_resume()": 'Missing positional argument "policy"',
    'trainer.save("1")': 'incompatible type "str"; expected "int"',
    # A bound method does not bind .auto_resume at run time: the checker says so too.
    "trainer.save.auto_resume(1)": 'has no attribute "auto_resume"',
}


def test_wrong_calls_are_type_errors(tmp_path: Path) -> None:
    lines = PRELUDE.count("\n") + 1
    messages = mypy(tmp_path, "\n".join(WRONG) + "\n", with_lines=True)

    found = {
        call: [m for line, m in messages if line == lines + i and m.startswith("error:")]
        for i, call in enumerate(WRONG)
    }
    assert {call: 1 for call in WRONG} == {call: len(m) for call, m in found.items()}, found
    assert [] == [call for call, m in found.items() if WRONG[call] not in m[0]]
