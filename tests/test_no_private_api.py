"""The library uses no private API of the standard library or of a dependency: no
``module._name`` or ``getattr(module, "_name")`` on a module that is not stagetimer's."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import stagetimer

PACKAGE = Path(stagetimer.__file__).parent
_UNDOCUMENTED = frozenset(
    {"c_make_encoder", "c_scanstring", "c_make_scanner", "c_encode_basestring"}
)


def _foreign_modules(tree: ast.Module) -> set[str]:
    """Names bound to modules from outside stagetimer (``import os``, ``import json as j``)."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not alias.name.startswith("stagetimer"):
                    bound.add(alias.asname or alias.name.split(".")[0])
    return bound


def _private_uses(source: str, name: str) -> Iterator[str]:
    tree = ast.parse(source)
    foreign = _foreign_modules(tree)

    def private(name: str) -> bool:
        # ``json.encoder.c_make_encoder`` and the like: the C accelerators json uses
        # internally, undocumented though they have no underscore.
        return (name.startswith("_") and not name.startswith("__")) or name in _UNDOCUMENTED

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and private(node.attr):
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in foreign:
                yield f"{name}:{node.lineno}: .{node.attr}"
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and private(node.args[1].value)
        ):
            yield f"{name}:{node.lineno}: {node.func.id} {node.args[1].value}"


def test_the_checker_finds_what_it_looks_for() -> None:
    source = (
        "import os\nimport sys\nimport json.encoder\nfrom stagetimer import _errors\n"
        "x = sys._getframe()\ny = getattr(os.environ, '_data')\n"
        "z = json.encoder._make_iterencode\nok = _errors.__name__, os.__file__\n"
        "c = getattr(json.encoder, 'c_make_encoder', None)\n"
    )

    found = sorted(_private_uses(source, "sample.py"))

    assert ["sample.py:5: ._getframe", "sample.py:6: getattr _data",
            "sample.py:7: ._make_iterencode", "sample.py:9: getattr c_make_encoder"] == found


def test_no_private_api_of_another_package() -> None:
    found = [
        use
        for path in sorted(PACKAGE.rglob("*.py"))
        for use in _private_uses(path.read_text(encoding="utf-8"), str(path.relative_to(PACKAGE)))
    ]

    assert [] == found
