"""compare(): pairing, per-side figures, the ratio and its interval, verdicts, hardware.

The sidecars are written as files here, with durations whose answer is known, and
every figure is checked against scipy.
"""

from __future__ import annotations

import json
import math
import random
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest
from helpers.compare_trees import FIRST_EDITION, GIB, MACHINE, lognormal, write_artifact

from stagetimer import SidecarCorruptError, compare
from stagetimer._analysis.compare.model import (
    FASTER,
    NO_DIFFERENCE,
    SLOWER,
    TOO_FEW_RUNS,
    HardwareDifference,
)
from stagetimer.hardware import MemoryInfo, hardware_id

scipy_stats = pytest.importorskip("scipy.stats")

def scipy_ratio(base: Sequence[float], new: Sequence[float]) -> tuple[float, float, float]:
    ln_base = [math.log(max(v, 1e-6)) for v in base]
    ln_new = [math.log(max(v, 1e-6)) for v in new]
    ratio = math.exp(sum(ln_new) / len(ln_new) - sum(ln_base) / len(ln_base))
    ci = scipy_stats.ttest_ind(ln_new, ln_base, equal_var=False).confidence_interval()
    return ratio, math.exp(float(ci.low)), math.exp(float(ci.high))


def one_stage(tmp_path: Path, base: Sequence[float], new: Sequence[float], **kw: Any) -> Any:
    write_artifact(tmp_path / "base", {"train": base})
    write_artifact(tmp_path / "new", {"train": new})
    (pair,) = compare(tmp_path / "base", tmp_path / "new", **kw).pairs
    (stage,) = pair.stages
    return stage


def test_clearly_faster(tmp_path: Path) -> None:
    stage = one_stage(tmp_path, lognormal(1, 10.0, 0.02, 5), lognormal(2, 8.0, 0.02, 5))

    assert FASTER == stage.verdict


def test_clearly_slower(tmp_path: Path) -> None:
    stage = one_stage(tmp_path, lognormal(1, 10.0, 0.02, 5), lognormal(2, 12.0, 0.02, 5))

    assert SLOWER == stage.verdict


def test_noisy_runs_of_equal_speed_show_no_significant_difference(tmp_path: Path) -> None:
    stage = one_stage(tmp_path, lognormal(3, 10.0, 0.3, 6), lognormal(4, 10.0, 0.3, 6))

    assert NO_DIFFERENCE == stage.verdict


def test_a_significant_change_below_the_threshold_is_no_verdict(tmp_path: Path) -> None:
    base, new = [10.0, 10.001, 9.999, 10.0], [10.15, 10.151, 10.149, 10.15]  # 1.5 % slower

    assert NO_DIFFERENCE == one_stage(tmp_path, base, new).verdict


def test_a_lower_threshold_calls_the_same_change_slower(tmp_path: Path) -> None:
    base, new = [10.0, 10.001, 9.999, 10.0], [10.15, 10.151, 10.149, 10.15]

    assert SLOWER == one_stage(tmp_path, base, new, threshold=0.01).verdict


