"""A toy training loop, timed with stagetimer: the pattern for your own experiment.

Each seed trains a tiny multilayer perceptron (pure Python, no framework) on a noisy
sine for a few epochs, evaluates it and saves a checkpoint. The stages recorded into
the artifact directory ``OUT/mlp`` are ``train`` (all epochs of one seed), ``evaluate``
and ``save_checkpoint``, one run per seed (``run_idx=seed``), with the hyperparameters
as run metadata. Then ``stagetimer report OUT`` prints how long each stage took.

    python examples/train_loop.py                         # writes examples/out/mlp
    python examples/train_loop.py --workers 2             # seeds in a fork pool
    python examples/train_loop.py --workers 2 --start-method spawn

With ``--workers N`` the seeds run in a ``multiprocessing`` pool and write one directory
at the same time, so the recorder uses ``policy="upsert"`` (each seed replaces only its
own run) and each worker enters the recorder it is handed (``with rec:``), which works
under both start methods.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import random
from pathlib import Path

from stagetimer import Recorder, stage, timed_stage

__all__ = ["MLP", "evaluate", "main", "make_data", "save_checkpoint", "train_epoch", "train_seed"]

# Under the clone, beside this file (ignored by git): every user of a shared machine
# writes into their own clone, never into one fixed folder that the first user owns.
DEFAULT_OUT = Path(__file__).resolve().parent / "out"
Data = list[tuple[float, float]]


def make_data(n: int, seed: int) -> Data:
    """``n`` points of ``sin(x)`` with a little noise, ``x`` in [-3, 3]."""
    rng = random.Random(seed)
    points = []
    for _ in range(n):
        x = rng.uniform(-3.0, 3.0)
        points.append((x, math.sin(x) + rng.gauss(0.0, 0.1)))
    return points


class MLP:
    """One input, ``hidden`` tanh units, one output; plain SGD on the squared error."""

    def __init__(self, hidden: int, seed: int) -> None:
        rng = random.Random(seed)
        self.w1 = [rng.gauss(0.0, 1.0) for _ in range(hidden)]
        self.b1 = [0.0] * hidden
        self.w2 = [rng.gauss(0.0, 1.0 / math.sqrt(hidden)) for _ in range(hidden)]
        self.b2 = 0.0

    def forward(self, x: float) -> tuple[float, list[float]]:
        h = [math.tanh(w * x + b) for w, b in zip(self.w1, self.b1, strict=True)]
        return sum(w * a for w, a in zip(self.w2, h, strict=True)) + self.b2, h

    def step(self, x: float, y: float, lr: float) -> None:
        out, h = self.forward(x)
        grad = 2.0 * (out - y)
        for j, a in enumerate(h):
            back = grad * self.w2[j] * (1.0 - a * a)
            self.w2[j] -= lr * grad * a
            self.w1[j] -= lr * back * x
            self.b1[j] -= lr * back
        self.b2 -= lr * grad


def train_epoch(model: MLP, data: Data, lr: float, rng: random.Random) -> None:
    """One pass over the shuffled training data."""
    order = list(data)
    rng.shuffle(order)
    for x, y in order:
        model.step(x, y, lr)


@timed_stage("evaluate", run_idx="seed")
def evaluate(model: MLP, data: Data, seed: int) -> float:
    """Mean squared error on held-out data; one run of stage ``evaluate`` per seed."""
    return sum((model.forward(x)[0] - y) ** 2 for x, y in data) / len(data)


@timed_stage("save_checkpoint", run_idx="seed")
def save_checkpoint(model: MLP, directory: Path, seed: int) -> Path:
    """Write the weights as JSON beside the sidecars; one run per seed."""
    path = directory / "checkpoints" / f"seed_{seed}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(vars(model)), encoding="utf-8")
    return path


def train_seed(rec: Recorder, seed: int, epochs: int, hidden: int, lr: float) -> str:
    """Train, evaluate and save one seed, recording into ``rec``; return a summary line.

    ``with rec:`` makes the recorder active here, so the same function serves the main
    process and a pool worker started by fork or by spawn (the recorder pickles).
    """
    train_data, test_data = make_data(400, seed), make_data(200, 10_000 + seed)
    rng = random.Random(seed)
    with rec:
        model = MLP(hidden, seed)
        with stage("train", run_idx=seed, epochs=epochs, hidden=hidden, lr=lr) as timing:
            for _ in range(epochs):
                train_epoch(model, train_data, lr, rng)
        mse = evaluate(model, test_data, seed=seed)
        save_checkpoint(model, Path(rec.directory), seed=seed)
    return f"seed {seed}: train {timing.seconds:.3f} s over {epochs} epochs, test MSE {mse:.4f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="where the artifact directory 'mlp' goes (default: %(default)s)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--hidden", type=int, default=16)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--workers", type=int, default=0,
                        help="run the seeds in a multiprocessing pool of this size")
    parser.add_argument("--start-method", choices=("fork", "spawn", "forkserver"),
                        default=None, help="the pool's start method (default: the platform's)")
    args = parser.parse_args(argv)
    if args.seeds < 1 or args.epochs < 1 or args.hidden < 1 or args.workers < 0:
        parser.error("--seeds, --epochs and --hidden must be >= 1, --workers >= 0")

    directory = args.out / "mlp"
    settings = (args.epochs, args.hidden, args.lr)
    if args.workers == 0:
        rec = Recorder(directory, expected_runs=args.seeds)
        lines = [train_seed(rec, seed, *settings) for seed in range(args.seeds)]
    else:
        # Seeds finish in any order: each replaces only its own run.
        rec = Recorder(directory, policy="upsert", expected_runs=args.seeds)
        context = multiprocessing.get_context(args.start_method)
        with context.Pool(args.workers) as pool:
            lines = pool.starmap(train_seed, [(rec, s, *settings) for s in range(args.seeds)])
    print("\n".join(lines))
    print(f"timings in {directory}; see them with: stagetimer report {args.out}")


if __name__ == "__main__":
    main()
