"""A temporal-game experiment timed with stagetimer: train, save, verify, continue, rank.

Shaped like the orchestration stagetimer was written for: every selected
algorithm owns an artifact directory (``exports/gridworlds/pursuit/classic_3/ippo``,
``exports/gridworlds/coins/own_coin_first/2/iql_cer``) holding its checkpoints
and the two timing sidecars. Per seed it trains (``<algo>_train``), saves a
checkpoint (``checkpoint_save``) and verifies it (``nashconv``); when NashConv
stays above a threshold it continues from the checkpoint (the ``*_auto_resume``
stages); optionally it scores ``satisfaction``; after the seeds it ranks the
seeds' policies once (``alpharank``).

The learners are real but tiny (two independent learners on a 2x2 matrix game),
so the whole run takes a few seconds with the standard library only:

    python examples/temporal_game_experiment.py --exports /tmp/stagetimer-demo
    stagetimer report /tmp/stagetimer-demo

Crash and resume: ``--interrupt-after K`` kills the process (SIGKILL) after K
recorded stages; ``--resume`` counts, per directory, the runs whose checkpoints
are complete (consecutive from run 0) and continues from there with
``Recorder(dir, resume_partial_runs=True, completed_runs=n)``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import signal
import sys
import zlib
from typing import Any

from stagetimer import Recorder, stage, stages, timed_stage

Game = tuple[list[list[float]], list[list[float]]]  # row player's and column player's payoffs
Policy = list[float]  # probabilities of the two actions

# Pursuit: two predators hunt together (a stag hunt: chasing the stag pays only together).
# Coins: each agent may take its own coin or grab the other's (a prisoner's dilemma).
ENVIRONMENTS: dict[str, tuple[str, Game]] = {
    "pursuit": ("gridworlds/pursuit/classic_3", ([[4, 0], [3, 3]], [[4, 3], [0, 3]])),
    "coins": ("gridworlds/coins/own_coin_first/2", ([[3, 0], [5, 1]], [[3, 5], [0, 1]])),
}
ALGORITHMS = tuple(name.removesuffix("_train") for name in stages.TRAINING_STAGES)
CHECKPOINTS = "checkpoints"


# -- the learners ----------------------------------------------------------------------------


def softmax(theta: list[float]) -> Policy:
    top = max(theta)
    weights = [math.exp(t - top) for t in theta]
    return [w / sum(weights) for w in weights]


def expected(game: Game, x: Policy, y: Policy) -> tuple[float, float]:
    """Both players' expected payoffs when they play ``x`` and ``y``."""
    a, b = game
    return (
        sum(x[i] * y[j] * a[i][j] for i in range(2) for j in range(2)),
        sum(x[i] * y[j] * b[i][j] for i in range(2) for j in range(2)),
    )


def train(algorithm: str, game: Game, seed: int, steps: int, theta: list[list[float]]) -> None:
    """Learn in place: ``theta[p]`` are player p's action preferences (policy = softmax).

    The ``ippo`` family follows the policy gradient; the others learn action values
    (``theta`` holds value / temperature). ``*_cer`` also replays past experience.
    """
    rng = random.Random(zlib.crc32(f"{algorithm}/{seed}/{theta}".encode()))
    gradient = "ippo" in algorithm
    replay = algorithm.endswith("_cer")
    buffer: list[tuple[int, int, float, float]] = []
    baseline = [0.0, 0.0]
    lr, temperature = 0.05, 0.25

    def update(a0: int, a1: int, r0: float, r1: float) -> None:
        for p, (act, r) in enumerate(((a0, r0), (a1, r1))):
            if gradient:
                pi = softmax(theta[p])
                advantage = r - baseline[p]
                for k in range(2):
                    theta[p][k] += lr * advantage * ((k == act) - pi[k])
                baseline[p] += 0.1 * (r - baseline[p])
            else:
                q = theta[p][act] * temperature
                theta[p][act] = (q + lr * (r - q)) / temperature

    a, b = game
    for _ in range(steps):
        pis = [softmax(t) for t in theta]
        explore = 0.0 if gradient else 0.1
        a0, a1 = (
            rng.randrange(2) if rng.random() < explore else int(rng.random() >= pi[0])
            for pi in pis
        )
        update(a0, a1, a[a0][a1], b[a0][a1])
        if replay:
            buffer.append((a0, a1, a[a0][a1], b[a0][a1]))
            update(*buffer[rng.randrange(len(buffer))])


