"""``collector_paused``: the collector off while a suite is read, and left as it was found.

At the end of a pause what was built moves to the oldest generation (freeze, then
unfreeze). Each case runs in a child process: freezing is process-wide state.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap


def run_child(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True, text=True, timeout=60, check=True,
    )
    return done.stdout.strip()


def test_pause_leaves_nothing_frozen_and_the_collector_on() -> None:
    # CPython 3.12.1 starts with objects in the permanent generation (375 of them): what
    # counts is that a pause freezes nothing more.
    out = run_child("""
        import gc
        from stagetimer._analysis.tree import collector_paused
        before = gc.get_freeze_count()
        with collector_paused():
            during = gc.isenabled()
            held = [[i] for i in range(10000)]
        print(during, gc.isenabled(), gc.get_freeze_count() == before)
    """)
    assert "False True True" == out


def test_pause_keeps_a_collector_that_was_off_off() -> None:
    out = run_child("""
        import gc
        from stagetimer._analysis.tree import collector_paused
        gc.disable()
        with collector_paused():
            pass
        print(gc.isenabled())
    """)
    assert "False" == out


def test_objects_the_program_froze_stay_frozen() -> None:
    out = run_child("""
        import gc
        from stagetimer._analysis.tree import collector_paused
        kept = [[i] for i in range(1000)]
        gc.freeze()
        frozen = gc.get_freeze_count()
        with collector_paused():
            built = [[i] for i in range(1000)]
        print(gc.get_freeze_count() == frozen > 0)
    """)
    assert "True" == out


def test_a_cycle_built_while_paused_is_still_collected() -> None:
    out = run_child("""
        import gc, weakref
        from stagetimer._analysis.tree import collector_paused

        class Node:
            pass

        with collector_paused():
            node = Node()
            node.self = node
            alive = weakref.ref(node)
            del node
        gc.collect()
        print(alive() is None)
    """)
    assert "True" == out
