"""The GPU probe through a fake NVML mirroring pynvml: figures, errors, CUDA_VISIBLE_DEVICES."""

from __future__ import annotations

import sys

import pytest
from helpers import fake_hardware as hw_fixtures
from helpers.fake_hardware import FakeGpu, FakeNvml, a100, h100, h200_observed, l4

from stagetimer.hardware._gpu import peak_bandwidth, probe_gpus, select_visible


def three_gpus() -> FakeNvml:
    return FakeNvml([a100(), h100(), l4()])


@pytest.mark.parametrize(
    ("gpu", "gb_per_s"),
    [(a100(), 1555.2), (h100(), 3352.3), (l4(), 300.0), (h200_observed(), 4814.3)],
    ids=["A100-40GB", "H100-SXM", "L4", "H200-observed"],
)
def test_peak_bandwidth_matches_the_datasheet_figures(gpu: FakeGpu, gb_per_s: float) -> None:
    gpus, reason, _ = probe_gpus({}, FakeNvml([gpu]))

    assert reason is None
    bandwidth = gpus[0].peak_memory_bandwidth_bytes_per_s
    assert bandwidth is not None
    assert gb_per_s == round(bandwidth / 1e9, 1)


def test_gpu_fields_come_from_nvml() -> None:
    gpus, _, sources = probe_gpus({}, FakeNvml([a100()]))

    gpu = gpus[0]
    assert (
        gpu.index, gpu.name, gpu.uuid, gpu.memory_usable_bytes, gpu.memory_bus_width_bits,
        gpu.max_memory_clock_mhz, gpu.peak_memory_bandwidth_bytes_per_s,
    ) == (
        0, "NVIDIA A100-SXM4-40GB", "GPU-5fa8b3c2-1d4e-4f6a-9b7c-0123456789ab", 42949672960,
        5120, 1215, 1555200000000,
    )
    assert sources["gpus[0].max_memory_clock_mhz"] == "nvmlDeviceGetMaxClockInfo(NVML_CLOCK_MEM)"


def test_nvml_initialised_once_and_shut_down() -> None:
    nvml = three_gpus()

    probe_gpus({}, nvml)

    assert (nvml.init_calls, nvml.shutdown_calls, nvml.initialised) == (1, 1, False)


@pytest.mark.parametrize(
    ("code", "name"),
    [
        (hw_fixtures.NVML_ERROR_LIBRARY_NOT_FOUND, "NVMLError_LibraryNotFound"),
        (hw_fixtures.NVML_ERROR_DRIVER_NOT_LOADED, "NVMLError_DriverNotLoaded"),
        (hw_fixtures.NVML_ERROR_NO_PERMISSION, "NVMLError_NoPermission"),
    ],
)
def test_nvml_init_failure_gives_no_gpus_and_a_reason(code: int, name: str) -> None:
    nvml = FakeNvml([a100()], init_error=code)

    gpus, reason, sources = probe_gpus({}, nvml)

    assert gpus == ()
    assert reason is not None and name in reason
    assert (reason, 0) == (sources["gpus"], nvml.shutdown_calls)


def test_memory_clock_not_supported_leaves_clock_and_bandwidth_missing() -> None:
    # Unified-memory parts: the memory clock is NotSupported and the bus width reads 0.
    not_supported = hw_fixtures.NVML_ERROR_NOT_SUPPORTED
    gpu = FakeGpu("NVIDIA GH200", "GPU-0a", 1, 0, 0, clock_error=not_supported)

    gpus, _, sources = probe_gpus({}, FakeNvml([gpu]))

    assert (
        gpus[0].max_memory_clock_mhz,
        gpus[0].memory_bus_width_bits,
        gpus[0].peak_memory_bandwidth_bytes_per_s,
    ) == (None, None, None)
    assert "NVMLError_NotSupported" in sources["gpus[0].max_memory_clock_mhz"]


def test_bus_width_function_not_found_on_old_driver() -> None:
    # Driver 470 lacks nvmlDeviceGetMemoryBusWidth.
    gpu = FakeGpu("Tesla T4", "GPU-77", 15843721216, 256, 5001,
                  bus_error=hw_fixtures.NVML_ERROR_FUNCTION_NOT_FOUND)

    gpus, _, sources = probe_gpus({}, FakeNvml([gpu]))

    assert (
        gpus[0].memory_bus_width_bits,
        gpus[0].max_memory_clock_mhz,
        gpus[0].peak_memory_bandwidth_bytes_per_s,
    ) == (None, 5001, None)
    assert "NVMLError_FunctionNotFound" in sources["gpus[0].memory_bus_width_bits"]


def test_bus_width_zero_is_missing() -> None:
    gpus, _, _ = probe_gpus({}, FakeNvml([FakeGpu("X", "GPU-1", 1024, 0, 1000)]))

    assert (
        gpus[0].memory_bus_width_bits, gpus[0].peak_memory_bandwidth_bytes_per_s
    ) == (None, None)


