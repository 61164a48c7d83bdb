"""Where and what each run ran: its CPUs read at each save, its software captured once at
the first save (or not at all when told so)."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import attrs
import pytest

from stagetimer import (
    Recorder,
    capture_software,
    load_hardware,
    load_timings,
    record_timing,
    software_id,
)
from stagetimer._record.placement import format_cpu_list
from stagetimer._system.files import parse_cpu_list

needs_two_cpus = pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or not {0, 1} <= os.sched_getaffinity(0),
    reason="needs CPUs 0 and 1 to pin two processes apart",
)


def run_child(code: str, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True,
        timeout=120, check=False, env={**os.environ, **(env or {})},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


PINNED = """
import os, sys
os.sched_setaffinity(0, {int(sys.argv[2])})
from stagetimer import Recorder, record_timing
record_timing("ippo_train", 1.0, run_idx=int(sys.argv[2]),
              recorder=Recorder(sys.argv[1], policy="upsert"))
"""


@needs_two_cpus
def test_two_processes_pinned_to_cpu_0_and_cpu_1_share_one_hardware_id(tmp_path: Path) -> None:
    children = [
        subprocess.Popen([sys.executable, "-c", textwrap.dedent(PINNED), str(tmp_path), str(cpu)])
        for cpu in (0, 1)
    ]
    assert [0, 0] == [child.wait(timeout=120) for child in children]

    runs = load_timings(tmp_path).stages["ippo_train"].runs

    assert [(0, "0"), (1, "1")] == [(run.run_idx, run.cpus) for run in runs]
    assert 1 == len({run.hardware_id for run in runs}) == len(load_hardware(tmp_path).hardware)


REPINNED = """
import os, sys
from stagetimer import Recorder, record_timing
rec = Recorder(sys.argv[1])
record_timing("ippo_train", 1.0, run_idx=0, recorder=rec)
os.sched_setaffinity(0, {1})
record_timing("ippo_train", 1.0, run_idx=1, recorder=rec)
"""


@needs_two_cpus
def test_cpus_are_read_at_each_save(tmp_path: Path) -> None:
    run_child(REPINNED, str(tmp_path))

    runs = load_timings(tmp_path).stages["ippo_train"].runs

    assert [format_cpu_list(os.sched_getaffinity(0)), "1"] == [run.cpus for run in runs]


@pytest.mark.parametrize(
    ("cpus", "text"),
    [((0, 1, 2, 3, 8), "0-3,8"), ((5,), "5"), ((), ""), ((1, 3, 4, 5, 7), "1,3-5,7"),
     ((0, 2, 4), "0,2,4"), (range(64), "0-63")],
)
def test_cpus_in_the_kernel_s_list_format(cpus: tuple[int, ...], text: str) -> None:
    assert (text, tuple(cpus)) == (format_cpu_list(cpus), parse_cpu_list(text))


# -- software: captured once, at the first save, or not at all -----------------------------


def test_each_run_points_at_the_stored_software(rec: Recorder, art: Path) -> None:
    record_timing("ippo_train", 1.0, run_idx=0, recorder=rec)

    (run,) = load_timings(art).stages["ippo_train"].runs
    stored = load_hardware(art).software

    assert software_id(capture_software()) == run.software_id
    assert capture_software() == stored[run.software_id]


@pytest.mark.parametrize("how", ["setting", "environment"])
def test_a_recorder_told_not_to_capture_software(
    how: str, art: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if how == "environment":
        monkeypatch.setenv("STAGETIMER_SOFTWARE", "0")
        rec = Recorder(art)
    else:
        rec = Recorder(art, software=False)

    record_timing("ippo_train", 1.0, run_idx=0, recorder=rec)

    (run,) = load_timings(art).stages["ippo_train"].runs
    sidecar = json.loads((art / "timings_hardware.json").read_text())
    assert (None, False) == (run.software_id, "software" in sidecar)
    assert run.cpus is not None  # placement is still recorded


@pytest.mark.parametrize("value", ["no", 0, None])
def test_software_is_a_bool_setting(value: Any, art: Path) -> None:
    with pytest.raises(ValueError, match=r"software .* is not valid: expected True or False"):
        Recorder(art, software=value)


def test_a_pickled_recorder_keeps_its_software_setting(art: Path) -> None:
    assert pickle.loads(pickle.dumps(Recorder(art, software=False))).software is False


LATE_IMPORT = """
import json, sys
from stagetimer import Recorder, record_timing, load_hardware
rec = Recorder(sys.argv[1])
import six  # imported after the recorder was made, before its first save
record_timing("ippo_train", 1.0, run_idx=0, recorder=rec)
(software,) = load_hardware(sys.argv[1]).software.values()
print(json.dumps(sorted(software.packages)))
"""


def test_software_is_captured_at_the_first_save_with_what_was_imported_by_then(
    tmp_path: Path,
) -> None:

    packages = json.loads(run_child(LATE_IMPORT, str(tmp_path)))

    assert "six" in packages


FORKED = """
import json, os, sys
from stagetimer import Recorder, record_timing
rec = Recorder(sys.argv[1], policy="upsert")
record_timing("parent", 1.0, recorder=rec)
pid = os.fork()
if pid == 0:
    import six  # the child's own import, before its first save
    record_timing("child", 1.0, recorder=rec)
    os._exit(0)
