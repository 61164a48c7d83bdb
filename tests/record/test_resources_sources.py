"""Which counters a process reads, on fixtures: cgroup v2 ``memory.peak``, NVML's energy.

This machine's memory controller is on cgroup v1, and it has no GPU: the v2 path runs
on a fixture tree (``FakeRoot``) and energy on the fake NVML, which mirrors pynvml's
names, millijoule unit, monotonic counter and ``NVMLError_NotSupported``. A live v2 test
runs where a v2 memory controller exists.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.fake_hardware import NVML_ERROR_NOT_SUPPORTED, FakeNvml, FakeRoot, h100

from stagetimer import Recorder, capture_hardware, load_timings, stage
from stagetimer._record import resources

REPO = Path(__file__).resolve().parents[2]
GROUP = "/system.slice/slurmstepd.scope/job_4711/step_0"
PEAK = f"/sys/fs/cgroup{GROUP}/memory.peak"


@pytest.fixture(autouse=True)
def _probe_again() -> Iterator[None]:
    resources.use(None)
    yield
    resources.use(None)


def v2_root(tmp_path: Path, release: str = "6.12.8-arch1") -> FakeRoot:
    fake = FakeRoot(tmp_path / "root")
    fake.v2(GROUP)
    fake.write("/proc/sys/kernel/osrelease", release + "\n")
    fake.write(PEAK, "1000\n")
    return fake


def test_cgroup_v2_peak_is_opened_reset_and_read_per_stage(tmp_path: Path) -> None:
    fake = v2_root(tmp_path)
    peak = fake.path / PEAK.lstrip("/")
    found = resources.probe(root=fake.root, environ={}, nvml=FakeNvml([]))
    assert found.peak_path == str(peak)
    resources.use(found)

    with Recorder(tmp_path / "art"):
        with stage("outer"):
            with stage("inner"):
                # Each stage wrote its reset into its own open file...
                assert peak.read_text() == "reset\n"
                peak.write_text("314572800\n")  # ...and the kernel's answer is read back
            peak.write_text("524288000\n")
        with stage("later"):
            peak.write_text("10485760\n")

    stages = load_timings(tmp_path / "art").stages
    peaks = {name: s.runs[0].resources["memory_peak_bytes"] for name, s in stages.items()}
    assert peaks == {"inner": 314572800, "outer": 524288000, "later": 10485760}


def test_a_stage_that_raises_reads_no_counter_and_closes_its_peak_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = v2_root(tmp_path)
    resources.use(resources.probe(root=fake.root, environ={}, nvml=FakeNvml([])))
    real = resources._getrusage
    reads: list[int] = []
    monkeypatch.setattr(resources, "_getrusage", lambda who: reads.append(who) or real(who))
    fds = set(os.listdir("/proc/self/fd"))

    with Recorder(tmp_path / "art"), pytest.raises(ValueError, match="boom"), stage("s"):
        entered = len(reads)
        raise ValueError("boom")

    assert (2, entered) == (entered, len(reads))  # start() read two, the exit none
    assert fds == set(os.listdir("/proc/self/fd"))  # the peak file is closed
    assert ["timings.attempts"] == os.listdir(tmp_path / "art")  # only the failed marker


@pytest.mark.parametrize(
    ("release", "why"),
    [("6.11.0", "this kernel: 6.11"), ("", "this kernel: unknown")],
)
def test_before_linux_6_12_the_peak_is_not_reset_and_vmhwm_is_used(
    tmp_path: Path, release: str, why: str
) -> None:
    fake = v2_root(tmp_path, release)
    hw = capture_hardware(root=fake.root, environ={}, nvml=FakeNvml([]))
    source = hw.sources["resources.memory_peak_bytes"]
    assert source.startswith("VmHWM") and why in source
    assert resources.probe(root=fake.root, environ={}, nvml=FakeNvml([])).peak_path is None


def test_sources_name_the_peak_file_without_the_job(tmp_path: Path) -> None:
    hw = capture_hardware(root=v2_root(tmp_path).root, environ={}, nvml=FakeNvml([]))
    source = hw.sources["resources.memory_peak_bytes"]
    assert "job_N/step_*/memory.peak" in source and "4711" not in source


def test_cgroup_v1_says_its_shared_counter_is_never_written(tmp_path: Path) -> None:
    fake = FakeRoot(tmp_path)
    fake.hybrid(memory="/process_api/60b2")
    hw = capture_hardware(root=fake.root, environ={}, nvml=FakeNvml([]))
    assert "memory.max_usage_in_bytes" in hw.sources["resources.memory_peak_bytes"]
    assert "never written" in hw.sources["resources.memory_peak_bytes"]


@pytest.mark.skipif(
    resources.probe().peak_path is None,
    reason="no cgroup v2 memory controller with a resettable memory.peak (Linux 6.12+) here",
)
def test_live_cgroup_v2_peaks_per_stage(tmp_path: Path) -> None:
    def touch(mib: int) -> None:
        block = bytearray(mib << 20)
        for i in range(0, len(block), 4096):
            block[i] = 1

    with Recorder(tmp_path / "art"):
        with stage("big"):
            touch(300)
        with stage("outer"):
            with stage("inner"):
                touch(10)
            touch(100)
    stages = load_timings(tmp_path / "art").stages
    peak = {n: s.runs[0].resources["memory_peak_bytes"] for n, s in stages.items()}
    assert peak["big"] >= 300 << 20
    assert peak["inner"] < 300 << 20  # its own peak, not the big stage's
    assert 100 << 20 <= peak["outer"] < 300 << 20


def two_gpus(second: dict[str, object]) -> FakeNvml:
    return FakeNvml(
        [
            h100(watts=100.0),
            h100("GPU-11111111-2222-3333-4444-555555555555", **second),
        ]
    )


def energy_of_a_stage(tmp_path: Path, nvml: FakeNvml, environ: dict[str, str]) -> tuple[
    float, float | None
]:
    resources.use(resources.probe(root=str(tmp_path), environ=environ, nvml=nvml))
    with Recorder(tmp_path / "art"), stage("train"):
        time.sleep(0.2)
    run = load_timings(tmp_path / "art").stages["train"].runs[0]
    assert run.resources is not None
    return run.seconds, run.resources.get("gpu_energy_joules")


def test_energy_sums_the_visible_gpus_only(tmp_path: Path) -> None:
    nvml = two_gpus({"watts": 300.0})
    seconds, joules = energy_of_a_stage(tmp_path, nvml, {"CUDA_VISIBLE_DEVICES": "1"})
    # GPU 1 draws 300 W; GPU 0 (100 W) is not the process's. The counter is read
    # just outside the timed block, so it spans a little more than ``seconds``.
    assert joules is not None
    assert 300 * seconds * 0.95 <= joules <= 300 * (seconds + 0.05)

    resources.use(None)
    seconds, joules = energy_of_a_stage(tmp_path / "all", two_gpus({"watts": 300.0}), {})
    assert joules is not None
    assert 400 * seconds * 0.95 <= joules <= 400 * (seconds + 0.05)


def test_energy_selects_the_gpus_the_gpu_probe_selects(tmp_path: Path) -> None:
    # An unknown MIG instance ends CUDA's list: no GPU for the probe, and no energy either
    # (the counters once summed GPU 0 after it, by a selection rule of their own).
    environ = {"CUDA_VISIBLE_DEVICES": "MIG-00000000-0000-0000-0000-000000000000,0"}

    _, joules = energy_of_a_stage(tmp_path, two_gpus({"watts": 300.0}), environ)

    assert joules is None


@pytest.mark.parametrize(
    "second",
    [{"energy_error": NVML_ERROR_NOT_SUPPORTED}, {"watts": 0.0}],
    ids=["not-supported", "reports-zero"],
)
def test_a_gpu_without_the_counter_gives_no_energy_and_says_why(
    tmp_path: Path, second: dict[str, object]
) -> None:
    _, joules = energy_of_a_stage(tmp_path, two_gpus(second), {})
    assert joules is None  # absent, never 0 and never the first GPU's alone

    hw = capture_hardware(root=str(tmp_path), environ={}, nvml=two_gpus(second))
    assert "gpus[1] has no energy counter" in hw.sources["resources.gpu_energy_joules"]
    # NVML was left as the capture found it.
    nvml = two_gpus(second)
    capture_hardware(root=str(tmp_path), environ={}, nvml=nvml)
    assert nvml.init_calls == nvml.shutdown_calls == 1


def test_energy_when_every_visible_gpu_has_the_counter_is_said_once(tmp_path: Path) -> None:
    hw = capture_hardware(root=str(tmp_path), environ={}, nvml=two_gpus({}))
    assert hw.sources["resources.gpu_energy_joules"].startswith(
        "nvmlDeviceGetTotalEnergyConsumption (millijoules) summed over the 2 visible"
    )


def test_without_nvml_no_energy_key_and_the_reason(tmp_path: Path) -> None:
    _, joules = energy_of_a_stage(tmp_path, FakeNvml([], init_error=9), {})
    assert joules is None
    hw = capture_hardware(root=str(tmp_path), environ={}, nvml=FakeNvml([], init_error=9))
    assert hw.sources["resources.gpu_energy_joules"] == "no GPU (the gpus line says why)"
    assert hw.sources["gpus"].startswith("NVML unavailable")


def test_record_timing_has_no_resources(tmp_path: Path) -> None:
    from stagetimer import record_timing

    record_timing("alpharank", 1.5, recorder=Recorder(tmp_path / "art"))
    run = load_timings(tmp_path / "art").stages["alpharank"].runs[0]
    assert run.resources is None


PEAK_AS_USER = """
import sys
from stagetimer.hardware._resources import memory_peak_file
print(memory_peak_file(sys.argv[1])[1])
"""


@pytest.mark.root
def test_a_peak_file_the_user_cannot_write_is_not_used(request: pytest.FixtureRequest) -> None:
    # Slurm's job groups belong to root: the job's processes cannot reset memory.peak.
    # Run as ``nobody`` (root may write anything), outside pytest's root-only base.
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run as another user")
    base = Path(tempfile.mkdtemp(prefix="stagetimer-peak-"))
    base.chmod(0o755)
    request.addfinalizer(lambda: shutil.rmtree(base, ignore_errors=True))
    fake = v2_root(base)
    for directory in [base, *(fake.path / PEAK.lstrip("/")).parents]:
        if directory.is_relative_to(base):
            directory.chmod(0o755)
    (fake.path / PEAK.lstrip("/")).chmod(0o644)
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp",
           "PYTHONPATH": os.pathsep.join([str(REPO), *site.getsitepackages()])}
    done = subprocess.run(
        ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
         "/usr/bin/python3", "-c", PEAK_AS_USER, fake.root],
        capture_output=True, text=True, env=env, timeout=60, cwd="/tmp", check=False,
    )
    if "ModuleNotFoundError" in done.stderr or "No such file" in done.stderr:
        pytest.skip(f"the other user cannot run stagetimer here: {done.stderr[-200:]}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("VmHWM")
    assert "memory.peak is not writable by this user" in done.stdout
    # Root, who may write it, resets it per stage.
    assert resources.probe(root=fake.root, environ={}, nvml=FakeNvml([])).peak_path is not None


def test_a_peak_file_that_refuses_the_reset_falls_back_for_good(tmp_path: Path) -> None:
    # A directory where the file should be: opening it for writing fails (EISDIR), as a
    # write to a kernel's memory.peak without the per-file reset would.
    refusing = tmp_path / "memory.peak"
    refusing.mkdir()
    found = resources.probe(root=str(tmp_path), environ={}, nvml=FakeNvml([]))
    found.peak_path = str(refusing)
    resources.use(found)
    with Recorder(tmp_path / "art"), stage("first"):
        pass
    assert found.peak_path is None
    run = load_timings(tmp_path / "art").stages["first"].runs[0]
    assert run.resources is not None and "cpu_seconds" in run.resources


def test_resources_survive_a_rescue_and_recover(tmp_path: Path) -> None:
    from helpers.rescue import orphan

    from stagetimer import StageTimerWarning, recover

    art = tmp_path / "art"
    art.mkdir()
    (art / "timings.json").write_text("{bad")  # the save fails: the run goes to a rescue file
    resources.use(resources.probe(root=str(tmp_path), environ={}, nvml=two_gpus({})))
    with pytest.warns(StageTimerWarning), Recorder(art), stage("ippo_train", run_idx=0):
        time.sleep(0.05)
    (art / "timings.json").unlink()
    orphan(art)  # its writer has ended (recover leaves a live writer's file alone)
    assert [r.stored for r in recover(art)] == [1]
    used = load_timings(art).stages["ippo_train"].runs[0].resources
    assert used is not None and used["gpu_energy_joules"] > 0 and "cpu_seconds" in used


def test_stagetimer_hardware_says_where_each_figure_comes_from(tmp_path: Path) -> None:
    from stagetimer.hardware import format_hardware

    text = format_hardware(capture_hardware(root=v2_root(tmp_path).root, environ={},
                                            nvml=two_gpus({"energy_error": 3})))
    said = text.split("what a recorded stage used (resources of each run):\n", 1)[1]
    assert [line for line in said.splitlines() if not line.startswith("    ")] == [
        "  children_cpu_seconds", "  cpu_seconds", "  gpu_energy_joules", "  memory_peak_bytes",
    ]
    assert "gpus[1] has no energy counter" in said
    assert "job_N/step_*/memory.peak" in said
