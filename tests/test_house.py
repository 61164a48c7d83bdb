"""The structure of the package holds: its import contracts, no import cycle, one home for
the process's fork and exit hooks, and no fragment standing alone without a reason.

docs/architecture.md draws the layers and rooms these tests keep.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "stagetimer"

# The smallest a module with a single importer may be before it belongs in that importer.
SMALLEST_ROOM = 80


def _modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        yield ".".join(parts), path


def _calls(dotted: str) -> list[str]:
    """Where the package calls ``dotted`` (``os.register_at_fork``): ``module:line`` each."""
    owner, name = dotted.rsplit(".", 1)
    found = []
    for module, path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == name
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == owner
            ):
                found.append(f"{module}:{node.lineno}")
    return found


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    # Imports under ``if TYPE_CHECKING:`` name types for annotations and never run.
    return grimp.build_graph("stagetimer", exclude_type_checking_imports=True)


def test_the_import_contracts_are_kept() -> None:
    """The layers, the floor, and no import of another package's private module
    (pyproject.toml's import-linter contracts)."""
    result = subprocess.run(
        [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports;"
         " sys.exit(lint_imports())"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def _imported_names(module: str) -> list[str]:
    """Names imported ``from module`` anywhere in the package (a hook in disguise)."""
    return [
        alias.name
        for _, path in _modules()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and node.module == module
        for alias in node.names
    ]


@pytest.mark.parametrize("hook", ["os.register_at_fork", "atexit.register"])
def test_the_process_has_one_fork_hook_and_one_exit_hook(hook: str) -> None:
    """Every reset after fork and every exit duty goes through one home, in one order."""
    calls = _calls(hook)
    assert len(calls) == 1, calls
    assert calls[0].startswith("stagetimer._system.process_state:"), calls
    owner, name = hook.split(".")
    assert name not in _imported_names(owner)


def _cycle(graph: grimp.ImportGraph) -> list[str]:
    """One import cycle between modules, or ``[]`` (Tarjan's strongly connected parts)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            part = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                part.append(member)
                if member == module:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return found[0] if found else []


def test_no_import_cycle_between_modules(graph: grimp.ImportGraph) -> None:
    """Imports inside functions count too: a cycle is one whichever line closes it (an
    import of types for annotations only, under ``if TYPE_CHECKING:``, runs never)."""
    assert _cycle(graph) == []


def _importers(graph: grimp.ImportGraph, module: str) -> set[str]:
    package = module.rsplit(".", 1)[0]
    return graph.find_modules_that_directly_import(module) - {package}


def test_no_fragment_stands_alone_with_a_single_importer(graph: grimp.ImportGraph) -> None:
    """A module under SMALLEST_ROOM lines that one module imports belongs in that module.

    Package faces (``__init__.py``) and the command line's commands (one module a command,
    found by name) are rooms of their own whatever their size.
    """
    fragments = []
    for module, path in _modules():
        if path.name in ("__init__.py", "__main__.py") or module.startswith("stagetimer._cli."):
            continue
        lines = len(path.read_text(encoding="utf-8").splitlines())
        importers = _importers(graph, module)
        if lines < SMALLEST_ROOM and len(importers) <= 1:
            fragments.append(f"{module} ({lines} lines, imported by {sorted(importers)})")
    assert fragments == []


def test_every_module_says_what_it_holds() -> None:
    """Each module's docstring is its first statement, so a reader meets the room's name."""
    silent = [
        module
        for module, path in _modules()
        if not ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        and path.stat().st_size > 0
    ]
    assert silent == []


def test_docs_architecture_names_every_room() -> None:
    """docs/architecture.md lists each module under its folder: a room added, moved or
    removed is a line to change there."""
    sections: dict[str, set[str]] = {}
    folder = ""
    for line in (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("### `") and line.endswith("/`"):
            folder = line[len("### `") : -len("/`")]
            sections[folder] = set()
        elif folder and line.startswith("| `") and "` |" in line:
            sections[folder].add(line[len("| `") : line.index("` |")])
    listed = {f"{folder}/{name}" for folder, names in sections.items() for name in names}
    present = {str(path.relative_to(ROOT)) for _, path in _modules()}
    assert sorted(present - listed) == []
    assert sorted(listed - present) == []
