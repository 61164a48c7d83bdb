"""Writers on different clients of one directory: exact, with flock that is per client.

Clients are bindfs (FUSE) mounts of one backing directory (``helpers.bindfs``): flock
through one mount does not exclude a writer through another, as on NFS mounted
``local_lock=all``. Writers are real processes (threads too); each test stops by itself
(every process has a timeout).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.bindfs import (
    BindfsUnavailable,
    bindfs_mounts,
    finish,
    promised_runs,
    start_writer,
    stored_runs,
    unavailable,
)

from stagetimer import Recorder, record_timing, recover

pytestmark = [pytest.mark.root]

WAIT = 240  # seconds any writer may take before the test fails (it never should)
#: Claims of killed writers can then only be cleared by their dead pid (at once), never by
#: the stale time: a steady writer that waited for one would time out after 120 s and fail.
ONLY_DEAD_PIDS = {"STAGETIMER_CLAIM_STALE_SECONDS": "3600"}


@pytest.fixture
def mounts(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, list[Path]]]:
    why = unavailable()
    if why:
        if os.environ.get("CI", "").lower() in {"true", "1", "yes"}:
            pytest.fail(f"CI must be able to run the bindfs tests: {why}")
        pytest.skip(why)
    count = getattr(request, "param", 2)
    try:
        with bindfs_mounts(tmp_path, count) as made:
            yield made
    except BindfsUnavailable as error:
        pytest.skip(str(error))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mounts", "policy", "stages", "threads"),
    [
        (2, "sequential", "distinct", 1),
        (2, "upsert", "shared", 2),
        (3, "upsert", "distinct", 1),
        (3, "sequential", "shared", 2),
    ],
    indirect=["mounts"],
)
def test_writers_through_several_mounts_store_every_record_exactly_once(
    mounts: tuple[Path, list[Path]], policy: str, stages: str, threads: int
) -> None:
    backing, clients = mounts
    for trial in range(2):
        name = f"exp{trial}"  # a fresh directory per trial, made through the clients
        writers = [
            start_writer(client / name, wid, 25, policy, threads, stages)
            for wid, client in enumerate(clients * 2)  # two writers through each client
        ]
        expected = promised_runs(finish(writers, WAIT))
        stored = stored_runs(backing / name)
        assert sorted(stored) == sorted(expected), f"trial {trial}"
        for stage, runs in expected.items():
            assert sorted(stored[stage]) == sorted(runs), f"trial {trial}, stage {stage}"
        assert len(stored["shared"]) == 2 * len(clients) * threads * 25
        assert not list((backing / name).glob("*rescue*"))
        assert not list((backing / name).glob("*.claim")), "a claim outlived its save"


def _kill_now_and_then(
    client: Path, first_wid: int, rounds: int, rng: random.Random
) -> list[subprocess.Popen[str]]:
    """Writers through ``client``, each SIGKILLed after a random moment of its run."""
    killed = []
    for i in range(rounds):
        writer = start_writer(client / "exp", first_wid + i, 25, "upsert", 1, "distinct",
                              **ONLY_DEAD_PIDS)
        time.sleep(rng.uniform(0.3, 1.5))
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=WAIT)
        killed.append(writer)
    return killed


@pytest.mark.slow
def test_writers_killed_at_random_never_block_the_others_and_recover_folds_them_in(
    mounts: tuple[Path, list[Path]],
) -> None:
    backing, (victim_client, steady_client) = mounts
    rng = random.Random(19)
    steady = [
        start_writer(steady_client / "exp", wid, 25, "upsert", 1, "distinct", **ONLY_DEAD_PIDS)
        for wid in (0, 1)
    ]
    killed = _kill_now_and_then(victim_client, 10, 6, rng)
    promised = finish(steady, WAIT)  # no save failed: nothing waited out its lock_timeout
    for writer in killed:
        out, _ = writer.communicate()
        promised += out.splitlines()  # what a killed writer printed was saved before it died
    recover(backing / "exp")
    stored = stored_runs(backing / "exp")
    for stage, runs in stored.items():
        assert Counter(runs).most_common(1)[0][1] == 1, f"{stage} holds a run twice: {runs}"
    for stage, runs in promised_runs(promised).items():
        assert set(runs) <= set(stored[stage]), stage
    assert sorted(stored["shared"])[:50] == list(range(50))  # both steady writers, whole
    # A new writer's first save clears what the killed ones left (claims, their own files).
    record_timing("after", 1.0, recorder=Recorder(steady_client / "exp", strict=True))
    names = sorted(p.name for p in (backing / "exp").iterdir())
    assert [n for n in names if "rescue" in n or ".claim" in n or "tmp" in n] == []