@pytest.mark.parametrize(
    ("visible", "indices"),
    [
        (None, [0, 1, 2]),
        ("1", [1]),
        ("2,0", [2, 0]),
        ("0,2,-1,1", [0, 2]),
        (" 1 , 2 ", [1, 2]),
        ("00", [0]),
        ("+1", [1]),
        ("0x0", [0]),
        ("GPU-9c1d2e3f-4a5b-6c7d-8e9f-abcdef012345", [1]),
        ("GPU-9C1D2E3F-4A5B-6C7D-8E9F-ABCDEF012345", [1]),
        ("GPU-9c1d", [1]),
        ("9c1d2e3f-4a5b-6c7d-8e9f-abcdef012345", []),
        ("GPU-", []),
        ("GPU-5f", []),
        ("GPU-5fa8,GPU-5f00", [0, 2]),
        ("GPU-ffff,0", []),
        ("7,0", []),
        ("0,GPU-5fa8,1", [0]),
        ("0,0,1", []),
        ("1,2,01", []),
        ("abc,0", []),
        ("0,abc,1", [0]),
    ],
)
def test_cuda_visible_devices_selects_and_orders(visible: str | None, indices: list[int]) -> None:
    # Each form checked against cuInit + cuDeviceGetCount on a real H200 (driver 580).
    uuids: list[str | None] = [a100().uuid, h100().uuid, l4().uuid]

    chosen, _ = select_visible(visible, uuids)

    assert [i for i, _ in chosen] == indices


def test_repeated_ordinal_makes_cuda_see_no_gpu() -> None:
    # Observed: CUDA_VISIBLE_DEVICES=0,0 makes cuInit fail with CUDA_ERROR_INVALID_DEVICE.
    gpus, reason, _ = probe_gpus({"CUDA_VISIBLE_DEVICES": "0,0"}, three_gpus())

    assert gpus == ()
    assert reason is not None and "repeats ordinal 0" in reason


@pytest.mark.parametrize(
    ("migs", "indices", "note"),
    [
        (("MIG-4b1c5a9e-0d2f-5a3e-9c1b-2d3e4f5a6b7c",), [2], "skipped"),
        ((), [], "is invalid and ends the list"),
    ],
    ids=["existing-mig-skipped", "unknown-mig-ends-list"],
)
def test_mig_entry_is_checked_with_nvml(
    migs: tuple[str, ...], indices: list[int], note: str
) -> None:
    nvml = FakeNvml([a100(), h100(), l4()], migs=migs)
    environ = {"CUDA_VISIBLE_DEVICES": "MIG-4b1c5a9e-0d2f-5a3e-9c1b-2d3e4f5a6b7c,2"}

    gpus, reason, sources = probe_gpus(environ, nvml)

    assert [g.index for g in gpus] == indices
    assert note in (sources.get("gpus") or reason or "")


@pytest.mark.parametrize(
    ("parent", "indices"),
    [("GPU-5fa8b3c2-1d4e-4f6a-9b7c-0123456789ab", [1]), ("GPU-ffffffff-0000", [])],
    ids=["parent-gpu-present", "parent-gpu-unknown"],
)
def test_legacy_mig_form_is_checked_by_its_parent_gpu(parent: str, indices: list[int]) -> None:
    gpus, _, _ = probe_gpus({"CUDA_VISIBLE_DEVICES": f"MIG-{parent}/1/0,1"}, three_gpus())

    assert [g.index for g in gpus] == indices


def test_cuda_visible_devices_order_is_kept_in_the_description() -> None:
    gpus, _, _ = probe_gpus({"CUDA_VISIBLE_DEVICES": "2,0"}, three_gpus())

    assert [(g.index, g.name) for g in gpus] == [(2, "NVIDIA L4"), (0, "NVIDIA A100-SXM4-40GB")]


def test_empty_cuda_visible_devices_means_no_gpu_without_touching_nvml() -> None:
    nvml = three_gpus()

    gpus, reason, _ = probe_gpus({"CUDA_VISIBLE_DEVICES": ""}, nvml)

    assert (gpus, nvml.init_calls) == ((), 0)
    assert reason is not None and "empty" in reason


def test_first_entry_invalid_gives_no_gpu_and_says_which() -> None:
    nvml = three_gpus()

    gpus, reason, _ = probe_gpus({"CUDA_VISIBLE_DEVICES": "-1"}, nvml)

    assert gpus == ()
    assert reason is not None and "'-1' is invalid" in reason
    assert nvml.shutdown_calls == 1


def test_ordinals_on_mixed_gpus_warn_about_cuda_order() -> None:
    _, _, sources = probe_gpus({"CUDA_VISIBLE_DEVICES": "0,2"}, three_gpus())

    assert "FASTEST_FIRST" in sources["gpus"]


def test_no_gpu_reported_by_nvml() -> None:
    gpus, reason, _ = probe_gpus({}, FakeNvml([]))

    assert (gpus, reason) == ((), "NVML reports no GPU")


def test_missing_pynvml_module_gives_a_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes `import pynvml` raise ImportError

    gpus, reason, _ = probe_gpus({})

    assert (gpus, reason) == ((), "pynvml (nvidia-ml-py) is not installed")


def test_real_pynvml_never_raises_and_explains_an_empty_list() -> None:
    pynvml = pytest.importorskip("pynvml")

    gpus, reason, _ = probe_gpus({}, pynvml)

    assert (reason is None) == bool(gpus)
    assert all(g.uuid for g in gpus)


def test_fake_nvml_mirrors_pynvml_names_and_codes() -> None:
    pynvml = pytest.importorskip("pynvml")
    fake = three_gpus()

    for name, code in hw_fixtures.ERROR_CODES.items():
        real_cls = pynvml.NVMLError(getattr(pynvml, name)).__class__
        fake_cls = fake.NVMLError(code).__class__
        assert (getattr(pynvml, name), real_cls.__name__) == (code, fake_cls.__name__)
        assert fake_cls is getattr(fake, real_cls.__name__)
        assert code == fake_cls().value
    assert pynvml.NVML_CLOCK_MEM == fake.NVML_CLOCK_MEM


@pytest.mark.parametrize(("clock", "bits"), [(None, 5120), (1215, None), (0, 5120), (1215, 0)])
def test_bandwidth_needs_both_clock_and_width(clock: int | None, bits: int | None) -> None:
    assert peak_bandwidth(clock, bits) is None
