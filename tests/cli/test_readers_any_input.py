"""Every reader command on any name and any value the file format allows: exit status 0
or 1, output its stream can encode, and never a traceback.

The sidecars are written here as JSON (what a writer may store: stage names without
control characters, any finite duration from 0 to the largest float, any run_idx up to
2**63 - 1, labels and metadata of any text), in directories whose names may hold any
bytes but "/" and NUL (os.fsdecode makes those that are not UTF-8 surrogate escapes).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from helpers.cli import run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stagetimer._format import MAX_RUN_IDX

_TEXT = st.text(st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=10)
_SECONDS = st.one_of(
    st.floats(min_value=0.0, max_value=1.7976931348623157e308, allow_nan=False),
    st.sampled_from([0.0, 5e-324, 1e-6, 1.25, 59.95, 3599.5, 86400.0, 1e300, 1e308]),
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False,
                                                          allow_infinity=False) | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=6,
)
_RUN = st.fixed_dictionaries(
    {"seconds": _SECONDS},
    optional={
        "run_idx": st.integers(0, MAX_RUN_IDX),
        "label": _TEXT,
        "started_at": st.sampled_from(["2026-11-29T12:00:00.000Z", "2026-11-30T00:00:01.5Z"]),
        "meta": _JSON,
    },
)
_STAGES = st.dictionaries(
    _TEXT.filter(lambda n: n not in ("schema_version", "total_seconds", "runs")),
    st.lists(_RUN, min_size=1, max_size=4), min_size=1, max_size=3,
)
_DIR_NAME = st.one_of(
    st.binary(min_size=1, max_size=8).filter(lambda b: b"/" not in b and b"\0" not in b
                                             and b not in (b".", b"..")).map(os.fsdecode),
    _TEXT.filter(lambda t: "/" not in t and t not in (".", "..")),
)
_TREE = st.dictionaries(_DIR_NAME, _STAGES, min_size=1, max_size=3)


def _write(root: Path, tree: dict[str, dict[str, list[dict[str, Any]]]]) -> None:
    for name, stages in tree.items():
        directory = root / name
        directory.mkdir(parents=True)
        data = {
            stage: {"total_seconds": sum((r["seconds"] for r in runs), 0.0)
                    if all(r["seconds"] < 1e307 for r in runs) else runs[0]["seconds"],
                    "runs": runs}
            for stage, runs in stages.items()
        }
        (directory / "timings.json").write_text(json.dumps(data), encoding="utf-8")


COMMANDS = [
    ["report"], ["report", "--json"], ["report", "--csv"], ["report", "--runs"],
    ["table"], ["table", "--latex"], ["table", "--csv"], ["table", "--median"],
    ["table", "--fold-continuations"],
]
COMPARE = [[], ["--json"], ["--markdown"], ["--paired"], ["--fail-if-slower", "5"]]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(base=_TREE, new=_TREE)
def test_every_reader_command_exits_0_or_1_on_anything_the_format_allows(
    base: dict[str, Any], new: dict[str, Any]
) -> None:
    with tempfile.TemporaryDirectory() as top:
        root = Path(top)
        _write(root / "base", base)
        _write(root / "new", new)
        for command in COMMANDS:
            result = run_cli(*command, root / "base")
            assert (result.returncode in (0, 1), "Traceback" not in result.stderr) == (
                True, True), (command, result)
            if command[-1] == "--json":
                json.loads(result.stdout)
        for flags in COMPARE:
            result = run_cli("compare", *flags, root / "base", root / "new")
            allowed = (0, 1, 3) if "--fail-if-slower" in flags else (0, 1)
            assert (result.returncode in allowed, "Traceback" not in result.stderr) == (
                True, True), (flags, result)
            if flags == ["--json"] and result.returncode == 0:
                json.loads(result.stdout)
