"""NVIDIA GPUs visible to the process, read through NVML (the ``pynvml`` module).

NVML is initialised once per capture and always shut down. Every NVML error is
translated here: a missing library or driver gives no GPUs and a reason; a
function a device does not support leaves that field ``None`` with the reason
in ``sources``. Names follow ``pynvml.py`` of the ``nvidia-ml-py`` package.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from stagetimer._system.nvml import load as load_nvml
from stagetimer.hardware._model import GpuInfo

__all__ = [
    "Reader",
    "Visible",
    "energy_counters",
    "energy_handles",
    "peak_bandwidth",
    "probe_gpus",
    "select_visible",
    "visible",
]

_log = logging.getLogger("stagetimer")

#: Where the energy per stage comes from, or why there is none (see energy_handles).
_ENERGY = "resources.gpu_energy_joules"
# pynvml.NVML_CLOCK_MEM; read from the module when it defines it.
_NVML_CLOCK_MEM = 2


def peak_bandwidth(clock_mhz: int | None, bus_bits: int | None) -> int | None:
    """Peak memory bandwidth in bytes/s: clock (MHz) * 10^6 * 2 * bus width / 8.

    NVML's memory clock is already half the data rate, so the x2 holds for HBM and
    GDDR alike (A100 40GB: 1215 MHz * 5120 bits → 1555.2 GB/s, its datasheet's 1555).
    """
    if not clock_mhz or not bus_bits:
        return None
    return clock_mhz * 10**6 * 2 * bus_bits // 8


_ORDINAL = re.compile(r"\+?(\d+)")


def select_visible(
    value: str | None,
    uuids: list[str | None],
    mig_exists: Callable[[str], bool | None] | None = None,
) -> tuple[list[tuple[int, str]], str]:
    """The NVML indices ``CUDA_VISIBLE_DEVICES`` selects, each with its entry, and a note.

    Unset: every GPU. Entries are ordinals, ``GPU-`` UUIDs or unique UUID prefixes
    (any case). The first invalid entry (out of range, negative, not a number or a
    ``GPU-`` id, unknown or ambiguous) ends the list: ``0,2,-1,1`` selects 0 and 2.
    Checked against the CUDA driver itself (``cuInit`` + ``cuDeviceGetCount``,
    driver 580, one H200): ``0,1`` → 1 device, ``1,0`` and ``-1`` → none, `` 0``,
    ``00``, ``+0`` and ``0x0`` → device 0, ``GPU-43f44b`` (a prefix) and the upper-case
    UUID → device 0, ``GPU-`` alone or a UUID without ``GPU-`` → none, and a repeated
    ordinal (``0,0``) makes ``cuInit`` fail (CUDA_ERROR_INVALID_DEVICE): no GPU at all.
    ``MIG-`` entries name MIG instances: one that ``mig_exists`` confirms is skipped
    (a slice does not have the device's bandwidth), one it rejects ends the list.
    """
    if value is None:
        return [(i, "") for i in range(len(uuids))], "CUDA_VISIBLE_DEVICES unset: every GPU"
    chosen: list[tuple[int, str]] = []
    notes: list[str] = []
    for raw in value.split(","):
        entry = raw.strip()
        ordinal = _ordinal(entry)
        if _repeated(ordinal, chosen):
            return [], (
                f"CUDA_VISIBLE_DEVICES={value!r} repeats ordinal {ordinal}: "
                "CUDA fails to initialise (CUDA_ERROR_INVALID_DEVICE)"
            )
        skipped = _mig_skipped(entry, mig_exists)
        if skipped is not None:
            notes.append(skipped)
            continue
        index = _new_index(entry, ordinal, uuids, chosen)
        if index is None:
            notes.append(f"entry {entry!r} is invalid and ends the list")
            break
        chosen.append((index, entry))
    return chosen, _visible_note(value, notes)


def _repeated(ordinal: int | None, chosen: list[tuple[int, str]]) -> bool:
    """Whether ``ordinal`` was an entry before. Every ordinal before the one that ends the
    list was chosen, so the chosen entries hold all of them."""
    return ordinal is not None and ordinal in (_ordinal(entry) for _, entry in chosen)


def _visible_note(value: str, notes: list[str]) -> str:
    return f"CUDA_VISIBLE_DEVICES={value!r}" + (f" ({'; '.join(notes)})" if notes else "")


def _ordinal(entry: str) -> int | None:
    """The number an entry starts with (``+0``, ``00``, ``0x0`` are 0), or None."""
    match = _ORDINAL.match(entry) if entry.isascii() else None
    return None if match is None else int(match.group(1))


def _mig_skipped(entry: str, mig_exists: Callable[[str], bool | None] | None) -> str | None:
    """The note for a ``MIG-`` entry that is skipped; None for any other entry and for a
    MIG instance ``mig_exists`` rejects (it ends the list)."""
    if entry[:4].upper() != "MIG-":
        return None
    exists = mig_exists(entry) if mig_exists is not None else None
    if exists is False:
        return None
    checked = "" if exists else " (not checked)"
    return f"MIG instance {entry!r}{checked} skipped: not described"


def _new_index(
    entry: str, ordinal: int | None, uuids: list[str | None], chosen: list[tuple[int, str]]
) -> int | None:
    """The NVML index a valid entry names: one not ``chosen`` before; None for an entry
    that is invalid (it ends the list)."""
    index = _index(entry, ordinal, uuids)
    if index is None or index in (i for i, _ in chosen):
        return None
    return index


def _index(entry: str, ordinal: int | None, uuids: list[str | None]) -> int | None:
    """The NVML index an entry names: an ordinal in range, or the one GPU whose UUID
    starts with a ``GPU-`` entry (any case); None when it names none."""
    if ordinal is not None:
        return ordinal if ordinal < len(uuids) else None
    if entry[:4].upper() != "GPU-" or len(entry) <= 4:
        return None
    return _only_match(entry.lower(), uuids)


def _only_match(prefix: str, uuids: list[str | None]) -> int | None:
    """The index of the one UUID that starts with ``prefix`` (lower case); None when no
    UUID or several do."""
    matches = [i for i, u in enumerate(uuids) if u and u.lower().startswith(prefix)]
    return matches[0] if len(matches) == 1 else None


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


class Reader:
    """Calls one NVML function at a time, turning NVML errors into a reason."""

    def __init__(self, nvml: Any) -> None:
        self.nvml = nvml
        self.error: type[BaseException] = getattr(nvml, "NVMLError", Exception)

    def call(self, name: str, *args: Any) -> tuple[Any, str]:
        try:
            return getattr(self.nvml, name)(*args), name
        except self.error as err:
            return None, f"{name}: {type(err).__name__}"


def _describe(
    reader: Reader, index: int, handle: Any, uuid: str | None, entry: str, slot: int
) -> tuple[GpuInfo, dict[str, str]]:
    key = f"gpus[{slot}]"
    sources = {
        f"{key}.index": "nvmlDeviceGetHandleByIndex"
        + (f" (CUDA_VISIBLE_DEVICES entry {entry!r})" if entry else "")
    }
    name, sources[f"{key}.name"] = reader.call("nvmlDeviceGetName", handle)
    sources[f"{key}.uuid"] = "nvmlDeviceGetUUID" if uuid else "nvmlDeviceGetUUID failed"
    total, sources[f"{key}.memory_usable_bytes"] = _memory_total(reader, handle)
    # Unified-memory parts report a bus width of 0: missing, not zero.
    bus, sources[f"{key}.memory_bus_width_bits"] = _reported(
        reader, "nvmlDeviceGetMemoryBusWidth", "nvmlDeviceGetMemoryBusWidth", handle
    )
    clock_id = getattr(reader.nvml, "NVML_CLOCK_MEM", _NVML_CLOCK_MEM)
    clock, sources[f"{key}.max_memory_clock_mhz"] = _reported(
        reader, "nvmlDeviceGetMaxClockInfo(NVML_CLOCK_MEM)", "nvmlDeviceGetMaxClockInfo",
        handle, clock_id,
    )
    bandwidth = peak_bandwidth(clock, bus)
    sources[f"{key}.peak_memory_bandwidth_bytes_per_s"] = (
        "max memory clock (MHz) * 10^6 * 2 * bus width (bits) / 8"
        if bandwidth
        else "needs both the max memory clock and the bus width"
    )
    info = GpuInfo(
        index=index,
        name=_text(name) if name is not None else None,
        uuid=uuid,
        memory_usable_bytes=total,
        memory_bus_width_bits=bus,
        max_memory_clock_mhz=clock,
        peak_memory_bandwidth_bytes_per_s=bandwidth,
    )
    return info, sources


def _memory_total(reader: Reader, handle: Any) -> tuple[int | None, str]:
    """The device's memory in bytes (None where NVML reports none) and its source."""
    memory, where = reader.call("nvmlDeviceGetMemoryInfo", handle)
    total = getattr(memory, "total", None)
    if not total:
        return None, f"{where} (no total reported)"
    return int(total), "nvmlDeviceGetMemoryInfo total"


def _reported(reader: Reader, source: str, name: str, *args: Any) -> tuple[int | None, str]:
    """What NVML function ``name`` reports, None where it fails or reports 0, and its
    source: ``source``, or why it is missing."""
    value, where = reader.call(name, *args)
    if not value:
        return None, f"{where} (reported 0 or failed)"
    return int(value), source


class Visible(NamedTuple):
    """The GPUs NVML lists and the ones ``CUDA_VISIBLE_DEVICES`` selects among them."""

    listed: int
    handles: list[Any]  # by NVML index; None where nvmlDeviceGetHandleByIndex failed
    uuids: list[str | None]
    chosen: list[tuple[int, str]]  # (NVML index, its CUDA_VISIBLE_DEVICES entry)
    note: str

    def chosen_handles(self) -> list[Any]:
        """The handles of the selected GPUs (None where NVML gave none)."""
        return [self.handles[i] for i, _ in self.chosen]


def visible(reader: Reader, environ: Mapping[str, str]) -> Visible | str:
    """The GPUs visible to the process (one enumeration, one selection rule for the GPU
    probe and the energy counters alike), or why NVML cannot count them."""
    count, where = reader.call("nvmlDeviceGetCount")
    if count is None:
        return f"NVML cannot count GPUs: {where}"
    handles: list[Any] = []
    uuids: list[str | None] = []
    for i in range(int(count)):
        handle, _ = reader.call("nvmlDeviceGetHandleByIndex", i)
        handles.append(handle)
        uuid = reader.call("nvmlDeviceGetUUID", handle)[0] if handle is not None else None
        uuids.append(_text(uuid) if uuid is not None else None)

    def mig_exists(entry: str) -> bool | None:
        # NVML resolves MIG-<uuid> (notes: nvmlDeviceGetHandleByUUID accepts GPU- and MIG-;
        # an unknown one is NVMLError_NotFound, observed with driver 580). The legacy
        # MIG-GPU-<uuid>/<gi>/<ci> form is checked only for its parent GPU's UUID.
        if "/" in entry:
            parent = entry[4:].split("/", 1)[0].lower()
            return None if parent in [(u or "").lower() for u in uuids] else False
        if not hasattr(reader.nvml, "nvmlDeviceGetHandleByUUID"):
            return None
        return reader.call("nvmlDeviceGetHandleByUUID", entry)[0] is not None

    chosen, note = select_visible(environ.get("CUDA_VISIBLE_DEVICES"), uuids, mig_exists)
    return Visible(int(count), handles, uuids, chosen, note)


def _counter(nvml: Any, handle: Any) -> int | None:
    error: type[BaseException] = getattr(nvml, "NVMLError", Exception)
    try:
        value = nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
    except (error, AttributeError):
        return None
    return int(value) if value else None  # 0: a part without the counter (pre-Volta)


def energy_handles(nvml: Any, environ: Mapping[str, str]) -> tuple[list[Any] | None, str]:
    """``(handles, source)`` of the visible GPUs (``visible``: the GPU probe's
    selection) when every one has the energy counter, else ``(None, why not)``. NVML
    must be initialised by the caller."""
    if _emptied(environ):
        return None, "no GPU visible (CUDA_VISIBLE_DEVICES is empty)"
    try:
        found = visible(Reader(nvml), environ)
    except (OSError, ValueError) as err:  # OSError: a broken library inside ctypes
        return None, f"NVML cannot list the GPUs: {type(err).__name__}"
    if isinstance(found, str):
        return None, found
    return energy_counters(nvml, found.chosen_handles())


def energy_counters(nvml: Any, chosen: list[Any]) -> tuple[list[Any] | None, str]:
    """``(chosen, source)`` when every one of the ``chosen`` GPUs' handles has the energy
    counter, else ``(None, why not)``."""
    if not chosen:
        return None, "no GPU visible"
    if None in chosen:
        return None, "NVML gave no handle for a visible GPU (nvmlDeviceGetHandleByIndex failed)"
    for slot, handle in enumerate(chosen):
        if _counter(nvml, handle) is None:
            return None, (
                f"gpus[{slot}] has no energy counter (nvmlDeviceGetTotalEnergyConsumption "
                "not supported or 0: NVIDIA Volta and later have one)"
            )
    return chosen, (
        f"nvmlDeviceGetTotalEnergyConsumption (millijoules) summed over the {len(chosen)} "
        "visible GPU(s) at the stage's entry and exit"
    )


def _enumerate(
    reader: Reader, environ: Mapping[str, str]
) -> tuple[tuple[GpuInfo, ...], str | None, dict[str, str], list[Any]]:
    """The visible GPUs described, why there are none, their sources, and their handles."""
    found = visible(reader, environ)
    if isinstance(found, str):
        return (), found, {}, []
    gpus: list[GpuInfo] = []
    sources: dict[str, str] = {}
    lost: list[str] = []
    for index, entry in found.chosen:
        handle = found.handles[index]
        if handle is None:
            lost.append(f"GPU {index}: nvmlDeviceGetHandleByIndex failed")
            continue
        info, more = _describe(reader, index, handle, found.uuids[index], entry, len(gpus))
        gpus.append(info)
        sources.update(more)
    if not gpus:
        why = "NVML reports no GPU" if not found.listed else f"no GPU selected: {found.note}"
        return (), why, {}, []
    sources["gpus"] = _summary(found, gpus, lost, environ)
    return tuple(gpus), None, sources, found.chosen_handles()


def _summary(
    found: Visible, gpus: list[GpuInfo], lost: list[str], environ: Mapping[str, str]
) -> str:
    """The ``gpus`` source: how many of the listed GPUs are described, by which selection,
    which were lost, and whether CUDA may number them otherwise."""
    summary = f"NVML: {len(gpus)} of {found.listed} GPUs; {found.note}"
    if lost:
        summary += "; " + "; ".join(lost)
    if _cuda_may_renumber(found, gpus, environ):
        summary += (
            "; ordinals taken as NVML indices, which CUDA's FASTEST_FIRST order may not match"
        )
    return summary


def _cuda_may_renumber(found: Visible, gpus: list[GpuInfo], environ: Mapping[str, str]) -> bool:
    """Whether CUDA may number the GPUs chosen by ordinal otherwise than NVML: it numbers
    FASTEST_FIRST by default, NVML by PCI bus (CUDA docs), which differ only among
    different models."""
    if environ.get("CUDA_DEVICE_ORDER") == "PCI_BUS_ID" or len({gpu.name for gpu in gpus}) < 2:
        return False
    return any(entry and entry[:4].upper() != "GPU-" for _, entry in found.chosen)


def probe_gpus(
    environ: Mapping[str, str], nvml: Any = None
) -> tuple[tuple[GpuInfo, ...], str | None, dict[str, str]]:
    """``(gpus, gpu_reason, sources)``: the GPUs visible to the process, or why there are none."""
    if _emptied(environ):
        return _none("CUDA_VISIBLE_DEVICES is empty: no GPU is visible")
    if nvml is None:
        try:
            # Imported here, never at import time: loading NVML is the slow part of a capture.
            nvml = load_nvml()
        except ImportError:
            return _none("pynvml (nvidia-ml-py) is not installed")
    return _probe(nvml, environ)


def _probe(
    nvml: Any, environ: Mapping[str, str]
) -> tuple[tuple[GpuInfo, ...], str | None, dict[str, str]]:
    """``probe_gpus`` with NVML loaded: initialise it, enumerate, and shut it down."""
    reader = Reader(nvml)
    try:
        nvml.nvmlInit()
    except (reader.error, OSError) as err:  # OSError: a broken libnvidia-ml fails inside ctypes
        return _none(f"NVML unavailable: {type(err).__name__} at nvmlInit")
    try:
        gpus, reason, sources, handles = _enumerate(reader, environ)
        if reason is None:
            sources[_ENERGY] = energy_counters(nvml, handles)[1]
    finally:
        try:
            nvml.nvmlShutdown()
        except reader.error as err:
            _log.debug("nvmlShutdown failed: %s", type(err).__name__)
    if reason is not None:
        return _none(reason)
    sources["gpu_reason"] = "GPUs are listed"
    return gpus, None, sources


def _emptied(environ: Mapping[str, str]) -> bool:
    """Whether ``CUDA_VISIBLE_DEVICES`` is set and empty (blanks aside): no GPU is visible."""
    value = environ.get("CUDA_VISIBLE_DEVICES")
    return value is not None and not value.strip()


def _none(reason: str) -> tuple[tuple[GpuInfo, ...], str | None, dict[str, str]]:
    no_energy = "no GPU (the gpus line says why)"
    return (), reason, {"gpus": reason, "gpu_reason": reason, _ENERGY: no_energy}
