"""Seeds run by a fork ``multiprocessing.Pool`` under the default ``"sequential"`` policy,
seed 0 finishing last: its ``run_idx=0`` resets the stage (the rule stands), but dropping
runs that started after it is never silent: one warning names them and ``policy="upsert"``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.process_life import run_script, stage_runs

POOL = """
import multiprocessing, sys, time, warnings
from stagetimer import Recorder, stage
rec = Recorder(sys.argv[1], policy=sys.argv[2])

def seed(i):
    time.sleep(0.0 if i == 0 else 0.2)  # seed 0 starts first ...
    with stage("ippo_train", run_idx=i, recorder=rec):
        time.sleep(1.0 if i == 0 else 0.05)  # ... and finishes last
    return i

if __name__ == "__main__":
    with multiprocessing.get_context("fork").Pool(3) as pool:
        print(sorted(pool.map(seed, range(3))))
"""


def test_a_sequential_run_0_that_drops_runs_started_after_it_warns_once(art: Path) -> None:
    done = run_script("import warnings; warnings.simplefilter('always')\n" + POOL.strip(),
                      art, "sequential", timeout=60)

    warned = [line for line in done.stderr.splitlines() if "reset the stage" in line]
    assert [0] == [r["run_idx"] for r in stage_runs(art, "ippo_train")]
    assert 1 == len(warned), done.stderr
    assert "run_idx 1, 2" in warned[0] and 'policy="upsert"' in warned[0]


@pytest.mark.parametrize("policy", ["upsert"])
def test_the_same_pool_under_upsert_keeps_every_seed_without_a_warning(
    art: Path, policy: str
) -> None:
    done = run_script(POOL, art, policy, timeout=60)

    assert [0, 1, 2] == [r["run_idx"] for r in stage_runs(art, "ippo_train")]
    assert "reset the stage" not in done.stderr


def test_a_rerun_of_a_sequential_suite_resets_without_a_warning(art: Path) -> None:
    code = """
    import sys, time, warnings
    warnings.simplefilter("always")
    from stagetimer import Recorder, stage
    for _ in range(2):  # the suite, then its rerun: run 0 starts after the old runs
        rec = Recorder(sys.argv[1])
        for i in range(3):
            with stage("ippo_train", run_idx=i, recorder=rec):
                time.sleep(0.002)
    """
    done = run_script(code, art, timeout=60)

    assert [0, 1, 2] == [r["run_idx"] for r in stage_runs(art, "ippo_train")]
    assert "reset the stage" not in done.stderr
