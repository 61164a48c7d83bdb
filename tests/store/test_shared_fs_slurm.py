"""A 12-task Slurm array on three nodes, each node writing one directory through its own
bindfs mount (its own client, whose flock other nodes do not see), under upsert.

Needs root, Debian's Slurm (installed when missing) and bindfs; skipped with the reason
where the cluster cannot start here (failed in CI).
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
import textwrap
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.bindfs import BindfsUnavailable, bindfs_mounts, unavailable
from helpers.slurm_cluster import ClusterUnavailable
from helpers.slurm_fixtures import require_slurm, skip_or_fail
from helpers.slurm_multinode import NODES, MultiNodeCluster, multi_node_cluster

pytestmark = [pytest.mark.slow, pytest.mark.root]

TASKS = 12
STEPS = 15  # records of the per-step stage each task saves, to make saves overlap


@pytest.fixture
def cluster() -> Iterator[MultiNodeCluster]:
    require_slurm()
    with contextlib.ExitStack() as stack:
        try:
            made = stack.enter_context(multi_node_cluster())
        except ClusterUnavailable as error:
            skip_or_fail(f"no three-node Slurm cluster on this machine: {error}")
        yield made


SCRIPT = textwrap.dedent("""\
    #!/bin/bash
    # Each node writes through its own client: n1 -> client0, n2 -> client1, n3 -> client2.
    client=$((${SLURMD_NODENAME#n} - 1))
    exec "$PYTHON" - "$MOUNTS/client$client/exp" <<'EOF'
    import os, sys
    from stagetimer import Recorder, record_timing
    task = int(os.environ["SLURM_ARRAY_TASK_ID"])
    rec = Recorder(sys.argv[1], policy="upsert", strict=True, lock_timeout=120)
    for i in range(STEPS):
        record_timing("step", 0.01, run_idx=task * STEPS + i, recorder=rec)
    record_timing("train", 1.0 + task, run_idx=task, recorder=rec,
                  node=os.environ["SLURMD_NODENAME"])
    EOF
    """).replace("STEPS", str(STEPS))


def test_a_twelve_task_array_on_three_nodes_stores_every_task_s_run_once(
    cluster: MultiNodeCluster, tmp_path: Path
) -> None:
    why = unavailable()
    if why:
        skip_or_fail(why)
    script = tmp_path / "task.sbatch"
    script.write_text(SCRIPT)
    output = tmp_path / "out"
    output.mkdir()
    try:
        mounts = bindfs_mounts(tmp_path / "fs", len(NODES))
        (tmp_path / "fs").mkdir()
        backing, clients = mounts.__enter__()
    except BindfsUnavailable as error:
        skip_or_fail(str(error))
    try:
        env = {"PYTHON": sys.executable, "MOUNTS": str(tmp_path / "fs")}
        job = cluster.submit(script, f"--array=0-{TASKS - 1}", "--mem=100M",
                             "--cpus-per-task=1", f"--output={output}/%a.out",
                             cwd=tmp_path, env=env)
        cluster.wait(job, timeout=150)
        logs = "\n".join(f"{p.name}: {p.read_text()}" for p in sorted(output.iterdir()))
        show = cluster.show_job(job)
        assert set(re.findall(r"JobState=(\w+)", show)) == {"COMPLETED"}, show + logs
        data = json.loads((backing / "exp" / "timings.json").read_text())
    finally:
        mounts.__exit__(None, None, None)
    train = data["train"]["runs"]
    assert sorted(r["run_idx"] for r in train) == list(range(TASKS)), logs
    assert len({r["node"] for r in train}) > 1  # the array really spread over nodes
    steps = Counter(r["run_idx"] for r in data["step"]["runs"])
    assert sorted(steps) == list(range(TASKS * STEPS))
    assert set(steps.values()) == {1}
    assert clients  # every node had its own mount
