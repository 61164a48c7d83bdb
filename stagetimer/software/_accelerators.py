"""What accelerator libraries the process loaded, as they report themselves at run time.

A package manager's claim can be wrong (pip listed NCCL 2.26 where torch had loaded
2.28): these are the versions the loaded libraries give. Only modules already in
``sys.modules`` are asked, so nothing is imported, no CUDA context is created and
NVML is never initialised for this.

The NVIDIA driver: where the program itself has NVML initialised, ``pynvml``'s
``nvmlSystemGetDriverVersion()``; otherwise the loaded kernel module's version from
``/proc/driver/nvidia/version``, which the user-space driver must match (NVML and
CUDA refuse a mismatch: "Driver/library version mismatch"). Initialising NVML just for
this would cost tens to hundreds of milliseconds on a node with several GPUs and
open every device; reading the file costs a few microseconds. The driver is recorded
only when a GPU library is loaded (torch built with CUDA, or ``pynvml`` imported by the
program: not stagetimer's own import of it, ``_system.nvml``), so that two CPU-only
runs on nodes with different drivers do not differ.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from stagetimer._system import nvml
from stagetimer._system.files import read_or_reason

__all__ = ["loaded_accelerators"]

_DRIVER_FILE = "/proc/driver/nvidia/version"
# "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 ..." and the
# open module's "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15 ..."
_DRIVER = re.compile(r"Kernel Module(?: for \S+)?\s+(\d+(?:\.\d+)+)")


def _cudnn(value: int) -> str:
    # cuDNN encodes its version as major*1000+minor*100+patch before 9, and as
    # major*10000+minor*100+patch from 9 on (cudnn.h, CUDNN_VERSION).
    if value >= 90000:
        return f"{value // 10000}.{value % 10000 // 100}.{value % 100}"
    return f"{value // 1000}.{value % 1000 // 100}.{value % 100}"


def _torch(found: dict[str, str], sources: dict[str, str]) -> bool:
    """torch's CUDA (or ROCm), cuDNN and NCCL; whether torch uses an NVIDIA GPU stack."""
    torch: Any = sys.modules.get("torch")
    if torch is None:
        return False
    version = getattr(torch, "version", None)
    cuda, hip = getattr(version, "cuda", None), getattr(version, "hip", None)
    if isinstance(cuda, str):
        found["cuda"] = cuda
        sources["accelerators.cuda"] = "torch.version.cuda"
    if isinstance(hip, str):
        found["rocm"] = hip
        sources["accelerators.rocm"] = "torch.version.hip"
    _ask("cudnn", "torch.backends.cudnn", found, sources)
    if isinstance(cuda, str):  # torch built for ROCm has RCCL under the same name
        _ask("nccl", "torch.cuda.nccl", found, sources)
    return isinstance(cuda, str)


def _version_text(value: object) -> str | None:
    """``cudnn.version()`` (an int) and ``nccl.version()`` (a tuple) as text."""
    if isinstance(value, int) and not isinstance(value, bool):
        return _cudnn(value)
    if isinstance(value, tuple):
        return ".".join(str(part) for part in value)
    return None


def _ask(
    library: str, module_name: str, found: dict[str, str], sources: dict[str, str]
) -> None:
    """``<module_name>.version()`` of a module already imported, as ``found[library]``."""
    module: Any = sys.modules.get(module_name)
    if module is None:
        return  # not imported: not asked (that would import or initialise it)
    key, call = f"accelerators.{library}", f"{module_name}.version()"
    try:
        text = _version_text(module.version())
    except Exception as exc:  # a broken build must not break the capture
        sources[key] = f"{call} failed: {exc!r}"[:160]
        return
    if text is not None:
        found[library] = text
        sources[key] = call


def _driver_from_nvml() -> str | None:
    pynvml: Any = sys.modules.get(nvml.MODULE) if nvml.program_loaded() else None
    if pynvml is None:
        return None
    try:
        # Raises NVMLError_Uninitialized unless the program has NVML initialised.
        version = pynvml.nvmlSystemGetDriverVersion()
    except Exception:
        return None
    if isinstance(version, bytes):  # nvidia-ml-py before 11.5 returned bytes
        version = version.decode("ascii", "replace")
    return version if isinstance(version, str) else None


def _driver_from_proc(root: str) -> tuple[str | None, str]:
    text, reason = read_or_reason(root, _DRIVER_FILE)
    if text is None:
        return None, f"{reason} (no NVIDIA driver loaded)"
    match = _DRIVER.search(text)
    if match is None:
        return None, f"{_DRIVER_FILE} has no kernel module version"
    return match.group(1), f"{_DRIVER_FILE} (the loaded kernel module)"


def _nvidia_driver(root: str) -> tuple[str | None, str]:
    """The NVIDIA driver's version and its source: NVML's where the program has it
    initialised, else the loaded kernel module's."""
    driver = _driver_from_nvml()
    if driver is not None:
        return driver, "pynvml.nvmlSystemGetDriverVersion()"
    return _driver_from_proc(root)


def loaded_accelerators(root: str = "/") -> tuple[dict[str, str], dict[str, str]]:
    """``({library: version}, {"accelerators.<library>": source})`` of loaded libraries."""
    found: dict[str, str] = {}
    sources: dict[str, str] = {}
    uses_nvidia = _torch(found, sources) or nvml.program_loaded()
    if uses_nvidia:
        driver, sources["accelerators.nvidia_driver"] = _nvidia_driver(root)
        if driver is not None:
            found["nvidia_driver"] = driver
    if not found:
        sources["accelerators"] = "no accelerator library loaded (torch, pynvml not imported)"
    return found, sources
