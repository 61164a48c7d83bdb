"""compare's p-values, Benjamini-Hochberg q-values and paired test, against scipy; and the
false-alarm rate and power of the verdicts, simulated with fixed seeds."""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

import pytest
from helpers.compare_trees import lognormal, write_artifact

from stagetimer import compare
from stagetimer._analysis.compare.model import FASTER, NO_DIFFERENCE, SLOWER, TOO_FEW_RUNS
from stagetimer._analysis.compare.significance import benjamini_hochberg, paired_test, welch_test
from stagetimer._analysis.stats import mean_and_variance

scipy_stats = pytest.importorskip("scipy.stats")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import error_rates  # noqa: E402  (benchmarks/ is no package; the simulation lives there)


def _ln(values: list[float]) -> list[float]:
    return [math.log(max(v, 1e-6)) for v in values]


@pytest.mark.parametrize("seed", range(6))
def test_p_value_equals_scipy_welch_on_log_seconds(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    base = lognormal(seed, 2.0, 0.2, rng.randint(2, 12))
    new = lognormal(seed + 100, 2.0 * rng.uniform(0.8, 1.3), 0.3, rng.randint(2, 12))
    write_artifact(tmp_path / "base", {"s": base})
    write_artifact(tmp_path / "new", {"s": new})

    (stage,) = compare(tmp_path / "base", tmp_path / "new").pairs[0].stages
    expected = scipy_stats.ttest_ind(_ln(new), _ln(base), equal_var=False).pvalue

    assert stage.p_value == pytest.approx(float(expected), rel=1e-9, abs=1e-15)


def test_q_values_equal_scipy_false_discovery_control_over_the_whole_call(
    tmp_path: Path,
) -> None:
    rng = random.Random(3)
    p_values = []
    for d in range(6):
        stages = {}
        for s in range(4):
            base = lognormal(rng.randrange(10**6), 1.0, 0.2, 5)
            new = lognormal(rng.randrange(10**6), rng.choice([1.0, 1.0, 1.3]), 0.2, 5)
            stages[f"s{s}"] = (base, new)
            p_values.append(
                float(scipy_stats.ttest_ind(_ln(new), _ln(base), equal_var=False).pvalue)
            )
        write_artifact(tmp_path / "base" / f"d{d}", {k: v[0] for k, v in stages.items()})
        write_artifact(tmp_path / "new" / f"d{d}", {k: v[1] for k, v in stages.items()})

    result = compare(tmp_path / "base", tmp_path / "new")
    q_values = [s.q_value for pair in result.pairs for s in pair.stages]
    expected = scipy_stats.false_discovery_control(p_values, method="bh")

    assert (24, pytest.approx(list(map(float, expected)), rel=1e-9)) == (
        result.comparisons, q_values,
    )


@pytest.mark.parametrize("seed", range(5))
def test_benjamini_hochberg_equals_scipy(seed: int) -> None:
    rng = random.Random(seed)
    p_values = [rng.random() ** rng.choice([1, 3, 8]) for _ in range(rng.randint(1, 60))]
    p_values += p_values[:3]  # ties

    expected = scipy_stats.false_discovery_control(p_values, method="bh")

    assert pytest.approx(list(map(float, expected)), rel=1e-12) == benjamini_hochberg(p_values)


def test_welch_test_interval_and_p_equal_scipy() -> None:
    a, b = _ln(lognormal(1, 3.0, 0.4, 7)), _ln(lognormal(2, 2.0, 0.1, 4))
    result = welch_test((*mean_and_variance(a), len(a)), (*mean_and_variance(b), len(b)))
    expected = scipy_stats.ttest_ind(a, b, equal_var=False)
    ci = expected.confidence_interval()

    assert pytest.approx((float(ci.low), float(ci.high), float(expected.pvalue)), rel=1e-9) == (
        result.low, result.high, result.p_value,
    )


def test_paired_test_equals_scipy_ttest_rel() -> None:
    a, b = _ln(lognormal(5, 3.0, 0.4, 9)), _ln(lognormal(6, 3.0, 0.4, 9))
    result = paired_test([x - y for x, y in zip(a, b, strict=True)])
    expected = scipy_stats.ttest_rel(a, b)
    ci = expected.confidence_interval()

    assert pytest.approx((float(ci.low), float(ci.high), float(expected.pvalue)), rel=1e-9) == (
        result.low, result.high, result.p_value,
    )


def _seeded(directory: Path, seconds: dict[int, float], label: str | None = None) -> None:
    """One stage ``train`` whose run ``run_idx`` took ``seconds[run_idx]``."""
    import json

    directory.mkdir(parents=True)
    runs = [
        {"seconds": s, "run_idx": i, **({"label": label} if label else {})}
        for i, s in seconds.items()
    ]
    data = {"train": {"total_seconds": sum(seconds.values()), "runs": runs}}
    (directory / "timings.json").write_text(json.dumps(data))


def test_paired_matches_seeds_and_cancels_a_seed_slow_on_both_sides(tmp_path: Path) -> None:
    # Seeds differ by up to 3x between each other, and each is 10 % slower on the new side:
    # unpaired, the spread between seeds hides the change; paired, it cancels out.
    rng = random.Random(4)
    seeds = {i: rng.uniform(1.0, 3.0) for i in range(6)}
    new = {i: s * 1.1 * rng.lognormvariate(0, 0.01) for i, s in seeds.items()}
    _seeded(tmp_path / "base", seeds)
    _seeded(tmp_path / "new", new)

    unpaired = compare(tmp_path / "base", tmp_path / "new").pairs[0].stages[0]
    result = compare(tmp_path / "base", tmp_path / "new", paired=True)
    (stage,) = result.pairs[0].stages
    logs = [math.log(new[i]) - math.log(seeds[i]) for i in range(6)]
    expected = scipy_stats.ttest_rel(_ln(list(new.values())), _ln(list(seeds.values())))

    assert (NO_DIFFERENCE, SLOWER, 6, (0, 0), True, 6) == (
        unpaired.verdict, stage.verdict, stage.pairs_of_runs, stage.unmatched_runs,
        result.paired, result.pairs_of_runs,
    )
    assert pytest.approx((math.exp(sum(logs) / 6), float(expected.pvalue)), rel=1e-9) == (
        stage.ratio, stage.p_value,
    )


def test_paired_leaves_unmatched_runs_out_and_counts_them(tmp_path: Path) -> None:
    _seeded(tmp_path / "base", {0: 1.0, 1: 1.1, 2: 1.2, 7: 5.0})
    _seeded(tmp_path / "new", {0: 1.0, 1: 1.2, 2: 1.1, 8: 9.0, 9: 9.0})

    (stage,) = compare(tmp_path / "base", tmp_path / "new", paired=True).pairs[0].stages
    data = stage.to_dict()

    assert (3, (1, 2), 3, {"base": 1, "new": 2}) == (
        stage.pairs_of_runs, stage.unmatched_runs, data["pairs_of_runs"], data["unmatched_runs"],
    )


def test_paired_runs_match_by_label_too(tmp_path: Path) -> None:
    _seeded(tmp_path / "base", {0: 1.0, 1: 1.1}, label="a")
    _seeded(tmp_path / "new", {0: 1.0, 1: 1.2}, label="b")

    (stage,) = compare(tmp_path / "base", tmp_path / "new", paired=True).pairs[0].stages

    assert (0, (2, 2), TOO_FEW_RUNS, None) == (
        stage.pairs_of_runs, stage.unmatched_runs, stage.verdict, stage.ratio,
    )


def test_a_change_significant_alone_is_no_verdict_among_many_comparisons(tmp_path: Path) -> None:
    # p about 0.01: alone (1 comparison) slower; beside 99 unchanged stages, q about 0.5.
    base, new = [1.0, 1.1, 0.9, 1.05, 0.95], [1.2, 1.3, 1.1, 1.25, 1.15]
    write_artifact(tmp_path / "alone" / "base", {"s": base})
    write_artifact(tmp_path / "alone" / "new", {"s": new})
    same = {f"t{i}": lognormal(i, 1.0, 0.2, 5) for i in range(99)}
    write_artifact(tmp_path / "many" / "base", {"s": base, **same})
    write_artifact(tmp_path / "many" / "new", {"s": new, **same})

    alone = compare(tmp_path / "alone" / "base", tmp_path / "alone" / "new")
    many = compare(tmp_path / "many" / "base", tmp_path / "many" / "new")
    first = many.pairs[0].stages[0]

    assert (SLOWER, NO_DIFFERENCE, 100, True) == (
        alone.pairs[0].stages[0].verdict, first.verdict, many.comparisons,
        first.q_value is not None and first.q_value > 0.05 >= (first.p_value or 1),
    )


def test_identical_trees_fail_the_gate_in_at_most_5_percent_of_trials() -> None:
    # Before the adjustment, 66 of 100 trials of 10 directories failed, and all of 100
    # trials of 100 directories.
    for directories in (10, 60):
        rates = error_rates.aa_trials(120, directories, seed=20 + directories)
        assert rates.gate_failures <= 0.05 * rates.trials, (directories, rates)


def test_planted_regressions_are_found() -> None:
    # 10 runs a side, 1.5x slower in 10 of 300 stages: most found, few false.
    rates = error_rates.power_trials(30, 60, 10, runs=10, seed=21)
    assert (True, True) == (
        rates.found >= 0.5 * rates.planted, rates.false_slower <= 0.05 * rates.found,
    ), rates


def test_a_verdict_on_one_pair_needs_q_and_threshold(tmp_path: Path) -> None:
    write_artifact(tmp_path / "base", {"s": [1.0, 1.01, 0.99, 1.0]})
    write_artifact(tmp_path / "new", {"s": [0.5, 0.51, 0.49, 0.5]})

    (stage,) = compare(tmp_path / "base", tmp_path / "new").pairs[0].stages

    assert (FASTER, stage.p_value) == (stage.verdict, stage.q_value)
