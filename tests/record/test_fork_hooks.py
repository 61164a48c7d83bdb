"""Each module resets its own state after ``fork()`` with its own ``os.register_at_fork``
hook; no hook calls another module's fork reset."""

from __future__ import annotations

import ast
import importlib
import inspect

import pytest

MODULES_WITH_STATE = [
    "stagetimer._record.pending",  # the live hardware capture
    "stagetimer._record.reentry",  # the running save section
    "stagetimer._system.process_state",  # pending records of each recorder
    "stagetimer._store.locking.lock",  # locks held, their descriptors
    "stagetimer._store.leftovers",  # unfinished writes to clear
    "stagetimer._store.locking.claims",  # claims held, other writers' claims seen
    "stagetimer._record.resources",  # the counters probe; forks since a stage began
]


def _hooks(tree: ast.Module) -> list[str]:
    """Names of the functions a module passes to ``os.register_at_fork``."""
    return [
        kw.value.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "register_at_fork"
        for kw in node.keywords
        if kw.arg == "after_in_child" and isinstance(kw.value, ast.Name)
    ]


@pytest.mark.parametrize("name", MODULES_WITH_STATE)
def test_each_module_registers_its_own_fork_hook(name: str) -> None:
    tree = ast.parse(inspect.getsource(importlib.import_module(name)))
    (hook,) = _hooks(tree)
    (function,) = [
        n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == hook
    ]
    # It calls no other module's reset: that module registers its own.
    called = {
        n.func.attr
        for n in ast.walk(function)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
    }
    assert not {c for c in called if "reset" in c and "fork" in c}
