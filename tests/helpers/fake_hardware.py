"""Builders for fake ``/proc`` + ``/sys`` roots and a fake NVML, for the hardware tests.

File contents are copied from real machines (noted beside each constant) so the
parsers meet what the kernel and the driver really print.
"""

from __future__ import annotations

import string
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "CGROUP_HYBRID",
    "MEMINFO",
    "MOUNTINFO_HYBRID",
    "MOUNTINFO_V2",
    "FakeGpu",
    "FakeNvml",
    "FakeRoot",
    "cpuinfo_block",
]

GIB = 1024**3

# /proc/self/mountinfo of the project's CI guest (Debian 12, kernel 6.18): v1
# hierarchies beside a cgroup2 mount that holds only hugetlb.
MOUNTINFO_HYBRID = """\
22 27 0:21 / /proc rw,relatime - proc proc rw
23 27 0:22 / /sys rw,relatime - sysfs sysfs rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
36 31 0:33 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""

# /proc/self/cgroup of the same guest; {memory} is the memory cgroup path.
CGROUP_HYBRID = """\
9:name=systemd:/
8:pids:/
5:devices:/
4:memory:{memory}
3:cpuset:/
2:cpuacct:/
1:cpu:{cpu}
0::/
"""

# A Debian 12 host with systemd on the unified hierarchy.
MOUNTINFO_V2 = """\
22 28 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
23 28 0:22 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
26 22 0:24 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 \
rw,nsdelegate,memory_recursiveprot
28 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw,errors=remount-ro
"""

MEMINFO = """\
MemTotal:       24683656 kB
MemFree:        24000820 kB
MemAvailable:   24333604 kB
Buffers:           15732 kB
Cached:           495784 kB
"""

# The flags of the CI guest's vCPUs (AMD EPYC under KVM), without the two that matter.
_KVM_FLAGS = (
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx "
    "fxsr sse sse2 ht syscall nx mmxext fxsr_opt pdpe1gb rdtscp lm constant_tsc rep_good "
    "nopl xtopology nonstop_tsc cpuid extd_apicid pni pclmulqdq ssse3 fma cx16 pcid sse4_1 "
    "sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand lahf_lm "
    "cmp_legacy cr8_legacy abm sse4a misalignsse 3dnowprefetch osvw topoext ssbd ibrs ibpb "
    "stibp vmmcall fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid rdseed adx smap "
    "clflushopt clwb sha_ni xsaveopt xsavec xgetbv1 xsaves clzero xsaveerptr wbnoinvd arat "
    "umip pku ospke vaes vpclmulqdq rdpid fsrm"
)


def cpuinfo_block(
    processor: int,
    *,
    mhz: str = "2596.144",
    model: str = "AMD EPYC",
    hypervisor: bool = True,
    tsc_known_freq: bool = True,
    cores: int = 2,
) -> str:
    """One ``/proc/cpuinfo`` processor block, as the CI guest's kernel prints it."""
    flags = _KVM_FLAGS
    if tsc_known_freq:
        flags = flags.replace("extd_apicid", "extd_apicid tsc_known_freq")
    if hypervisor:
        flags = flags.replace("rdrand", "rdrand hypervisor")
    return (
        f"processor\t: {processor}\n"
        "vendor_id\t: AuthenticAMD\n"
        "cpu family\t: 25\n"
        "model\t\t: 1\n"
        f"model name\t: {model}\n"
        "stepping\t: 1\n"
        "microcode\t: 0x1000065\n"
        f"cpu MHz\t\t: {mhz}\n"
        "cache size\t: 512 KB\n"
        "physical id\t: 0\n"
        f"siblings\t: {cores}\n"
        f"core id\t\t: {processor}\n"
        f"cpu cores\t: {cores}\n"
        f"flags\t\t: {flags}\n"
        "bogomips\t: 4890.80\n"
        "power management:\n"
        "\n"
    )


