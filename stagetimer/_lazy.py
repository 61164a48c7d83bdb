"""Names a package imports on first use (PEP 562 ``__getattr__``), so that importing it
stays as light as the recording path needs. Used by ``stagetimer``, ``stagetimer.hardware``
and ``stagetimer.software``; imports nothing of stagetimer, so every layer may use it."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_attributes"]


def lazy_attributes(
    package: str, where: Mapping[str, str], namespace: dict[str, Any]
) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: name → the module ``where`` says, imported
    on first use and then kept in ``namespace`` (the package's ``globals()``)."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