def nashconv_of(game: Game, x: Policy, y: Policy) -> float:
    """How much both players could gain by best-responding (0 at a Nash equilibrium)."""
    a, b = game
    v0, v1 = expected(game, x, y)
    best0 = max(sum(y[j] * a[i][j] for j in range(2)) for i in range(2))
    best1 = max(sum(x[i] * b[i][j] for i in range(2)) for j in range(2))
    return (best0 - v0) + (best1 - v1)


def fixation(gain: float, alpha: float = 5.0, population: int = 20) -> float:
    """Probability that a mutant gaining ``gain`` takes over (alpha-Rank, Fermi dynamics)."""
    if gain == 0:
        return 1.0 / population
    x, y = -alpha * gain, -alpha * population * gain
    if gain > 0:
        return math.expm1(x) / math.expm1(y)
    # x, y > 0 and y may overflow exp(): expm1(x) / expm1(y) rewritten.
    return math.exp(x - y) * -math.expm1(-x) / -math.expm1(-y)


def alpha_rank(game: Game, policies: list[tuple[Policy, Policy]]) -> list[float]:
    """Mass of each seed's policies in the stationary distribution of the meta-game."""
    k = len(policies)
    profiles = [(i, j) for i in range(k) for j in range(k)]
    payoff = {(i, j): expected(game, policies[i][0], policies[j][1]) for i, j in profiles}
    moves: dict[tuple[int, int], list[tuple[tuple[int, int], float]]] = {}
    for i, j in profiles:
        out = [((m, j), fixation(payoff[m, j][0] - payoff[i, j][0])) for m in range(k) if m != i]
        out += [((i, m), fixation(payoff[i, m][1] - payoff[i, j][1])) for m in range(k) if m != j]
        scale = 1.0 / max(1, 2 * (k - 1))
        moves[i, j] = [(to, p * scale) for to, p in out]
    mass = dict.fromkeys(profiles, 1.0 / len(profiles))
    for _ in range(300):
        following = {p: 0.0 for p in profiles}
        for p, m in mass.items():
            leave = 0.0
            for to, prob in moves[p]:
                following[to] += m * prob
                leave += prob
            following[p] += m * (1.0 - leave)
        mass = following
    return [sum(m for (i, j), m in mass.items() if i == s) / 2
            + sum(m for (i, j), m in mass.items() if j == s) / 2 for s in range(k)]


# -- checkpoints -----------------------------------------------------------------------------


