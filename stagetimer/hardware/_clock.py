"""The CPU clock range: cpufreq, extended by ACPI CPPC, or a KVM guest's fixed ``cpu MHz``.

Only hardware ranges are read, never the current clock (which is volatile and
would split one machine's description), except in the KVM case, where the
``cpu MHz`` line is the fixed TSC rate the hypervisor declared.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from stagetimer._system.files import read_int, read_ints_or_reason
from stagetimer.hardware._cpu import _CPU_DIR, any_cpu, cpuinfo_blocks

__all__ = ["cppc_max_mhz", "cpufreq_range", "first_problem", "kvm_cpuinfo_mhz", "probe_clock"]

# 255 is the largest 8-bit perf value; firmware that fills the field with it has been
# seen where the value means nothing (AMD preferred-core parts rank cores through
# highest_perf, for which drivers/cpufreq/amd-pstate.c substitutes 166 or 196).
_MEANINGLESS_PERF = 255
_KVM_TOLERANCE_MHZ = 0.1
_T = TypeVar("_T")


def first_problem(problems: list[str]) -> str:
    """One reason out of the affine CPUs' reasons, whichever CPUs those are: the first
    in sorted order (each already written with ``any_cpu``)."""
    return min(problems) if problems else "no affine CPUs known"


def _over_cpus(
    read: Callable[[str, int], _T | str], root: str, cpus: tuple[int, ...]
) -> tuple[list[_T], list[str]]:
    """What ``read`` finds for each of ``cpus``, and the reasons where it finds nothing
    (each written with ``any_cpu``)."""
    values: list[_T] = []
    problems: list[str] = []
    for cpu in cpus:
        found = read(root, cpu)
        if isinstance(found, str):
            problems.append(any_cpu(found, cpu))
        else:
            values.append(found)
    return values, problems


def _cpufreq_read(root: str, cpu: int) -> tuple[int, int] | str:
    base = f"{_CPU_DIR}/cpu{cpu}/cpufreq"
    found = read_ints_or_reason(root, f"{base}/cpuinfo_max_freq", f"{base}/cpuinfo_min_freq")
    if isinstance(found, str):
        return found
    high, low = found
    if not 0 < low <= high:
        return f"{base}/cpuinfo_min_freq {low} and cpuinfo_max_freq {high} are not a range"
    return low, high


def cpufreq_range(root: str, cpus: tuple[int, ...]) -> tuple[float | None, float | None, str]:
    """Min and max of ``cpufreq/cpuinfo_{min,max}_freq`` (kHz) over ``cpus``, in MHz.

    These are the hardware limits (``Documentation/admin-guide/pm/cpufreq.rst``);
    ``scaling_*`` is only the current policy.
    """
    ranges, problems = _over_cpus(_cpufreq_read, root, cpus)
    if not ranges:
        return None, None, f"no cpufreq: {first_problem(problems)}"
    lows = [low for low, _ in ranges]
    highs = [high for _, high in ranges]
    where = f"{_CPU_DIR}/cpuN/cpufreq/cpuinfo_{{min,max}}_freq over {len(highs)} affine CPUs"
    if len(highs) < len(cpus):
        where += f" (of {len(cpus)}; the others have no cpufreq)"
    return round(min(lows) / 1000, 3), round(max(highs) / 1000, 3), where


def _cppc_read(root: str, cpu: int) -> float | str:
    base = f"{_CPU_DIR}/cpu{cpu}/acpi_cppc"
    nominal_freq = read_int(root, f"{base}/nominal_freq")
    highest = read_int(root, f"{base}/highest_perf")
    nominal = read_int(root, f"{base}/nominal_perf")
    if nominal_freq is None or highest is None or nominal is None:
        return f"no ACPI CPPC: {base}/{{nominal_freq,highest_perf,nominal_perf}} unreadable"
    problem = _cppc_problem(base, nominal_freq, highest, nominal)
    if problem is not None:
        return problem
    return nominal_freq * highest / nominal


def _cppc_problem(base: str, nominal_freq: int, highest: int, nominal: int) -> str | None:
    """Why the CPPC values read under ``base`` give no estimate, or None when they do."""
    if nominal_freq <= 0:
        return f"{base}/nominal_freq is {nominal_freq}, which means missing"
    if highest <= 0 or nominal <= 0:
        return f"{base} perf values are 0 (highest_perf {highest}, nominal_perf {nominal})"
    if highest == _MEANINGLESS_PERF:
        return f"{base}/highest_perf is 255, a meaningless firmware value"
    if highest < nominal:
        return f"{base}/highest_perf {highest} is below nominal_perf {nominal}"
    return None


def cppc_max_mhz(root: str, cpus: tuple[int, ...]) -> tuple[float | None, str]:
    """The CPPC estimate of the highest clock over ``cpus``: nominal_freq * highest/nominal.

    ``acpi_cppc/nominal_freq`` is MHz, the perf values are unitless
    (``Documentation/ABI/testing/sysfs-devices-system-cpu``); e.g. 3200 * 166 / 119
    = 4464 MHz. On AMD preferred-core parts ``highest_perf`` ranks cores, so the
    maximum over the affine CPUs is the best core's. Rounded to whole MHz: an estimate.
    """
    values, problems = _over_cpus(_cppc_read, root, cpus)
    if not values:
        return None, first_problem(problems)
    best = max(values)
    where = (
        f"{_CPU_DIR}/cpuN/acpi_cppc nominal_freq * highest_perf / nominal_perf "
        "over the affine CPUs"
    )
    return float(round(best)), where


def kvm_cpuinfo_mhz(
    root: str, blocks: list[dict[str, str]] | str | None = None
) -> tuple[float | None, str]:
    """The KVM guest's ``cpu MHz``, when the KVM rule admits it, else None and why not.

    Admitted only when every visible vCPU lists both ``hypervisor`` and
    ``tsc_known_freq`` (the TSC rate was declared by the hypervisor, not
    calibrated; arch/x86/kernel/tsc.c) and all readings agree within 0.1 MHz:
    then ``cpu MHz`` is the fixed ``cpu_khz``, printed identically on every vCPU.
    ``blocks`` is ``cpuinfo_blocks(root)`` when the caller already has it.
    """
    if blocks is None:
        blocks = cpuinfo_blocks(root)
    if isinstance(blocks, str):
        return None, blocks
    if not blocks:
        return None, "/proc/cpuinfo lists no processor"
    readings = _declared_readings(blocks)
    if isinstance(readings, str):
        return None, readings
    return _agreed(readings)


def _declared_readings(blocks: list[dict[str, str]]) -> list[float] | str:
    """Every vCPU's declared ``cpu MHz``, or why the first one that has none has none."""
    readings: list[float] = []
    for block in blocks:
        reading = _declared_mhz(block)
        if isinstance(reading, str):
            return reading
        readings.append(reading)
    return readings


