"""The tree walk visits each real directory once, whatever the links: a link bomb or a
link to ``/`` under an exports tree stalls no reader.

Each reader runs in a child process with a timeout (a walk of minutes fails the test).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from helpers.process_life import run_script

from stagetimer._analysis.tree import find_artifact_dirs

TIMEOUT = 60.0


def _suite(root: Path) -> Path:
    """An exports tree with one artifact directory, ten directories that all link to each
    other (90 links), and a link to ``/``."""
    art = root / "exports" / "d0" / "ippo"
    art.mkdir(parents=True)
    (art / "timings.json").write_text(
        json.dumps({"ippo_train": {"total_seconds": 1.0, "runs": [{"seconds": 1.0}]}})
    )
    dirs = [root / "exports" / f"d{i}" for i in range(10)]
    for d in dirs:
        d.mkdir(exist_ok=True)
    for d in dirs:
        for other in dirs:
            if other != d:
                (d / f"to-{other.name}").symlink_to(other)
    (root / "exports" / "root").symlink_to("/")
    return root / "exports"


def test_a_link_bomb_and_a_link_to_the_root_are_walked_once(tmp_path: Path) -> None:
    exports = _suite(tmp_path)

    start = time.monotonic()
    found, problems = find_artifact_dirs([exports])
    elapsed = time.monotonic() - start

    assert ([("d0/ippo")], []) == ([relpath for _, _, relpath in found], problems)
    assert elapsed < TIMEOUT


@pytest.mark.parametrize(
    "argv",
    [["report"], ["table"], ["compare", "{exports}"]],
    ids=["report", "table", "compare"],
)
def test_every_reader_finishes_promptly_under_links(tmp_path: Path, argv: list[str]) -> None:
    exports = _suite(tmp_path)
    args = [a.format(exports=exports) for a in argv]
    code = "import sys; from stagetimer._cli import main; sys.exit(main(sys.argv[1:]))"

    done = run_script(code, *args, exports, timeout=TIMEOUT, check=False)

    assert 0 == done.returncode, done.stderr[-2000:]
    assert "ippo" in done.stdout


def test_to_records_finishes_promptly_under_links(tmp_path: Path) -> None:
    exports = _suite(tmp_path)
    code = "import sys; from stagetimer import to_records; print(len(to_records(sys.argv[1])))"

    done = run_script(code, exports, timeout=TIMEOUT)

    assert "1" == done.stdout.strip(), done.stderr
    assert sys.executable