os.waitpid(pid, 0)
"""


def test_a_forked_child_captures_its_own_software(tmp_path: Path) -> None:
    run_child(FORKED, str(tmp_path))

    stages = load_timings(tmp_path).stages
    software = load_hardware(tmp_path).software
    parent = software[stages["parent"].runs[0].software_id]  # type: ignore[index]
    child = software[stages["child"].runs[0].software_id]  # type: ignore[index]

    assert ("six" in parent.packages, "six" in child.packages) == (False, True)


def test_stagetimer_hardware_says_where_this_process_runs() -> None:
    from stagetimer._record.placement import placed_cpus

    environ = {k: v for k, v in os.environ.items()
               if k not in ("SLURM_PROCID", "SLURM_NTASKS", "OMPI_COMM_WORLD_RANK", "PMI_RANK")}
    out = subprocess.run(
        [sys.executable, "-m", "stagetimer", "hardware"], capture_output=True, text=True,
        timeout=120, check=True, env={**environ, "RANK": "1", "WORLD_SIZE": "2"},
    ).stdout

    assert out.endswith(
        f"placement (kept in each run, not in the description): cpus {placed_cpus()}, "
        "rank 1 of 2\n"
    )


RESCUED = """
import sys, warnings
from stagetimer import Recorder, record_timing
warnings.simplefilter("ignore")
record_timing("ippo_train", 1.0, run_idx=0, recorder=Recorder(sys.argv[1]))
"""


def test_a_rescued_run_s_software_is_folded_back_by_recover(tmp_path: Path) -> None:
    from stagetimer import recover

    (tmp_path / "timings_hardware.json").write_text("not JSON")  # every save fails: rescued
    run_child(RESCUED, str(tmp_path))  # a writer that has ended: its rescue file is folded
    rescue = json.loads(next(tmp_path.glob("timings.rescue-*.json")).read_text())
    (tmp_path / "timings_hardware.json").unlink()  # repaired

    recover(tmp_path)

    (run,) = load_timings(tmp_path).stages["ippo_train"].runs
    software = load_hardware(tmp_path).software
    assert run.software_id is not None and [run.software_id] == list(rescue["software"])
    assert rescue["software"][run.software_id] == json.loads(
        (tmp_path / "timings_hardware.json").read_text()
    )["software"][run.software_id]
    assert run.software_id in software


def test_a_pickled_recorder_keeps_every_setting(art: Path) -> None:
    rec = Recorder(
        art, resume_partial_runs=True, completed_runs=3, policy="upsert", strict=True,
        lock_timeout=5.0, expected_runs=7, software=False,
    )
    clone = pickle.loads(pickle.dumps(rec))
    assert attrs.asdict(rec, filter=lambda a, _: a.init) == attrs.asdict(
        clone, filter=lambda a, _: a.init
    )
    assert (rec.timings_path, rec.hardware_path) == (clone.timings_path, clone.hardware_path)
    assert str(art / "timings.json") == rec.timings_path


def test_a_rank_a_framework_declares_is_held_by_runs_and_markers(tmp_path: Path) -> None:
    """Lightning's launcher sets WORLD_SIZE but no RANK: the callback declares the rank it
    knows; a world of one declares none; a forked child reads its own environment again."""
    code = textwrap.dedent("""
        import json, os, sys
        from stagetimer import Recorder, stage
        from stagetimer._record.pending import declare_rank
        rec = Recorder(sys.argv[1], policy="upsert")
        declare_rank(1, 2)
        with stage("fit_train", run_idx=0, recorder=rec):
            markers = os.listdir(os.path.join(sys.argv[1], "timings.attempts"))
            with open(os.path.join(sys.argv[1], "timings.attempts", markers[0])) as f:
                marker = json.load(f)
        pid = os.fork()
        if pid == 0:
            rec.record("child", 1.0, run_idx=0)
            os._exit(0)
        os.waitpid(pid, 0)
        declare_rank(0, 1)
        rec.record("alone", 1.0, run_idx=0)
        print(json.dumps([marker["rank"], marker["world_size"]]))
    """)
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                          text=True, timeout=60, env=env, check=True)
    assert [1, 2] == json.loads(done.stdout)
    runs = {name: stage.runs[0] for name, stage in load_timings(tmp_path).stages.items()}
    assert (1, 2) == (runs["fit_train"].rank, runs["fit_train"].world_size)
    assert (None, None) == (runs["child"].rank, runs["child"].world_size)
    assert (None, None) == (runs["alone"].rank, runs["alone"].world_size)
