"""Benchmark: what the Keras callback adds to a real fit.

Run:  python benchmarks/bench_integrations.py        (or through benchmarks/run.py)

One process (Keras 3 on the JAX backend, CPU) fits a small model (two dense layers of
1,024, batches of 64) for 3 epochs of 150 steps, alternately with ``StageTimerCallback``
and without it, after one warm-up fit of each (JAX compiles there). The figure is the median of the
paired differences against the median fit without the callback: the goal is at most
1 % of the fit, or, where a loaded machine's saves cost more than that, at most one save
per epoch besides the fit's own (the saves of one fit are counted from its records).
Needs ``pip install 'stagetimer[keras]' jax``; without them the row says so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

__all__ = ["GOAL", "figures", "main"]

GOAL = 0.01  # the callback's share of a fit
EPOCHS, STEPS = 3, 150

_CHILD = r"""
import json, os, statistics, sys, tempfile, time
os.environ["KERAS_BACKEND"] = "jax"
import keras, numpy as np
from stagetimer.integrations.keras import StageTimerCallback

turns, epochs, steps = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(0)
x = rng.random((steps * 64, 256), dtype="float32")
y = rng.random((steps * 64, 1), dtype="float32")
keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((256,)), keras.layers.Dense(1024, activation="relu"),
                          keras.layers.Dense(1024, activation="relu"), keras.layers.Dense(1)])
model.compile("sgd", "mse")
root = tempfile.mkdtemp()

def fit(callbacks):
    started = time.perf_counter()
    model.fit(x, y, epochs=epochs, batch_size=64, callbacks=callbacks, verbose=0)
    return time.perf_counter() - started

def timed(i):
    return [StageTimerCallback(os.path.join(root, "fits"), run_idx=i + 1)]

fit([]); fit(timed(-1))  # JAX compiles here
with_cb, without = [], []
for i in range(turns):
    if i % 2:
        without.append(fit([])); with_cb.append(fit(timed(i)))
    else:
        with_cb.append(fit(timed(i))); without.append(fit([]))
data = json.load(open(os.path.join(root, "fits", "timings.json")))
saves = sum(
    r.get("run_idx") == 1 for v in data.values() if isinstance(v, dict) and "runs" in v
    for r in v["runs"]
)
diffs = [w - o for w, o in zip(with_cb, without)]
print(json.dumps({"with": statistics.median(with_cb), "without": statistics.median(without),
                  "diff": statistics.median(diffs), "saves": saves}))
"""


def figures(turns: int) -> list[tuple[str, str, str, bool | None]]:
    """The row of ``benchmarks/run.py``: (figure, measured, goal, ok)."""
    figure = f"Keras fit of {EPOCHS * STEPS} steps with StageTimerCallback"
    env = {**os.environ, "KERAS_BACKEND": "jax"}
    with tempfile.TemporaryDirectory() as scratch:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, str(max(turns * 2 + 1, 5)), str(EPOCHS), str(STEPS)],
            capture_output=True, text=True, timeout=1200, env=env, cwd=scratch,
        )
    if done.returncode != 0:
        missing = "No module named" in done.stderr
        why = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed"
        return [(figure, f"not measured: {why}", f"<= {GOAL:.0%} of the fit",
                 None if missing else False)]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    share = found["diff"] / found["without"]
    per_epoch = (found["saves"] - 1) / EPOCHS  # the fit's own save apart
    return [(
        figure,
        f"{found['diff'] * 1e3:+.1f} ms on {found['without'] * 1e3:.0f} ms = {share:+.2%} "
        f"(median of paired turns); {per_epoch:g} save(s) per epoch + 1 for the fit",
        f"<= {GOAL:.0%} of the fit, or <= 1 save per epoch",
        share <= GOAL or per_epoch <= 1,
    )]


def main() -> int:
    rows = figures(5)
    for row in rows:
        print(" | ".join(str(c) for c in row))
    return 0 if all(r[3] is not False for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
