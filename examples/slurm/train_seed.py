"""Train one seed and record how long it took, from a Slurm job-array task.

Every task of the array writes the same artifact directory at the same time, so
the recorder uses ``policy="upsert"``: each task replaces only the run with its
own ``run_idx`` and the runs stay sorted by seed, whatever order the tasks end
in. The hardware each task could use (its CPUs, its memory allocation) is
captured in the task and stored beside the timings, once for all the tasks that
could use the same; each run keeps its task's job id, array task id and node in
its ``job`` key.

    python train_seed.py --seed 0 --out exports/ippo     # outside Slurm
    sbatch seed_array.sbatch                              # one task per seed
"""

from __future__ import annotations

import argparse
import os
import random

from stagetimer import Recorder, stage


def train(seed: int) -> float:
    """Stand-in for the real training: a moment of seeded CPU work."""
    rng = random.Random(seed)
    total = 0.0
    for _ in range(2_000_000):
        total += rng.random()
    return total


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--seed",
        type=int,
        default=os.environ.get("SLURM_ARRAY_TASK_ID"),
        help="seed and run_idx (default: $SLURM_ARRAY_TASK_ID)",
    )
    parser.add_argument(
        "--out",
        default=os.environ.get("STAGETIMER_DIR"),
        help="artifact directory shared by all seeds (default: $STAGETIMER_DIR)",
    )
    args = parser.parse_args(argv)
    if args.seed is None or args.out is None:
        parser.error("give --seed and --out (or run as a Slurm array task with STAGETIMER_DIR)")

    with Recorder(args.out, policy="upsert"), stage("ippo_train", run_idx=args.seed) as timer:
        train(args.seed)
    print(f"seed {args.seed}: ippo_train took {timer.seconds:.2f} s, recorded in {args.out}")


if __name__ == "__main__":
    main()