def write_json(path: str, value: Any) -> None:
    """Atomically, so that a crash never leaves half a checkpoint."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(value, f, indent=2)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def checkpoint_path(directory: str, run_idx: int) -> str:
    return os.path.join(directory, CHECKPOINTS, f"run_{run_idx:03d}.json")


def read_checkpoint(directory: str, run_idx: int, expect: dict[str, Any]) -> dict[str, Any] | None:
    """The checkpoint of run ``run_idx`` if it is complete and belongs to this experiment."""
    try:
        with open(checkpoint_path(directory, run_idx)) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("run_idx") != run_idx or not data.get("complete"):
        return None
    if any(data.get(key) != value for key, value in expect.items()):
        return None
    theta = data.get("theta")
    ok = isinstance(theta, list) and len(theta) == 2 and all(
        isinstance(t, list) and len(t) == 2 and all(isinstance(v, (int, float)) for v in t)
        for t in theta
    )
    return data if ok else None


def completed_runs(directory: str, seeds: int, expect: dict[str, Any]) -> int:
    """How many runs, consecutive from run 0, have a complete checkpoint."""
    n = 0
    while n < seeds and read_checkpoint(directory, n, expect) is not None:
        n += 1
    return n


def _save(directory: str, run_idx: int, checkpoint: dict[str, Any]) -> str:
    os.makedirs(os.path.join(directory, CHECKPOINTS), exist_ok=True)
    path = checkpoint_path(directory, run_idx)
    write_json(path, {**checkpoint, "run_idx": run_idx, "complete": False})
    return path


@timed_stage("checkpoint_save", run_idx="run_idx")
def checkpoint_save(directory: str, run_idx: int, checkpoint: dict[str, Any]) -> str:
    return _save(directory, run_idx, checkpoint)


@timed_stage("nashconv", run_idx="run_idx")
def nashconv(game: Game, theta: list[list[float]], run_idx: int) -> float:
    return nashconv_of(game, softmax(theta[0]), softmax(theta[1]))


# A NashConv-triggered continuation calls the same functions through ``.auto_resume``:
# ``checkpoint_save.auto_resume(...)`` is recorded as ``checkpoint_save_auto_resume``.


@timed_stage("satisfaction", run_idx="run_idx")
def satisfaction(game: Game, theta: list[list[float]], run_idx: int) -> list[float]:
    """Each player's payoff as a share of the best payoff the game offers it."""
    values = expected(game, softmax(theta[0]), softmax(theta[1]))
    return [v / max(max(row) for row in m) for v, m in zip(values, game, strict=True)]


@timed_stage("alpharank")
def alpharank(directory: str, game: Game, runs: int, expect: dict[str, Any]) -> list[float]:
    """Rank the seeds' policies against each other once, from their checkpoints."""
    policies = []
    for i in range(runs):
        data = read_checkpoint(directory, i, expect)
        if data is None:
            raise RuntimeError(f"run {i} has no complete checkpoint in {directory}")
        policies.append((softmax(data["theta"][0]), softmax(data["theta"][1])))
    mass = alpha_rank(game, policies)
    write_json(os.path.join(directory, "alpharank.json"), {"runs": runs, "mass": mass})
    return mass


# -- the orchestration -----------------------------------------------------------------------


class Progress:
    """Prints a line per recorded stage; kills the process after ``interrupt_after`` of them."""

    def __init__(self, interrupt_after: int | None) -> None:
        self.recorded = 0
        self.interrupt_after = interrupt_after

    def done(self, line: str) -> None:
        print(line, flush=True)
        self.recorded += 1
        if self.recorded == self.interrupt_after:
            print(f"--interrupt-after {self.recorded}: killing this process as a crash would",
                  file=sys.stderr, flush=True)
            if hasattr(signal, "SIGKILL"):
                os.kill(os.getpid(), signal.SIGKILL)
            os._exit(137)