class FakeRoot:
    """A directory standing in for ``/``: write ``/proc`` and ``/sys`` files into it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.root = str(path)

    def write(self, path: str, text: str) -> Path:
        """Write ``text`` at system path ``path`` (``/proc/self/cgroup``) under the root."""
        target = self.path / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        return target

    def files(self, directory: str, contents: Mapping[str, object]) -> None:
        """Write several files of one directory: ``{"memory.max": "max\\n"}``."""
        for name, value in contents.items():
            self.write(f"{directory}/{name}", f"{value}\n")

    def cgroups(self, cgroup: str, mountinfo: str) -> None:
        """``/proc/self/cgroup`` and ``/proc/self/mountinfo``."""
        self.write("/proc/self/cgroup", cgroup)
        self.write("/proc/self/mountinfo", mountinfo)

    def hybrid(self, memory: str = "/", cpu: str = "/", v2_controllers: str = "hugetlb") -> None:
        """The CI guest's layout: memory and cpu on v1, a cgroup2 mount beside them."""
        self.cgroups(CGROUP_HYBRID.format(memory=memory, cpu=cpu), MOUNTINFO_HYBRID)
        self.write("/sys/fs/cgroup/unified/cgroup.controllers", v2_controllers + "\n")

    def v2(self, path: str, controllers: str = "cpuset cpu io memory hugetlb pids") -> None:
        """A pure cgroup v2 host with the process in ``path``."""
        self.cgroups(f"0::{path}\n", MOUNTINFO_V2)
        self.write("/sys/fs/cgroup/cgroup.controllers", controllers + "\n")

    def status(self, cpus_allowed_list: str) -> None:
        """``/proc/self/status`` with the given ``Cpus_allowed_list``."""
        self.write(
            "/proc/self/status",
            "Name:\tpython3\nUmask:\t0022\nState:\tR (running)\nTgid:\t7454\n"
            f"Cpus_allowed:\t3\nCpus_allowed_list:\t{cpus_allowed_list}\n"
            "Mems_allowed_list:\t0\n",
        )

    def meminfo(self, text: str = MEMINFO) -> None:
        self.write("/proc/meminfo", text)

    def cpuinfo(self, blocks: Iterable[str]) -> None:
        self.write("/proc/cpuinfo", "".join(blocks))

    def topology(
        self,
        cpu: int,
        *,
        core_cpus_list: str | None = None,
        thread_siblings_list: str | None = None,
        package: int = 0,
        die: int | None = 0,
        core: int | None = None,
    ) -> None:
        """``/sys/devices/system/cpu/cpuN/topology`` of one CPU."""
        base = f"/sys/devices/system/cpu/cpu{cpu}/topology"
        contents: dict[str, object] = {"physical_package_id": package}
        if core is not None:
            contents["core_id"] = core
        if die is not None:
            contents["die_id"] = die
        if core_cpus_list is not None:
            contents["core_cpus_list"] = core_cpus_list
        if thread_siblings_list is not None:
            contents["thread_siblings_list"] = thread_siblings_list
        self.files(base, contents)

    def cpufreq(self, cpu: int, min_khz: int, max_khz: int) -> None:
        self.files(
            f"/sys/devices/system/cpu/cpu{cpu}/cpufreq",
            {"cpuinfo_min_freq": min_khz, "cpuinfo_max_freq": max_khz, "scaling_cur_freq": 1234567},
        )

    def cppc(self, cpu: int, *, nominal_freq: int, highest: int, nominal: int) -> None:
        self.files(
            f"/sys/devices/system/cpu/cpu{cpu}/acpi_cppc",
            {
                "nominal_freq": nominal_freq,
                "highest_perf": highest,
                "nominal_perf": nominal,
                "lowest_perf": 18,
                "lowest_freq": 400,
            },
        )


# ---------------------------------------------------------------------------
# A fake NVML mirroring pynvml.py (nvidia-ml-py 12.x): the same constant names and
# values, and errors built the way pynvml builds them: NVMLError(value) maps to
# a subclass named NVMLError_<CamelCase> created at import time, carrying .value.

NVML_SUCCESS = 0
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_UNKNOWN = 999
NVML_CLOCK_GRAPHICS = 0
NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2

ERROR_CODES = {
    name: value for name, value in dict(globals()).items() if name.startswith("NVML_ERROR_")
}


class NVMLError(Exception):
    """As pynvml.NVMLError: ``NVMLError(3)`` is an ``NVMLError_NotSupported`` with ``.value`` 3."""

    _valClassMapping: dict[int, type[NVMLError]] = {}  # noqa: RUF012 - pynvml's own name
    value: int

    def __new__(cls, value: int) -> NVMLError:
        if cls is NVMLError:
            cls = NVMLError._valClassMapping.get(value, cls)
        obj = Exception.__new__(cls)
        obj.value = value
        return obj

    def __str__(self) -> str:
        return f"NVML Error with code {self.value}"


def _error_class(err_name: str, value: int) -> type[NVMLError]:
    # pynvml: "NVMLError_" + string.capwords(name minus prefix, "_").replace("_", "")
    class_name = "NVMLError_" + string.capwords(
        err_name.replace("NVML_ERROR_", ""), "_"
    ).replace("_", "")

    def new(cls: type[NVMLError], *args: Any) -> NVMLError:
        return NVMLError.__new__(cls, value)

    cls = type(class_name, (NVMLError,), {"__new__": new})
    NVMLError._valClassMapping[value] = cls
    return cls


ERROR_CLASSES = {name: _error_class(name, value) for name, value in ERROR_CODES.items()}


class FakeGpu:
    """One device: each NVML query answers a value or, given an ``NVML_ERROR_*`` code, raises."""

    def __init__(
        self,
        name: str,
        uuid: str,
        total: int,
        bus_bits: int,
        mem_clock_mhz: int,
        *,
        bus_error: int | None = None,
        clock_error: int | None = None,
        watts: float | None = 100.0,
        energy_error: int | None = None,
    ) -> None:
        self.name = name
        self.uuid = uuid
        self.total = total
        self.bus_bits = bus_bits
        self.mem_clock_mhz = mem_clock_mhz
        self.bus_error = bus_error
        self.clock_error = clock_error
        # The energy counter: millijoules since the driver loaded, growing at ``watts``
        # (monotonic, as NVML's). ``watts=0`` is a pre-Volta part that reports 0 for
        # ever (codecarbon#1316); ``energy_error`` (NVML_ERROR_NOT_SUPPORTED) one that raises.
        self.watts = watts
        self.energy_error = energy_error
        self.loaded_at = time.monotonic()
        self.energy_base_mj = 0 if not watts else 123_456_789


