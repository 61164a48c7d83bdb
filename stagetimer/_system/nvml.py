"""The ``pynvml`` module, imported for stagetimer's own use, and whether the program had it.

The GPU probe and the energy counters import ``pynvml`` (``nvidia-ml-py``) when they
first need it. The software description must not take that for the program's own use:
with ``pynvml`` loaded it records the NVIDIA driver (through the NVML session the
energy counters keep open) and lists ``nvidia-ml-py`` among the imported packages, so
a CPU-only program would describe itself differently on nodes with different drivers.
This module is the one place stagetimer imports ``pynvml``; it keeps the module object
its own import brought in, to tell it from one the program imported first.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

__all__ = ["MODULE", "load", "program_loaded"]

MODULE = "pynvml"
#: The module object stagetimer's own import brought in (None: the program had it
#: first, or stagetimer never imported it).
_ours: Any = None


def load() -> Any:
    """``pynvml``, imported if need be; raises ``ImportError`` when it is not installed."""
    global _ours
    had = sys.modules.get(MODULE)
    module = importlib.import_module(MODULE)
    if had is None and _ours is None:
        _ours = module
    return module


def program_loaded() -> bool:
    """Whether ``pynvml`` is loaded because the program imported it (not only because
    stagetimer did). A program that imports it after stagetimer did gets the same
    module and is not told apart."""
    module = sys.modules.get(MODULE)
    return module is not None and module is not _ours