def run_directory(args: argparse.Namespace, env: str, algorithm: str, progress: Progress) -> None:
    relative, game = ENVIRONMENTS[env]
    directory = os.path.join(args.exports, relative, algorithm)
    expect = {"environment": env, "algorithm": algorithm, "train_steps": args.train_steps}
    train_stage = f"{algorithm}_train"
    if args.resume:
        start = completed_runs(directory, args.seeds, expect)
        recorder = Recorder(directory, resume_partial_runs=True, completed_runs=start)
        print(f"{directory}: resuming after {start} complete run(s) of {args.seeds}", flush=True)
    else:
        start = 0
        recorder = Recorder(directory)
        for i in range(args.seeds):  # stale checkpoints would fool a later --resume
            if os.path.exists(checkpoint_path(directory, i)):
                os.unlink(checkpoint_path(directory, i))
        print(f"{directory}: {args.seeds} seed(s)", flush=True)
    with recorder:
        for i in range(start, args.seeds):
            theta = [[0.0, 0.0], [0.0, 0.0]]
            with stage(train_stage, run_idx=i) as timer:
                train(algorithm, game, i, args.train_steps, theta)
            progress.done(f"  run {i}  {train_stage:<28} {timer.seconds:.3f} s")
            checkpoint = {**expect, "seed": i, "theta": theta}
            path = checkpoint_save(directory, i, checkpoint)
            progress.done(f"  run {i}  {'checkpoint_save':<28} {os.path.relpath(path, directory)}")
            gap = nashconv(game, theta, i)
            progress.done(f"  run {i}  {'nashconv':<28} NashConv value {gap:.4f}")
            resumed = gap > args.nashconv_threshold
            if resumed:  # NashConv too high: continue training from the checkpoint
                with stage(stages.auto_resume(train_stage), run_idx=i) as timer:
                    train(algorithm, game, i, args.train_steps // 2, theta)
                progress.done(f"  run {i}  {stages.auto_resume(train_stage):<28} "
                              f"{timer.seconds:.3f} s (NashConv {gap:.4f} > "
                              f"{args.nashconv_threshold:g})")
                checkpoint["theta"] = theta
                checkpoint_save.auto_resume(directory, i, checkpoint)
                progress.done(f"  run {i}  {'checkpoint_save_auto_resume':<28} saved")
                gap = nashconv.auto_resume(game, theta, i)
                progress.done(f"  run {i}  {'nashconv_auto_resume':<28} NashConv value {gap:.4f}")
            result: dict[str, Any] = {"nashconv": gap, "auto_resumed": resumed}
            if args.satisfaction:
                result["satisfaction"] = satisfaction(game, theta, i)
                shares = ", ".join(f"{s:.2f}" for s in result["satisfaction"])
                progress.done(f"  run {i}  {'satisfaction':<28} share of best payoff per "
                              f"player {shares}")
            # The run is complete only now: --resume trusts exactly the complete ones.
            write_json(checkpoint_path(directory, i),
                       {**checkpoint, "run_idx": i, "complete": True, **result})
        if args.alpharank:
            mass = alpharank(directory, game, args.seeds, expect)
            masses = " ".join(f"{m:.2f}" for m in mass)
            progress.done(f"  {'alpharank':<35} alpha-Rank mass per seed (0..{len(mass) - 1}) "
                          f"{masses}")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exports", default="exports", metavar="DIR",
                        help="where the artifact directories go (default: ./exports)")
    parser.add_argument("--seeds", type=int, default=3, metavar="N", help="runs per algorithm")
    parser.add_argument("--algorithms", nargs="+", default=["ippo", "iql_cer"],
                        choices=ALGORITHMS, metavar="ALGO",
                        help="default: ippo iql_cer; any of " + ", ".join(ALGORITHMS))
    parser.add_argument("--environments", nargs="+", default=list(ENVIRONMENTS),
                        choices=list(ENVIRONMENTS), metavar="ENV",
                        help="default: pursuit coins")
    parser.add_argument("--train-steps", type=int, default=4000, metavar="N",
                        help="learning steps per seed (default: 4000, about 0.1 s)")
    parser.add_argument("--nashconv-threshold", type=float, default=0.02, metavar="X",
                        help="continue training (auto-resume) when NashConv is above X "
                        "(default: 0.02; -1 always, inf never)")
    parser.add_argument("--satisfaction", action="store_true",
                        help="also time the optional satisfaction stage")
    parser.add_argument("--no-alpharank", dest="alpharank", action="store_false",
                        help="skip the one-shot alpharank stage")
    parser.add_argument("--interrupt-after", type=int, metavar="K",
                        help="crash (SIGKILL) after K recorded stages")
    parser.add_argument("--resume", action="store_true",
                        help="continue after the runs whose checkpoints are complete")
    args = parser.parse_args(argv)
    if args.seeds < 1 or args.train_steps < 1:
        parser.error("--seeds and --train-steps must be at least 1")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    progress = Progress(args.interrupt_after)
    # In the order `stagetimer report` lists the directories: sorted by relative path.
    order = sorted(
        (os.path.join(ENVIRONMENTS[env][0], algorithm), env, algorithm)
        for env in args.environments
        for algorithm in args.algorithms
    )
    for _, env, algorithm in order:
        run_directory(args, env, algorithm, progress)
    print(f"done: {progress.recorded} stages recorded; see them with: "
          f"stagetimer report {args.exports}")


if __name__ == "__main__":
    main()
