"""The clock probe: cpufreq, the CPPC extension, the KVM /proc/cpuinfo rule."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.fake_hardware import FakeRoot, cpuinfo_block

from stagetimer.hardware._clock import probe_clock


@pytest.fixture
def fake(tmp_path: Path) -> FakeRoot:
    return FakeRoot(tmp_path)


def test_cpufreq_range_over_affine_cpus_in_mhz(fake: FakeRoot) -> None:
    fake.cpufreq(0, 400000, 3500000)
    fake.cpufreq(1, 800000, 3400000)
    fake.cpufreq(2, 400000, 5000000)  # not affine: its higher clock is out of reach

    low, high, source, sources = probe_clock(fake.root, (0, 1))

    assert (low, high, source) == (400.0, 3500.0, "cpufreq")
    assert "cpuinfo_{min,max}_freq" in sources["cpu.clock_max_mhz"]


def test_cppc_extends_cpufreq_maximum(fake: FakeRoot) -> None:
    # 3200 MHz * 166 / 119 = 4464 MHz, matching a reported 4.46 GHz boost.
    for cpu in (0, 1):
        fake.cpufreq(cpu, 400000, 3200000)
        fake.cppc(cpu, nominal_freq=3200, highest=166, nominal=119)

    low, high, source, sources = probe_clock(fake.root, (0, 1))

    assert (low, high, source) == (400.0, 4464.0, "cpufreq+cppc")
    assert "acpi_cppc" in sources["cpu.clock_max_mhz"]


def test_cppc_maximum_is_the_best_affine_core(fake: FakeRoot) -> None:
    # AMD preferred cores: the kernel substitutes 196 on the best cores, 166 on the others.
    fake.cpufreq(0, 400000, 3200000)
    fake.cpufreq(1, 400000, 3200000)
    fake.cppc(0, nominal_freq=3200, highest=166, nominal=119)
    fake.cppc(1, nominal_freq=3200, highest=196, nominal=119)

    assert probe_clock(fake.root, (0, 1))[1] == 5271.0
    assert probe_clock(fake.root, (0,))[1] == 4464.0


@pytest.mark.parametrize(
    ("nominal_freq", "highest", "nominal", "why"),
    [
        (0, 166, 119, "nominal_freq is 0"),
        (3200, 255, 119, "255"),
        (3200, 100, 119, "below nominal_perf"),
        (3200, 0, 0, "perf values are 0"),
    ],
)
def test_cppc_nonsense_values_leave_cpufreq_maximum(
    fake: FakeRoot, nominal_freq: int, highest: int, nominal: int, why: str
) -> None:
    fake.cpufreq(0, 400000, 3200000)
    fake.cppc(0, nominal_freq=nominal_freq, highest=highest, nominal=nominal)

    _, high, source, sources = probe_clock(fake.root, (0,))

    assert (high, source) == (3200.0, "cpufreq")
    assert why in sources["cpu.clock_max_mhz"]


def test_cppc_alone_without_cpufreq_gives_no_clock_but_says_why(fake: FakeRoot) -> None:
    fake.cppc(0, nominal_freq=3200, highest=166, nominal=119)
    fake.cpuinfo([cpuinfo_block(0)])

    low, high, source, sources = probe_clock(fake.root, (0,))

    assert (low, high, source) == (None, None, None)
    assert "4464 MHz" in sources["cpu.clock_max_mhz"]


def test_kvm_cpuinfo_accepted_when_every_vcpu_declares_its_tsc(fake: FakeRoot) -> None:
    # Observed: 2596.144 on both vCPUs, no cpufreq, no CPPC.
    fake.cpuinfo(cpuinfo_block(i, mhz="2596.144") for i in range(2))

    low, high, source, _ = probe_clock(fake.root, (0, 1))

    assert (low, high, source) == (2596.144, 2596.144, "kvm_cpuinfo")


@pytest.mark.parametrize(
    ("blocks", "why"),
    [
        ([cpuinfo_block(0), cpuinfo_block(1, tsc_known_freq=False)], "lacks tsc_known_freq"),
        ([cpuinfo_block(0, mhz="2596.144"), cpuinfo_block(1, mhz="2596.504")], "differ by 0.360"),
        ([cpuinfo_block(i, hypervisor=False) for i in range(2)], "lacks the hypervisor flag"),
    ],
    ids=["vcpu-without-tsc_known_freq", "readings-0.36-MHz-apart", "no-hypervisor"],
)
def test_kvm_cpuinfo_refused(fake: FakeRoot, blocks: list[str], why: str) -> None:
    fake.cpuinfo(blocks)

    low, high, source, sources = probe_clock(fake.root, (0, 1))

    assert (low, high, source) == (None, None, None)
    assert why in sources["cpu.clock_source"]


def test_kvm_rule_checks_every_visible_vcpu_not_only_affine_ones(fake: FakeRoot) -> None:
    fake.cpuinfo([cpuinfo_block(0), cpuinfo_block(1, tsc_known_freq=False)])

    assert probe_clock(fake.root, (0,))[2] is None


def test_kvm_readings_within_tolerance_are_accepted(fake: FakeRoot) -> None:
    fake.cpuinfo([cpuinfo_block(0, mhz="2596.100"), cpuinfo_block(1, mhz="2596.200")])

    assert probe_clock(fake.root, (0, 1))[2] == "kvm_cpuinfo"


def test_cpufreq_wins_over_kvm_cpuinfo(fake: FakeRoot) -> None:
    fake.cpufreq(0, 1500000, 2600000)
    fake.cpuinfo([cpuinfo_block(0)])

    assert probe_clock(fake.root, (0,))[:3] == (1500.0, 2600.0, "cpufreq")


def test_no_clock_interface_at_all(fake: FakeRoot) -> None:
    low, high, source, sources = probe_clock(fake.root, (0,))

    assert (low, high, source) == (None, None, None)
    assert "/proc/cpuinfo does not exist" in sources["cpu.clock_source"]
