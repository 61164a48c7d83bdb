"""The software capture ends within its bound whatever the system holds: a git helper
that leaves git's process group holding its output, FIFOs and devices where the package
scan reads files, a hardware file that never ends. Each subject runs in its own process
with a timeout: the unbounded code waits for good."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers.git_repo import git, make_repo

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

CAPTURE = textwrap.dedent("""
    import json, sys, time
    from stagetimer.software import capture_software
    started = time.monotonic()
    software = capture_software(entry=sys.argv[1], timeout=float(sys.argv[2]))
    print(json.dumps({
        "took": time.monotonic() - started, "code": software.code is not None,
        "where": software.sources["code"], "packages": software.packages,
    }))
""")


def run_capture(entry: Path, timeout: float, **kwargs: object) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", CAPTURE, str(entry), str(timeout)], capture_output=True,
        text=True, timeout=30, check=False, **kwargs,  # type: ignore[call-overload]
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def _end(pid_file: Path) -> None:
    """End the helper that escaped the group (we started it)."""
    deadline = time.monotonic() + 5
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    if pid_file.exists() and pid_file.read_text().strip():
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)


def _executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@needs_git
def test_an_fsmonitor_daemon_holding_git_s_output_does_not_hold_the_capture(
    tmp_path: Path,
) -> None:
    # A real fsmonitor hook, run by the real git diff-index, starts a daemon in a session
    # of its own (out of git's process group, as watchman and git's own daemon do) that
    # keeps git's standard error, the capture's pipe, open for a minute.
    repo = make_repo(tmp_path / "repo")
    armed, pid_file = tmp_path / "armed", tmp_path / "daemon.pid"
    hook = tmp_path / "fsmonitor-hook"
    _executable(hook, textwrap.dedent(f"""\
        #!/bin/sh
        if [ -e {armed} ]; then
            setsid sh -c 'echo $$ > {pid_file}; exec sleep 60' >/dev/null &
        fi
        printf '\\0'
    """))
    git(repo, "config", "core.fsmonitor", str(hook))
    git(repo, "update-index", "--fsmonitor")
    armed.touch()
    try:
        started = time.monotonic()
        result = run_capture(repo, 1.0)
        took = time.monotonic() - started
    finally:
        _end(pid_file)

    assert pid_file.exists()  # the daemon was started by git
    assert (False, True) == (result["code"], "kept its output open past 1 s" in str(
        result["where"]))
    assert float(result["took"]) < 2.0, result  # type: ignore[arg-type]
    assert took < 10, took


@needs_git
def test_a_git_wrapper_whose_child_escapes_the_group_with_stdout_is_bounded(
    tmp_path: Path,
) -> None:
    # A git on PATH (a site wrapper) that starts a child in its own session holding
    # git's standard output, then runs the real git.
    repo = make_repo(tmp_path / "repo")
    pid_file = tmp_path / "child.pid"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    real = shutil.which("git")
    _executable(bin_dir / "git", textwrap.dedent(f"""\
        #!/bin/sh
        setsid sh -c 'echo $$ >> {pid_file}; exec sleep 60' &
        exec {real} "$@"
    """))
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    try:
        result = run_capture(repo, 1.0, env=env)
    finally:
        deadline = time.monotonic() + 5
        while (not pid_file.exists() or len(pid_file.read_text().split()) < 2) and (
            time.monotonic() < deadline
        ):
            time.sleep(0.01)
        for pid in pid_file.read_text().split() if pid_file.exists() else ():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)

    assert (False, True) == (result["code"], "kept its output open" in str(result["where"]))
    assert float(result["took"]) < 2.0, result  # type: ignore[arg-type]


# -- every file a capture reads is a regular file, read without blocking, bounded ----------

SCAN = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import planted_module, good_module
    from stagetimer.software._packages import imported_packages
    print(json.dumps(imported_packages()[0]))
""")