# NVML's own figures for real parts (as nvidia-smi and NVML report them).
def a100(uuid: str = "GPU-5fa8b3c2-1d4e-4f6a-9b7c-0123456789ab") -> FakeGpu:
    return FakeGpu("NVIDIA A100-SXM4-40GB", uuid, 42949672960, 5120, 1215)


def h100(uuid: str = "GPU-9c1d2e3f-4a5b-6c7d-8e9f-abcdef012345", **energy: Any) -> FakeGpu:
    """``energy``: ``watts`` and/or ``energy_error`` of the energy counter."""
    return FakeGpu("NVIDIA H100 80GB HBM3", uuid, 85520809984, 5120, 2619, **energy)


def l4(uuid: str = "GPU-5f00aa11-2233-4455-6677-8899aabbccdd") -> FakeGpu:
    return FakeGpu("NVIDIA L4", uuid, 24152899584, 192, 6251)


def h200_observed(uuid: str = "GPU-284e0db6-4cb2-74fb-6a6a-fe9d7a696fe0") -> FakeGpu:
    # Read from a real H200 (driver 580.159.04): NVML reports a 6016-bit bus, not the
    # 6144 of the notes' table, giving 4814.3 GB/s against the published 4.8 TB/s.
    return FakeGpu("NVIDIA H200", uuid, 150754820096, 6016, 3201)


class _Memory:
    """As pynvml.c_nvmlMemory_t: total, free, used."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.free = total // 2
        self.used = total - self.free


class FakeNvml:
    """Stands in for the ``pynvml`` module; counts nvmlInit/nvmlShutdown calls."""

    NVMLError = NVMLError
    NVML_CLOCK_GRAPHICS = NVML_CLOCK_GRAPHICS
    NVML_CLOCK_SM = NVML_CLOCK_SM
    NVML_CLOCK_MEM = NVML_CLOCK_MEM

    def __init__(
        self, gpus: list[FakeGpu], *, init_error: int | None = None, migs: tuple[str, ...] = ()
    ) -> None:
        self.gpus = gpus
        self.migs = migs
        self.init_error = init_error
        self.init_calls = 0
        self.shutdown_calls = 0
        self.initialised = False
        for name, cls in ERROR_CLASSES.items():
            setattr(self, cls.__name__, cls)
            setattr(self, name, ERROR_CODES[name])

    def _check(self) -> None:
        if not self.initialised:
            raise NVMLError(NVML_ERROR_UNINITIALIZED)

    def _gpu(self, handle: Any) -> FakeGpu:
        self._check()
        if not isinstance(handle, FakeGpu):
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return handle

    def nvmlInit(self) -> None:
        self.init_calls += 1
        if self.init_error is not None:
            raise NVMLError(self.init_error)
        self.initialised = True

    def nvmlShutdown(self) -> None:
        self._check()
        self.shutdown_calls += 1
        self.initialised = False

    def nvmlDeviceGetCount(self) -> int:
        self._check()
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeGpu:
        self._check()
        if not 0 <= index < len(self.gpus):
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return self.gpus[index]

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> object:
        """GPU- and MIG- UUIDs, exact (any case); unknown ones are NVML_ERROR_NOT_FOUND."""
        self._check()
        for gpu in self.gpus:
            if gpu.uuid.lower() == uuid.lower():
                return gpu
        if uuid.lower() in (m.lower() for m in self.migs):
            return ("mig", uuid)
        raise NVMLError(NVML_ERROR_NOT_FOUND)

    def nvmlDeviceGetName(self, handle: Any) -> str:
        return self._gpu(handle).name

    def nvmlDeviceGetUUID(self, handle: Any) -> str:
        return self._gpu(handle).uuid

    def nvmlDeviceGetMemoryInfo(self, handle: Any, version: int | None = None) -> _Memory:
        return _Memory(self._gpu(handle).total)

    def nvmlDeviceGetMemoryBusWidth(self, handle: Any) -> int:
        gpu = self._gpu(handle)
        if gpu.bus_error is not None:
            raise NVMLError(gpu.bus_error)
        return gpu.bus_bits

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: Any) -> int:
        """Millijoules since the driver loaded (an unsigned long long in pynvml)."""
        gpu = self._gpu(handle)
        if gpu.energy_error is not None:
            raise NVMLError(gpu.energy_error)
        if not gpu.watts:
            return 0
        elapsed = time.monotonic() - gpu.loaded_at
        return gpu.energy_base_mj + int(gpu.watts * elapsed * 1000)

    def nvmlDeviceGetMaxClockInfo(self, handle: Any, clock_type: int) -> int:
        gpu = self._gpu(handle)
        if clock_type != NVML_CLOCK_MEM:
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        if gpu.clock_error is not None:
            raise NVMLError(gpu.clock_error)
        return gpu.mem_clock_mhz
