"""Simulation: how often ``compare`` cries wolf on identical trees, and how often it finds
a real regression.

Run:  python benchmarks/error_rates.py

- **A/A false alarms.** Both trees are drawn from one distribution (log-normal, sigma
  0.2, the spread of a shared machine), every stage on both sides; a trial fails when
  the ``--fail-if-slower 5`` gate would (a stage judged "slower" by more than 5 %).
  With the Benjamini-Hochberg adjustment over every stage of the call, at most 5 % of
  trials may fail, whatever the size of the tree.
- **Power.** The same trees with a 1.5x slowdown planted in some stages of the new
  side: the share of planted stages judged "slower", and of stages called "slower"
  that were not planted.
- **On disk.** The issue's case once through the command line: two trees of 300
  directories x 5 stages x 5 runs written in the file format, ``compare
  --fail-if-slower 5`` (before the adjustment: 73 of 1,500 stages flagged, exit 2).

Every draw comes from ``random.Random(seed)``: the figures are the same on every run.
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
from collections.abc import Sequence
from typing import Any

import attrs

__all__ = ["Rates", "aa_trials", "main", "on_disk", "power_trials", "tree"]

SIGMA = 0.2
GATE = 0.05  # --fail-if-slower 5


def _stage(rng: random.Random, median: float, runs: int, scale: float) -> dict[str, Any]:
    seconds = [scale * median * rng.lognormvariate(0.0, SIGMA) for _ in range(runs)]
    return {
        "total_seconds": sum(seconds, 0.0),
        "runs": [{"seconds": s, "run_idx": i} for i, s in enumerate(seconds)],
    }


def tree(
    rng: random.Random, directories: int, stages: int, runs: int,
    planted: frozenset[tuple[int, int]] = frozenset(), scale: float = 1.5,
) -> list[dict[str, Any]]:
    """The parsed ``timings.json`` of each directory; stage ``(d, s)`` in ``planted`` is
    ``scale`` times slower."""
    return [
        {
            f"stage{s}": _stage(rng, 1.0 + s, runs, scale if (d, s) in planted else 1.0)
            for s in range(stages)
        }
        for d in range(directories)
    ]


def _artifacts(side: str, data: Sequence[dict[str, Any]]) -> list[Any]:
    from stagetimer._analysis.tree import Artifact
    from stagetimer._store.records import HardwareSidecar

    return [
        Artifact(f"{side}/d{d}", side, f"d{d}", HardwareSidecar(), timings)
        for d, timings in enumerate(data)
    ]


@attrs.frozen
class Rates:
    """What a batch of trials found."""

    trials: int
    #: trials in which the gate failed (a stage "slower" by more than 5 %)
    gate_failures: int
    #: stages judged faster or slower, over all trials, and the stages compared
    verdicts: int
    stages: int
    #: planted regressions found "slower", of those planted; slower verdicts not planted
    found: int = 0
    planted: int = 0
    false_slower: int = 0


def _trial(
    rng: random.Random, directories: int, stages: int, runs: int, planted_count: int,
    paired: bool,
) -> tuple[bool, int, int, int, int]:
    from stagetimer._analysis.compare.model import FASTER, SLOWER
    from stagetimer._analysis.compare.suites import compare_trees

    cells = [(d, s) for d in range(directories) for s in range(stages)]
    planted = frozenset(rng.sample(cells, planted_count))
    base = _artifacts("base", tree(rng, directories, stages, runs))
    new = _artifacts("new", tree(rng, directories, stages, runs, planted))
    result = compare_trees(base, new, paired=paired)
    verdicts = found = false_slower = 0
    for d, pair in enumerate(result.pairs):
        for s, stage in enumerate(pair.stages):
            if stage.verdict in (FASTER, SLOWER):
                verdicts += 1
            if stage.verdict == SLOWER:
                if (d, s) in planted:
                    found += 1
                else:
                    false_slower += 1
    failed = bool(result.slower_than(GATE)) if not planted else False
    return failed, verdicts, directories * stages, found, false_slower


def aa_trials(
    trials: int, directories: int, stages: int = 5, runs: int = 5, seed: int = 20,
    paired: bool = False,
) -> Rates:
    """``trials`` A/A comparisons of two identical trees."""
    rng = random.Random(seed)
    failures = verdicts = total = 0
    for _ in range(trials):
        failed, v, n, _, _ = _trial(rng, directories, stages, runs, 0, paired)
        failures += failed
        verdicts += v
        total += n
    return Rates(trials, failures, verdicts, total)


def power_trials(
    trials: int, directories: int, planted: int, stages: int = 5, runs: int = 5,
    seed: int = 21, paired: bool = False,
) -> Rates:
    """``trials`` comparisons with ``planted`` 1.5x regressions in the new tree each."""
    rng = random.Random(seed)
    found = false_slower = verdicts = total = 0
    for _ in range(trials):
        _, v, n, f, x = _trial(rng, directories, stages, runs, planted, paired)
        verdicts += v
        total += n
        found += f
        false_slower += x
    return Rates(trials, 0, verdicts, total, found, planted * trials, false_slower)


def on_disk(directories: int = 300, stages: int = 5, runs: int = 5, seed: int = 7) -> str:
    """The issue's A/A case through ``stagetimer compare --fail-if-slower 5``."""
    from stagetimer._cli import main as cli
    from stagetimer._store.sidecar import dumps_timings

    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as top:
        for side in ("base", "new"):
            for d, data in enumerate(tree(rng, directories, stages, runs)):
                directory = os.path.join(top, side, f"env{d // 30}", f"algo{d % 30}")
                os.makedirs(directory)
                with open(os.path.join(directory, "timings.json"), "w", encoding="utf-8") as f:
                    f.write(dumps_timings(data))
        with open(os.devnull, "w") as sink:
            stdout, sys.stdout = sys.stdout, sink
            try:
                status = cli(["compare", "--json", "--fail-if-slower", "5",
                              os.path.join(top, "base"), os.path.join(top, "new")])
            finally:
                sys.stdout = stdout
        from stagetimer._analysis.compare.suites import compare

        result = compare(os.path.join(top, "base"), os.path.join(top, "new"))
    flagged = sum(s.verdict in ("faster", "slower") for p in result.pairs for s in p.stages)
    return (
        f"{directories} dirs x {stages} stages x {runs} runs on disk: {flagged} of "
        f"{result.comparisons} stages flagged, exit status {status}"
    )


def _share(part: int, whole: int) -> str:
    return f"{part} of {whole} ({100 * part / whole:.1f} %)" if whole else "-"


def main() -> int:
    """Print the figures; exit 1 when the A/A rate exceeds 5 %."""
    print(on_disk())
    ok = True
    for directories in (10, 100, 300):
        rates = aa_trials(400, directories)
        ok &= rates.gate_failures <= 0.05 * rates.trials
        print(
            f"A/A, {directories} dirs x 5 stages x 5 runs, {rates.trials} trials: gate failed "
            f"in {_share(rates.gate_failures, rates.trials)}; stages flagged "
            f"{_share(rates.verdicts, rates.stages)}"
        )
    for directories, planted in ((10, 5), (100, 10), (300, 30)):
        for runs in (5, 10):
            rates = power_trials(100, directories, planted, runs=runs)
            print(
                f"power, {directories} dirs x 5 stages x {runs} runs, {planted} planted 1.5x "
                f"x {rates.trials} trials: found {_share(rates.found, rates.planted)}; "
                f"slower verdicts not planted: {rates.false_slower}"
            )
    print("goal: A/A gate failures <= 5 % of trials:", "ok" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