def _distribution(where: Path, name: str, files: dict[str, str]) -> Path:
    info = where / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    for filename, text in files.items():
        (info / filename).write_text(text)
    return info


def _plant(path: Path, kind: str) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    else:  # a link to a device that never ends
        path.symlink_to("/dev/zero")


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
@pytest.mark.parametrize(
    ("planted", "files"),
    [
        ("top_level.txt", {"METADATA": "Name: planted\nVersion: 1.0\n\n"}),
        ("RECORD", {"METADATA": "Name: planted\nVersion: 1.0\n\n"}),
        ("METADATA", {"top_level.txt": "planted_module\n"}),
    ],
)
def test_a_fifo_or_device_in_a_dist_info_directory_does_not_hold_the_package_scan(
    tmp_path: Path, kind: str, planted: str, files: dict[str, str]
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "planted_module.py").write_text("")
    (site / "good_module.py").write_text("")
    info = _distribution(site, "planted", files)
    _plant(info / planted, kind)
    _distribution(site, "good", {
        "METADATA": "Metadata-Version: 2.1\nName: good\nVersion: 2.0\n\ndescription\n",
        "RECORD": "good_module.py,sha256=x,0\n",
    })

    done = subprocess.run(
        [sys.executable, "-c", SCAN, str(site)], capture_output=True, text=True,
        timeout=30, check=False,
    )

    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert ("2.0", None) == (found.get("good"), found.get("planted"))


def test_a_file_past_the_size_bound_is_not_read(tmp_path: Path) -> None:
    from stagetimer._system.files import MAX_BYTES, read_regular

    info = _distribution(tmp_path / "site", "huge", {"METADATA": "Name: huge\n\n"})
    # Sparse: a RECORD of 64 MiB of zeros takes no space and would be read whole.
    with open(info / "RECORD", "wb") as f:
        f.truncate(4 * MAX_BYTES)
    with open(info / "top_level.txt", "wb") as f:
        f.truncate(MAX_BYTES)

    assert (None, f"is unreadable (larger than {MAX_BYTES} bytes)") == read_regular(
        str(info / "RECORD")
    )
    assert (bytes(MAX_BYTES), "") == read_regular(str(info / "top_level.txt"))
    assert (b"Name: huge\n\n", "") == read_regular(str(info / "METADATA"), stop=b"\n\n")


HARDWARE = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[2])
    from helpers.fake_hardware import FakeNvml
    from stagetimer.hardware import capture_hardware
    hw = capture_hardware(root=sys.argv[1], environ={}, nvml=FakeNvml([]))
    print(json.dumps(dict(hw.sources)))
""")


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_fifos_and_devices_where_the_hardware_capture_reads_are_refused(
    tmp_path: Path, kind: str
) -> None:
    from helpers.fake_hardware import FakeRoot, cpuinfo_block

    fake = FakeRoot(tmp_path / "root")
    fake.v2("/job")
    fake.status("0-1")
    fake.cpuinfo([cpuinfo_block(0), cpuinfo_block(1)])
    fake.meminfo()
    fake.files("/sys/fs/cgroup/job", {"memory.max": "max", "cpu.max": "max 100000"})
    for path in ("proc/cpuinfo", "proc/meminfo", "sys/fs/cgroup/job/memory.max",
                 "proc/sys/kernel/osrelease"):
        target = fake.path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.unlink(missing_ok=True)
        _plant(target, kind)

    done = subprocess.run(
        [sys.executable, "-c", HARDWARE, fake.root, str(Path(__file__).parents[1])],
        capture_output=True, text=True, timeout=30, check=False,
    )

    assert done.returncode == 0, done.stderr
    sources = json.loads(done.stdout)
    what = "a FIFO" if kind == "fifo" else "a character device"
    assert f"/proc/cpuinfo is unreadable ({what}, not a regular file)" in sources[
        "cpu.model_name"]
    assert f"/proc/meminfo is unreadable ({what}" in sources["memory.node_total_bytes"]