def _agreed(readings: list[float]) -> tuple[float | None, str]:
    """The vCPUs' one ``cpu MHz`` where all ``readings`` agree, else None and why not."""
    spread = max(readings) - min(readings)
    if spread > _KVM_TOLERANCE_MHZ + 1e-9:
        return None, (
            f"/proc/cpuinfo cpu MHz readings differ by {spread:.3f} MHz "
            f"(more than {_KVM_TOLERANCE_MHZ} MHz): they are not a fixed rate"
        )
    value = round(sum(readings) / len(readings), 3)
    return value, (
        f"/proc/cpuinfo cpu MHz, identical within {_KVM_TOLERANCE_MHZ} MHz on all "
        f"{len(readings)} vCPUs, each with hypervisor and tsc_known_freq"
    )


def _declared_mhz(block: dict[str, str]) -> float | str:
    """A vCPU's ``cpu MHz`` where its flags say the hypervisor declared the TSC rate,
    else why not."""
    cpu = block.get("processor", "?")
    flags = block.get("flags", "").split()
    if "hypervisor" not in flags:
        return f"/proc/cpuinfo processor {cpu} lacks the hypervisor flag: not a guest"
    if "tsc_known_freq" not in flags:
        return (
            f"/proc/cpuinfo processor {cpu} lacks tsc_known_freq: "
            "its cpu MHz is a measurement, not a declared rate"
        )
    try:
        return float(block["cpu MHz"])
    except (KeyError, ValueError):
        return f"/proc/cpuinfo processor {cpu} has no cpu MHz reading"


def probe_clock(
    root: str, cpus: tuple[int, ...], blocks: list[dict[str, str]] | str | None = None
) -> tuple[float | None, float | None, str | None, dict[str, str]]:
    """``(min MHz, max MHz, clock_source, sources)`` for the affine ``cpus``.

    Order (docs/hardware.md, ``cpu``): cpufreq, extended by CPPC where that gives a higher
    maximum; with no clock interface at all, the KVM ``cpu MHz`` rule; else None.
    CPPC without cpufreq yields None: CPPC counts only as an extension of a
    cpufreq range, and it gives no minimum the kernel vouches for; its estimate is
    kept in the reason so a person still sees it. ``blocks`` is
    ``cpuinfo_blocks(root)`` when the caller already has it.
    """
    low, high, freq_where = cpufreq_range(root, cpus)
    cppc, cppc_where = cppc_max_mhz(root, cpus)
    if high is not None:
        return _cpufreq_clock(low, high, freq_where, cppc, cppc_where)
    if cppc is not None:
        reason = (
            f"{freq_where}; ACPI CPPC alone suggests up to {cppc:g} MHz ({cppc_where}), "
            "but without cpufreq it is not used"
        )
        return None, None, None, _sources(reason, reason, reason)
    mhz, kvm_where = kvm_cpuinfo_mhz(root, blocks)
    if mhz is not None:
        return mhz, mhz, "kvm_cpuinfo", _sources(kvm_where, kvm_where, kvm_where)
    reason = f"{freq_where}; {cppc_where}; {kvm_where}"
    return None, None, None, _sources(reason, reason, reason)


def _cpufreq_clock(
    low: float | None, high: float, freq_where: str, cppc: float | None, cppc_where: str
) -> tuple[float | None, float | None, str | None, dict[str, str]]:
    """``probe_clock``'s answer where cpufreq gives a range: its maximum extended by the
    CPPC estimate where that is higher."""
    if cppc is not None and cppc > high:
        where = f"{freq_where}; max extended by {cppc_where}"
        return low, cppc, "cpufreq+cppc", _sources(freq_where, where, where)
    if cppc is not None:
        freq_where_max = f"{freq_where} (CPPC estimate {cppc:g} MHz is not higher)"
    else:
        freq_where_max = f"{freq_where} ({cppc_where})"
    return low, high, "cpufreq", _sources(freq_where, freq_where_max, freq_where)


def _sources(low: str, high: str, source: str) -> dict[str, str]:
    return {"cpu.clock_min_mhz": low, "cpu.clock_max_mhz": high, "cpu.clock_source": source}
