"""The readers leave the caller's process as they found it: the garbage collector above all.

Each reader (``load_tree``, ``compare``, ``to_records``, ``build_table``, the report
model and its text) runs on a small suite in a fresh interpreter that made young
unreachable cycles just before the call: the collections during the call (triggered by
its allocations) and a young collection after it must find them, and the collector's
switch and its frozen count are unchanged. A reader that disabled the collector and
then froze/unfroze it would have moved those cycles to the oldest generation, out of
reach of ``gc.collect(0)``: found 0.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from stagetimer import Recorder, record_timing

_CALLS = {
    "load_tree": "load_tree(base)",
    "compare": "compare(base, new)",
    "to_records": "to_records(base)",
    "build_table": "build_table(load_tree(base))",
    "build_report": "build_report([base])",
    "render_text": "render_text(build_report([base])[0])",
}

_SCRIPT = """
import gc, sys
from stagetimer import compare, load_tree, to_records
from stagetimer._analysis.report import build_report
from stagetimer._analysis.table import build_table
from stagetimer._render.report_text import render_text

base, new = sys.argv[1], sys.argv[2]
{call}  # once first: imports and caches are not what is measured
gc.collect()
enabled, frozen = gc.isenabled(), gc.get_freeze_count()


class Node:
    pass


def cycles(n):
    for _ in range(n):
        a, b = Node(), Node()
        a.other, b.other = b, a


found = []


def count(phase, info):
    # Collections the call's own allocations trigger find the cycles too (young ones).
    if phase == "stop":
        found.append(info["collected"])


# Fewer objects than the youngest generation's threshold (700): the cycles are still
# uncollected when the call starts.
gc.disable()
cycles(50)
gc.enable()
gc.callbacks.append(count)
{call}
gc.collect(0)
gc.callbacks.remove(count)
print(sum(found), gc.isenabled() == enabled, gc.get_freeze_count() == frozen)
"""


def _suite(root: Path) -> None:
    for side in ("base", "new"):
        for algo in ("ippo", "mappo"):
            rec = Recorder(root / side / "env" / algo)
            for seed in range(3):
                record_timing(f"{algo}_train", 1.0 + seed, run_idx=seed, recorder=rec)


@pytest.mark.parametrize("name", sorted(_CALLS))
def test_a_reader_leaves_young_cycles_to_a_young_collection(tmp_path: Path, name: str) -> None:
    _suite(tmp_path)
    script = textwrap.dedent(_SCRIPT).format(call=_CALLS[name])

    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "base"), str(tmp_path / "new")],
        capture_output=True, text=True, timeout=120, check=True,
    )

    collected, same_switch, same_frozen = done.stdout.split()
    assert (True, "True", "True") == (int(collected) >= 100, same_switch, same_frozen)