@pytest.mark.parametrize("seed", range(8))
def test_ratio_and_interval_equal_scipy_welch_on_log_seconds(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    base = lognormal(seed, 5.0, rng.uniform(0.01, 0.4), rng.randint(2, 12))
    new = lognormal(seed + 100, 5.0 * rng.uniform(0.7, 1.3), rng.uniform(0.01, 0.4), 7)
    expected = scipy_ratio(base, new)

    stage = one_stage(tmp_path, base, new)
    actual = (stage.ratio, *stage.ratio_ci)
    assert all(math.isclose(a, e, rel_tol=1e-6) for a, e in zip(actual, expected, strict=True))


def test_per_side_runs_median_mean_and_stdev(tmp_path: Path) -> None:
    base, new = [1.0, 2.0, 4.0, 5.0], [3.0, 3.5, 4.0]

    stage = one_stage(tmp_path, base, new)
    expected = (4, 3.0, 3.0, float(scipy_stats.tstd(base)), 3, 3.5, 3.5, 0.5)
    actual = (
        stage.base.runs, stage.base.median_seconds, stage.base.mean_seconds,
        stage.base.stdev_seconds, stage.new.runs, stage.new.median_seconds,
        stage.new.mean_seconds, stage.new.stdev_seconds,
    )  # fmt: skip
    assert expected == pytest.approx(actual, rel=1e-12)


def test_one_run_on_a_side_gives_the_ratio_but_no_interval(tmp_path: Path) -> None:
    stage = one_stage(tmp_path, [10.0], [8.0, 8.2])

    expected = (TOO_FEW_RUNS, None, None)
    assert expected == (stage.verdict, stage.ratio_ci, stage.base.stdev_seconds)
    assert math.isclose(math.exp(math.log(8.0 * 8.2) / 2) / 10.0, stage.ratio, rel_tol=1e-12)


def test_zero_durations_are_floored_at_one_microsecond(tmp_path: Path) -> None:
    base, new = [0.0, 0.0, 2e-6], [1e-3, 2e-3, 1e-3]
    expected = scipy_ratio(base, new)

    stage = one_stage(tmp_path, base, new)
    assert (stage.ratio, *stage.ratio_ci) == pytest.approx(expected, rel=1e-6)


def test_values_no_writer_could_write_are_left_out(tmp_path: Path) -> None:
    write_artifact(tmp_path / "base", {"train": [10.0, -1.0, 10.2, 9.8]})
    write_artifact(tmp_path / "new", {"train": [8.0, 8.2, 7.9]})
    text = (tmp_path / "base" / "timings.json").read_text()
    (tmp_path / "base" / "timings.json").write_text(text.replace("-1.0", "1e999"))

    (pair,) = compare(tmp_path / "base", tmp_path / "new").pairs
    assert (3, 10.0) == (pair.stages[0].base.runs, pair.stages[0].base.mean_seconds)


def test_a_stage_on_one_side_only_is_listed_not_compared(tmp_path: Path) -> None:
    write_artifact(tmp_path / "base", {"train": [1.0, 1.1], "verify": [0.5, 0.5]})
    write_artifact(tmp_path / "new", {"train": [1.0, 1.1], "build_game": [2.0]})

    (pair,) = compare(tmp_path / "base", tmp_path / "new").pairs
    assert (["train"], ("verify",), ("build_game",)) == (
        [stage.name for stage in pair.stages],
        pair.base_only_stages,
        pair.new_only_stages,
    )


def test_two_artifact_directories_are_one_pair_whatever_their_names(tmp_path: Path) -> None:
    base = write_artifact(tmp_path / "main" / "ippo", {"train": [1.0, 1.1]})
    new = write_artifact(tmp_path / "feature" / "mappo", {"train": [1.0, 1.1]})

    comparison = compare(base, new)
    assert ([(str(base), str(new))], ()) == (
        [(p.base, p.new) for p in comparison.pairs],
        comparison.unpaired.base + comparison.unpaired.new,
    )


def test_trees_pair_equal_relative_paths_and_list_the_rest(tmp_path: Path) -> None:
    for side in ("main", "feature"):
        write_artifact(tmp_path / side / "pursuit" / "ippo", {"train": [1.0, 1.1]})
    write_artifact(tmp_path / "main" / "pursuit" / "mappo", {"train": [1.0, 1.1]})
    write_artifact(tmp_path / "feature" / "spread" / "ippo", {"train": [1.0, 1.1]})

    comparison = compare(tmp_path / "main", tmp_path / "feature")
    expected = (
        [(str(tmp_path / "main/pursuit/ippo"), str(tmp_path / "feature/pursuit/ippo"))],
        (str(tmp_path / "main/pursuit/mappo"),),
        (str(tmp_path / "feature/spread/ippo"),),
    )
    assert expected == (
        [(p.base, p.new) for p in comparison.pairs],
        comparison.unpaired.base,
        comparison.unpaired.new,
    )


def test_a_tree_root_that_is_an_artifact_pairs_with_the_other_root(tmp_path: Path) -> None:
    for side in ("main", "feature"):
        write_artifact(tmp_path / side, {"train": [1.0, 1.1]})
        write_artifact(tmp_path / side / "seed_tree", {"verify": [1.0, 1.1]})

    comparison = compare(tmp_path / "main", tmp_path / "feature")
    assert [(str(tmp_path / "main"), str(tmp_path / "feature"))] == [
        (p.base, p.new) for p in comparison.pairs
    ][:1]
    assert 2 == len(comparison.pairs)


def test_same_machine_has_no_hardware_differences(tmp_path: Path) -> None:
    other_host = attrs.evolve(MACHINE, host="node2", python="CPython 3.11.2")
    write_artifact(tmp_path / "base", {"train": [1.0, 1.1]})
    write_artifact(tmp_path / "new", {"train": [1.0, 1.1]}, hardware=[other_host])

    (pair,) = compare(tmp_path / "base", tmp_path / "new").pairs
    assert () == pair.hardware_differences


def test_a_differing_memory_limit_is_a_hardware_difference(tmp_path: Path) -> None:
    bigger = attrs.evolve(MACHINE, memory=MemoryInfo(limit_bytes=64 * GIB))
    write_artifact(tmp_path / "base", {"train": [1.0, 1.1]})
    write_artifact(tmp_path / "new", {"train": [1.0, 1.1]}, hardware=[bigger])

    (pair,) = compare(tmp_path / "base", tmp_path / "new").pairs
    expected = HardwareDifference(
        "memory.limit_bytes", 16 * GIB, 64 * GIB, hardware_id(MACHINE), hardware_id(bigger)
    )
    assert (expected,) == pair.hardware_differences


def test_a_side_spanning_several_descriptions_is_compared_against_each(tmp_path: Path) -> None:
    node2 = attrs.evolve(MACHINE, host="node2")
    bigger = attrs.evolve(MACHINE, memory=MemoryInfo(limit_bytes=64 * GIB))
    write_artifact(tmp_path / "base", {"train": [1.0, 1.1, 1.0, 1.1]}, hardware=[MACHINE, node2])
    write_artifact(tmp_path / "new", {"train": [1.0, 1.1]}, hardware=[bigger])

    (pair,) = compare(tmp_path / "base", tmp_path / "new").pairs
    expected = [
        ("memory.limit_bytes", hardware_id(MACHINE), hardware_id(bigger)),
        ("memory.limit_bytes", hardware_id(node2), hardware_id(bigger)),
    ]
    actual = [(d.field, d.base_hardware_id, d.new_hardware_id) for d in pair.hardware_differences]
    assert (expected, (hardware_id(MACHINE), hardware_id(node2))) == (
        actual,
        pair.base_hardware_ids,
    )


def test_first_edition_sidecars_with_a_job_id_compare(tmp_path: Path) -> None:
    old = tmp_path / "old"
    shutil.copytree(FIRST_EDITION, old)
    stored = json.loads((old / "timings_hardware.json").read_text())
    (description_dict,) = stored["hardware"].values()
    same_machine = {**description_dict, "scheduler": {"kind": "slurm", "env": {}}}
    write_artifact(tmp_path / "new", {"ippo_train": [1e-4, 2e-4]})
    new_sidecar = {"schema_version": 1, "hardware": {"hw-0123456789abcdef": same_machine}}
    (tmp_path / "new" / "timings_hardware.json").write_text(json.dumps(new_sidecar))
    text = (tmp_path / "new" / "timings.json").read_text()
    (tmp_path / "new" / "timings.json").write_text(
        text.replace(hardware_id(MACHINE), "hw-0123456789abcdef")
    )

    (pair,) = compare(old, tmp_path / "new").pairs
    assert (["ippo_train"], ()) == ([s.name for s in pair.stages], pair.hardware_differences)


def test_to_dict_has_the_documented_keys(tmp_path: Path) -> None:
    write_artifact(tmp_path / "base", {"train": [1.0, 1.1]})
    write_artifact(tmp_path / "new", {"train": [1.0, 1.2]})

    data = compare(tmp_path / "base", tmp_path / "new").to_dict()
    (pair,) = data["pairs"]
    (stage,) = pair["stages"]
    assert (
        {"pairs", "unpaired", "threshold", "comparisons", "significance", "paired",
         "pairs_of_runs"},
        {
            "base",
            "new",
            "stages",
            "hardware_differences",
            "software_differences",
            "hardware_ids",
            "unpaired_stages",
            "relpath",
            "undescribed_hardware_ids",
            "software_ids",
            "metadata_differences",
        },
        {"name", "base", "new", "ratio", "ratio_ci", "verdict", "p_value", "q_value"},
        {"runs", "median_seconds", "mean_seconds", "stdev_seconds"},
        {"base": [], "new": []},
    ) == (set(data), set(pair), set(stage), set(stage["base"]), data["unpaired"])
    assert json.loads(json.dumps(data, allow_nan=False)) == data


@pytest.mark.parametrize("threshold", [-0.01, math.inf, math.nan])
def test_a_threshold_that_is_no_fraction_is_refused_naming_it(
    tmp_path: Path, threshold: float
) -> None:
    with pytest.raises(ValueError, match=f"not {threshold!r}"):
        compare(tmp_path, tmp_path, threshold=threshold)


def test_a_missing_path_is_refused_naming_it(tmp_path: Path) -> None:
    write_artifact(tmp_path / "base", {"train": [1.0]})

    with pytest.raises(FileNotFoundError) as raised:
        compare(tmp_path / "base", tmp_path / "missing")
    assert str(tmp_path / "missing") == raised.value.filename


def test_an_unreadable_directory_without_a_partner_is_refused_naming_it(
    tmp_path: Path,
) -> None:
    for side in ("main", "feature"):
        write_artifact(tmp_path / side / "pursuit" / "ippo", {"train": [1.0, 1.1]})
    broken = write_artifact(tmp_path / "feature" / "spread" / "ippo", {"train": [1.0, 1.1]})
    (broken / "timings.json").write_text('{"train": {"runs": [], "runs": []}}')

    with pytest.raises(SidecarCorruptError) as raised:
        compare(tmp_path / "main", tmp_path / "feature")
    assert str(broken / "timings.json") == raised.value.path


def test_compare_holds_one_pair_of_directories_at_a_time(tmp_path: Path) -> None:
    """Two trees are read pair by pair: the memory compare needs at its peak stays well
    below what holding both trees takes (it held them both before)."""
    import tracemalloc

    from stagetimer import load_tree

    runs = {f"stage{s}": lognormal(s, 1.0 + s, 0.05, 20) for s in range(10)}
    for side in ("main", "feature"):
        for d in range(60):
            write_artifact(tmp_path / side / f"algo{d:02d}", runs)
    peaks = []
    for read in (
        lambda: (load_tree(tmp_path / "main"), load_tree(tmp_path / "feature")),
        lambda: compare(tmp_path / "main", tmp_path / "feature"),
    ):
        tracemalloc.start()
        try:
            read()
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
    held, compared = peaks
    assert compared < held / 3, f"compare peaked at {compared} bytes, both trees take {held}"


def test_tree_pairs_know_their_relative_path(tmp_path: Path) -> None:
    for side in ("main", "feature"):
        write_artifact(tmp_path / side / "pursuit" / "ippo", {"train": [1.0, 1.1]})
        write_artifact(tmp_path / side / "coins" / "ippo", {"train": [1.0, 1.1]})

    comparison = compare(tmp_path / "main", tmp_path / "feature")
    assert ["coins/ippo", "pursuit/ippo"] == [pair.relpath for pair in comparison.pairs]


def test_two_artifact_directories_have_no_relative_path(tmp_path: Path) -> None:
    base = write_artifact(tmp_path / "main", {"train": [1.0, 1.1]})
    new = write_artifact(tmp_path / "feature", {"train": [1.0, 1.1]})

    assert [None] == [pair.relpath for pair in compare(base, new).pairs]


def test_compare_leaves_the_garbage_collector_as_it_found_it(tmp_path: Path) -> None:
    import gc

    write_artifact(tmp_path / "base", {"train": [1.0, 1.1]})
    write_artifact(tmp_path / "new", {"train": [1.0, 1.2]})
    states = []
    for enabled in (True, False):
        gc.enable() if enabled else gc.disable()
        compare(tmp_path / "base", tmp_path / "new")
        states.append(gc.isenabled())
    gc.enable()
    assert [True, False] == states


def test_compare_turns_the_garbage_collector_back_on_after_an_error(tmp_path: Path) -> None:
    import gc

    with pytest.raises(FileNotFoundError):
        compare(tmp_path / "missing", tmp_path / "missing")
    assert gc.isenabled()


def test_a_run_left_out_of_the_statistics_is_left_out_of_the_hardware(tmp_path: Path) -> None:
    other = attrs.evolve(MACHINE, memory=MemoryInfo(limit_bytes=64 * GIB))
    write_artifact(tmp_path / "base", {"train": [1.0, -1.0, 1.1]}, hardware=[MACHINE, other])
    write_artifact(tmp_path / "new", {"train": [1.0, 1.1]})

    (pair,) = compare(tmp_path / "base", tmp_path / "new").pairs
    assert ((hardware_id(MACHINE),), ()) == (pair.base_hardware_ids, pair.hardware_differences)


def test_legacy_runs_without_a_hardware_id_name_no_description(tmp_path: Path) -> None:
    write_artifact(tmp_path / "base", {"train": [1.0, 1.1]})
    (tmp_path / "new").mkdir()
    legacy = {"train": {"total_seconds": 2.1, "runs": [{"seconds": 1.0}, {"seconds": 1.1}]}}
    (tmp_path / "new" / "timings.json").write_text(json.dumps(legacy))

    (pair,) = compare(tmp_path / "base", tmp_path / "new").pairs
    assert ((), ()) == (pair.new_hardware_ids, pair.hardware_differences)


def test_hardware_ids_no_sidecar_describes_are_named_not_called_the_same(tmp_path: Path) -> None:
    write_artifact(tmp_path / "base", {"train": [1.0, 1.1]})
    write_artifact(tmp_path / "new", {"train": [1.0, 1.1]})
    (tmp_path / "new" / "timings_hardware.json").unlink()

    (pair,) = compare(tmp_path / "base", tmp_path / "new").pairs
    assert ((hardware_id(MACHINE),), ()) == (
        pair.undescribed_hardware_ids,
        pair.hardware_differences,
    )
