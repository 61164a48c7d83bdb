"""Undecodable bytes in the job's identity variables or the host name never fail a stage:
they are written as ``\\xNN`` (docs/format.md), and the sidecars stay valid JSON."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers.process_life import REPO

SAVE = """
import json, sys
from stagetimer import Recorder, record_timing
record_timing("train", 1.0, run_idx=0, recorder=Recorder(sys.argv[1]))
print("returned")
"""


def _run(argv: list[str], env: dict[bytes, bytes]) -> subprocess.CompletedProcess[bytes]:
    base = {k.encode(): v.encode() for k, v in os.environ.items()
            if not k.startswith(("SLURM", "PBS", "STAGETIMER"))}
    return subprocess.run(argv, env={**base, **env}, capture_output=True, timeout=120,
                          cwd="/tmp")


@pytest.mark.parametrize(
    ("variables", "where"),
    [
        ({b"SLURM_JOB_ID": b"7", b"SLURM_SUBMIT_DIR": b"/home/j\xe9r\xf4me"},
         ("job", "submit_dir")),
        ({b"PBS_JOBID": b"7.srv", b"PBS_O_WORKDIR": b"/home/\xff\xfe"}, ("job", "submit_dir")),
        ({b"SLURM_JOB_ID": b"7", b"SLURM_JOB_PARTITION": b"gpu-\xe9"}, ("partition", None)),
    ],
    ids=["SLURM_SUBMIT_DIR", "PBS_O_WORKDIR", "SLURM_JOB_PARTITION"],
)
def test_undecodable_bytes_in_identity_variables_are_saved_as_backslash_x(
    tmp_path: Path, variables: dict[bytes, bytes], where: tuple[str, str | None]
) -> None:
    done = _run([sys.executable, "-c", textwrap.dedent(SAVE), str(tmp_path)], variables)

    assert (0, b"returned\n") == (done.returncode, done.stdout), done.stderr.decode()[-2000:]
    timings = json.loads((tmp_path / "timings.json").read_bytes().decode("utf-8"))
    hardware = (tmp_path / "timings_hardware.json").read_bytes().decode("utf-8")
    run = timings["train"]["runs"][0]
    raw = next(v for k, v in variables.items() if k not in (b"SLURM_JOB_ID", b"PBS_JOBID"))
    spelled = raw.decode("utf-8", "backslashreplace")
    if where[0] == "job":
        assert spelled == run["job"][where[1]]
    else:
        env = json.loads(hardware)["hardware"][run["hardware_id"]]["scheduler"]["env"]
        assert spelled == env["SLURM_JOB_PARTITION"]


@pytest.mark.root
def test_an_undecodable_host_name_is_saved_as_backslash_x(tmp_path: Path) -> None:
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare(1)")
    # A private UTS namespace: the host name changes for this child only. hostname(1)
    # refuses such a name; sethostname(2) takes any bytes.
    script = "import socket; socket.sethostname(b'node\\xff')\n" + textwrap.dedent(SAVE)
    done = _run(["unshare", "-u", sys.executable, "-c", script, str(tmp_path)], {})
    if done.returncode != 0 and b"unshare" in done.stderr:
        pytest.skip(f"no UTS namespace here: {done.stderr.decode()[-200:]}")

    assert (0, b"returned\n") == (done.returncode, done.stdout), done.stderr.decode()[-2000:]
    hardware = json.loads((tmp_path / "timings_hardware.json").read_bytes().decode("utf-8"))
    (description,) = hardware["hardware"].values()
    assert "node\\xff" == description["host"]
    assert REPO.exists()
