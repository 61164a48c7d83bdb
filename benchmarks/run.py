"""Benchmarks: the cost of one recorded stage beside its floor, measured in one run.

Run:  python benchmarks/run.py            (needs the 'bench' extra: pip install '.[bench]')
      python benchmarks/run.py --quick    (fewer repetitions)

Every figure is a ratio against a floor measured in the same run on the same
machine (these machines are noisy); medians over repeated calls, and where two things
are timed in turns, the median of their ratio per turn.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable

from stagetimer import Recorder, record_timing, stage

# Child interpreters run as a user's script would: from a neutral directory (a source
# checkout in the current directory would shadow the installed package) and with bytecode
# caching on, so that no figure includes compiling the sources.
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
CHILD_CWD = tempfile.gettempdir()


def python(*args: str) -> str:
    """Run this interpreter with ``args``; its standard output and error, together."""
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, check=True,
                          cwd=CHILD_CWD, env=CHILD_ENV)
    return done.stdout + done.stderr


def fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_synced(path: str, data: bytes, flags: int) -> None:
    """``data`` written to ``path`` (opened with ``flags`` besides write and create) and
    ``fsync``-ed, by bare system calls."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | flags, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def floor_write(path: str, data: bytes) -> None:
    """The physical floor: the same bytes through a bare temp file + fsync + rename + dir fsync."""
    tmp = path + ".floor-tmp"
    write_synced(tmp, data, os.O_TRUNC)
    os.replace(tmp, path)
    fsync_dir(os.path.dirname(path))


def record_cost(existing: int, repeats: int) -> tuple[float, float]:
    """Median seconds of one record_timing at ``existing`` runs, and of its floor."""
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as directory:
        rec = Recorder(directory, strict=True)
        # Build the file fast: one stage with `existing` runs, written by the library.
        record_timing("warmup", 0.0, recorder=rec)
        timings = os.path.join(directory, "timings.json")
        with open(timings, encoding="utf-8") as f:
            data = json.load(f)
        hw = data["warmup"]["runs"][0]["hardware_id"]
        runs = [
            {"seconds": 1.0 + i * 1e-3, "hardware_id": hw, "run_idx": i,
             "started_at": "2026-11-29T12:00:00.000Z", "reward": 0.5}
            for i in range(existing)
        ]
        data["ippo_train"] = {"total_seconds": sum(r["seconds"] for r in runs), "runs": runs}
        from stagetimer._store.sidecar import dumps_timings

        floor_path = os.path.join(directory, "floor.json")
        with open(timings, "w", encoding="utf-8") as f:
            f.write(dumps_timings(data))
        ours, floor = [], []
        for k in range(repeats):
            t0 = time.perf_counter()
            record_timing("ippo_train", 1.0, run_idx=existing + k, recorder=rec, reward=0.5)
            ours.append(time.perf_counter() - t0)
            with open(timings, "rb") as f:
                written = f.read()
            t0 = time.perf_counter()
            floor_write(floor_path, written)
            floor.append(time.perf_counter() - t0)
        return statistics.median(ours), statistics.median(floor)


def _file_of(directory: str, existing: int) -> str:
    """``timings.json`` in ``directory`` holding one stage of ``existing`` runs."""
    rec = Recorder(directory, strict=True, attempts=False)
    record_timing("warmup", 0.0, recorder=rec)
    timings = os.path.join(directory, "timings.json")
    with open(timings, encoding="utf-8") as f:
        data = json.load(f)
    hw = data["warmup"]["runs"][0]["hardware_id"]
    runs = [
        {"seconds": 1.0 + i * 1e-3, "hardware_id": hw, "run_idx": i,
         "started_at": "2026-11-29T12:00:00.000Z", "reward": 0.5}
        for i in range(existing)
    ]
    data["ippo_train"] = {"total_seconds": sum(r["seconds"] for r in runs), "runs": runs}
    from stagetimer._store.sidecar import dumps_timings

    with open(timings, "w", encoding="utf-8") as f:
        f.write(dumps_timings(data))
    return timings


def marker_costs(existing: int, repeats: int) -> dict[str, float]:
    """Medians, in seconds, at ``existing`` runs: a recorded ``stage`` with its started
    marker (``marked``), the same without markers (``unmarked``), one whose marker cannot
    be written (``refused``: a file planted at ``timings.attempts``), the marker alone
    (written durably, then removed: ``marker``), the same bytes through bare system calls
    (``bare``: the marker's own floor) and the save floor (``floor``), in turns."""
    from stagetimer._store import markers

    times: dict[str, list[float]] = {
        k: [] for k in ("marked", "unmarked", "refused", "marker", "bare", "floor")
    }
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as top:
        dirs = {k: os.path.join(top, k) for k in ("marked", "unmarked", "refused")}
        recs = {}
        for kind, directory in dirs.items():
            os.mkdir(directory)
            timings = _file_of(directory, existing)
            recs[kind] = Recorder(directory, strict=True, attempts=kind != "unmarked")
        with open(os.path.join(dirs["refused"], "timings.attempts"), "w") as f:
            f.write("planted")
        floor_path = os.path.join(top, "floor.json")
        content = b'{"format": 1, "attempt_id": "' + b"0" * 32 + b'", "stage": "ippo_train"}'
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the refused marker's one warning
            for k in range(repeats + 1):
                for kind, rec in recs.items():
                    t0 = time.perf_counter()
                    with stage("ippo_train", run_idx=existing + k, recorder=rec, reward=0.5):
                        pass
                    times[kind].append(time.perf_counter() - t0)
                attempt_id = markers.new_attempt_id()
                t0 = time.perf_counter()
                markers.create(dirs["marked"], attempt_id, content)
                markers.remove(dirs["marked"], [attempt_id])
                times["marker"].append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                bare_marker(os.path.join(dirs["marked"], "timings.attempts"), content)
                times["bare"].append(time.perf_counter() - t0)
                with open(timings, "rb") as f:
                    written = f.read()
                t0 = time.perf_counter()
                floor_write(floor_path, written)
                times["floor"].append(time.perf_counter() - t0)
    # The first turn creates the markers' directory: not a stage's usual cost.
    return {kind: statistics.median(values[1:]) for kind, values in times.items()}


def leftover_costs(leftovers: int, repeats: int) -> tuple[float, float]:
    """Medians, in seconds, of a recorded ``stage`` (its marker written and removed) at 100
    runs in a directory whose ``timings.attempts/`` holds ``leftovers`` markers past
    attempts left (failed or killed: kept for good), and in one that holds none, in
    turns. A save never lists the markers' directory, so the two should cost the same."""
    from stagetimer._store import markers

    times: dict[str, list[float]] = {"leftovers": [], "none": []}
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as top:
        recs = {}
        for kind in times:
            directory = os.path.join(top, kind)
            os.mkdir(directory)
            _file_of(directory, 100)
            recs[kind] = Recorder(directory, strict=True)
            with stage("ippo_train", run_idx=100, recorder=recs[kind]):
                pass  # makes the markers' directory
        where = markers.attempts_path(os.path.join(top, "leftovers"))
        content = b'{"format": 1, "stage": "ippo_train", "outcome": "raised"}\n'
        for _ in range(leftovers):
            name = markers.new_attempt_id() + ".json"
            fd = os.open(os.path.join(where, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.write(fd, content)
            os.close(fd)
        for k in range(repeats + 1):
            for kind, rec in recs.items():
                t0 = time.perf_counter()
                with stage("ippo_train", run_idx=101 + k, recorder=rec, reward=0.5):
                    pass
                times[kind].append(time.perf_counter() - t0)
    return statistics.median(times["leftovers"][1:]), statistics.median(times["none"][1:])


def bare_marker(directory: str, content: bytes) -> None:
    """A marker's floor: a new file created, written, ``fsync``-ed, its directory
    ``fsync``-ed (durable), then unlinked, by bare system calls."""
    path = os.path.join(directory, "bare.json")
    write_synced(path, content, os.O_EXCL)
    fsync_dir(directory)
    os.unlink(path)


CONTENTION_WRITER = """
import sys
from stagetimer import Recorder, record_timing
directory, worker, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
rec = Recorder(directory, strict=True)
for i in range(count):
    record_timing("stage_" + worker, 0.001, run_idx=i, recorder=rec)
"""


def contention(processes: int, count: int) -> float:
    """Records per second with ``processes`` writers on one directory; checks every record."""
    from stagetimer import load_timings

    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as directory:
        t0 = time.perf_counter()
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", CONTENTION_WRITER, directory, str(w), str(count)],
                cwd=CHILD_CWD, env=CHILD_ENV,
            )
            for w in range(processes)
        ]
        if any(p.wait() != 0 for p in procs):
            raise SystemExit("a contention writer failed")
        elapsed = time.perf_counter() - t0
        stages = load_timings(directory).stages
        for w in range(processes):
            got = [r.run_idx for r in stages[f"stage_{w}"].runs]
            if got != list(range(count)):
                raise SystemExit(f"contention: writer {w} lost records: {got}")
        return processes * count / elapsed


def paired(
    ours: Callable[[], float], theirs: Callable[[], float], repeats: int
) -> tuple[float, float, float]:
    """Medians of ``ours()`` and ``theirs()`` measured in turns (the order alternating), and
    the median of their ratio per turn: a machine that slows down or speeds up during the
    run (these do, by up to 2x) moves both sides of each ratio alike."""
    mine, other = [], []
    for turn in range(repeats):
        if turn % 2:
            other.append(theirs())
            mine.append(ours())
        else:
            mine.append(ours())
            other.append(theirs())
    ratio = statistics.median(a / b for a, b in zip(mine, other, strict=True))
    return statistics.median(mine), statistics.median(other), ratio


def lock_cost(number: int, repeats: int) -> tuple[float, float, float]:
    """Per acquire+release: stagetimer's lock and a bare ``fcntl.flock`` on the same file
    (open, lock, unlock, close), in turns."""
    import fcntl

    from stagetimer._store.locking import lock as _lock

    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as directory:
        path = os.path.join(directory, "timings.json.lock")

        def ours() -> None:
            _lock.acquire(path, 60.0)
            _lock.release(path)

        def bare() -> None:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

        ours()  # imports filelock, creates the file
        return paired(
            lambda: per_call(ours, number, 1), lambda: per_call(bare, number, 1), repeats
        )


def claim_cost(number: int, repeats: int) -> tuple[float, float, float]:
    """Per save's lock: the flock with the cross-client claim (take, fence, release) and
    the flock alone, in turns; the difference is what the claim adds to a save that
    takes it (``STAGETIMER_CLAIM=always`` here: on a local disk saves take none)."""
    from stagetimer._settings import CLAIM
    from stagetimer._store.locking import claims
    from stagetimer._store.locking import lock as _lock

    before = os.environ.get(CLAIM)
    os.environ[CLAIM] = "always"
    try:
        return _claim_turns(_lock, claims.Claim, number, repeats)
    finally:
        if before is None:
            del os.environ[CLAIM]
        else:
            os.environ[CLAIM] = before


def _claim_turns(
    _lock: types.ModuleType, claim_type: type, number: int, repeats: int
) -> tuple[float, float, float]:
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as directory:
        sidecar = os.path.join(directory, "timings.json")
        path = sidecar + ".lock"

        def with_claim() -> None:
            claim = _lock.acquire(path, 60.0, sidecar)
            assert isinstance(claim, claim_type)
            claim.fence()
            _lock.release(path)

        def flock_only() -> None:
            _lock.acquire(path, 60.0)
            _lock.release(path)

        with_claim()
        return paired(
            lambda: per_call(with_claim, number, 1),
            lambda: per_call(flock_only, number, 1),
            repeats,
        )


def import_time(module: str) -> float:
    """Cumulative import time of ``module`` (µs) from ``python -X importtime``."""
    out = python("-X", "importtime", "-c", f"import {module}")
    line = [x for x in out.splitlines() if re.search(rf"\|\s+{re.escape(module)}$", x)][-1]
    return int(line.split("|")[1])


def heavy_imports() -> list[str]:
    code = "import sys, stagetimer; print(sorted({'psutil','pynvml','cattrs'} & set(sys.modules)))"
    heavy: list[str] = json.loads(python("-c", code).replace("'", '"'))
    return heavy


def capture_cold(repeats: int) -> float:
    code = (
        "import time, stagetimer; t = time.perf_counter(); stagetimer.capture_hardware();"
        "print(time.perf_counter() - t)"
    )
    return statistics.median(float(python("-c", code)) for _ in range(repeats))


def per_call(fn: Callable[[], object], number: int, repeats: int) -> float:
    results = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        results.append((time.perf_counter() - t0) / number)
    return statistics.median(results)


#: The switch a disabled stage reads at every entry, so that setting it at run time takes
#: effect; through ``os.environ``, the public way (its private mapping is not read).
DISABLE = "STAGETIMER_DISABLE"


def disabled_stage(
    number: int, repeats: int, reuse: bool = False, switch: bool = True
) -> tuple[float, float, float]:
    """Per with-block cost of a disabled stage and of codetiming.Timer (``reuse``: the
    objects are built once, so only enter/exit is measured); with ``switch``, the timer
    block also reads ``STAGETIMER_DISABLE`` from ``os.environ`` once, as the least a
    stage that can be switched off at run time must do beyond timing."""
    from codetiming import Timer

    os.environ[DISABLE] = "1"
    environ = os.environ
    try:
        built_stage, built_timer = stage("ippo_train", run_idx=3), Timer(logger=None)

        def ours() -> None:
            with built_stage if reuse else stage("ippo_train", run_idx=3):
                pass

        def theirs() -> None:
            with built_timer if reuse else Timer(logger=None):
                pass
            if switch:
                environ[DISABLE]

        return paired(
            lambda: per_call(ours, number, 1), lambda: per_call(theirs, number, 1), repeats
        )
    finally:
        del os.environ[DISABLE]


def counter_cost(number: int, repeats: int) -> tuple[float, float, float, float]:
    """What reading the resource counters adds to a recorded stage: the counters alone
    (``finish(start())``, as a stage's entry and exit read them) and a recorded stage with
    them against the same stage with them replaced by nothing, timed in turns."""
    import types

    from stagetimer._record import resources
    from stagetimer._record import stage as stage_module

    resources.finish(resources.start())  # the probe, once per process, is not per stage
    alone = per_call(lambda: resources.finish(resources.start()), number * 10, repeats)
    none = types.SimpleNamespace(start=lambda: (), finish=lambda began: None)
    with tempfile.TemporaryDirectory() as directory:
        rec = Recorder(directory)

        def recorded() -> None:
            with stage("ippo_train", run_idx=0, recorder=rec):
                pass

        def without() -> None:
            stage_module.resources = none  # type: ignore[assignment]
            try:
                recorded()
            finally:
                stage_module.resources = resources

        with_them, without_them, ratio = paired(
            lambda: per_call(recorded, number, 1), lambda: per_call(without, number, 1), repeats
        )
    return alone, with_them, without_them, ratio


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    reps = 9 if args.quick else 31
    rows: list[tuple[str, str, str, str]] = []

    def row(figure: str, value: str, goal: str, ok: bool | None) -> None:
        verdict = "-" if ok is None else ("ok" if ok else "MISSED")
        rows.append((figure, value, goal, verdict))

    growth = {}
    for existing in (10, 100, 1_000, 10_000):
        ours, floor = record_cost(existing, reps if existing < 10_000 else max(reps // 2, 7))
        growth[existing] = (ours, floor)
        goal = {100: 1.5, 10_000: 2.0}.get(existing)
        row(
            f"record at {existing:,} runs",
            f"{ours * 1e3:.2f} ms vs floor {floor * 1e3:.2f} ms = {ours / floor:.2f}x",
            f"<= {goal}x" if goal else "(growth)",
            ours / floor <= goal if goal else None,
        )
    costs = marker_costs(100, reps)
    floor_m = costs["floor"]
    row("stage with its started marker at 100 runs",
        f"{costs['marked'] * 1e3:.2f} ms vs floor {floor_m * 1e3:.2f} ms = "
        f"{costs['marked'] / floor_m:.2f}x (without markers {costs['unmarked'] / floor_m:.2f}x)",
        "<= 1.8x", costs["marked"] / floor_m <= 1.8)
    durable = floor_m + costs["bare"]
    row("  the same against the durable floor (save floor + bare durable marker)",
        f"{costs['marked'] * 1e3:.2f} ms vs {durable * 1e3:.2f} ms = "
        f"{costs['marked'] / durable:.2f}x", "<= 1.5x", costs["marked"] / durable <= 1.5)
    row("  the started marker alone (written durably, removed)",
        f"{costs['marker'] * 1e3:.3f} ms = {costs['marker'] / floor_m:.2f}x the floor "
        f"(bare system calls: {costs['bare'] / floor_m:.2f}x)",
        "<= 0.5x the floor", costs["marker"] / floor_m <= 0.5)
    row("  a stage whose marker cannot be written",
        f"{costs['refused'] * 1e3:.2f} ms vs without markers {costs['unmarked'] * 1e3:.2f} ms"
        f" = {costs['refused'] / costs['unmarked']:.2f}x",
        "<= 1.1x (no more than a save)", costs["refused"] / costs["unmarked"] <= 1.1)
    with_leftovers, without = leftover_costs(100_000, reps)
    row("  a stage beside 100,000 leftover markers",
        f"{with_leftovers * 1e3:.2f} ms vs none {without * 1e3:.2f} ms"
        f" = {with_leftovers / without:.2f}x",
        "<= 1.2x (no growth with past attempts)", with_leftovers / without <= 1.2)
    per_run_10 = growth[10][0]
    per_run_10k = growth[10_000][0]
    size_ratio = 10_000 / 10
    row("growth 10 -> 10,000 runs",
        f"{per_run_10k / per_run_10:.1f}x cost for {size_ratio:.0f}x runs",
        "no worse than linear", per_run_10k / per_run_10 <= size_ratio)
    import filelock

    ours_lock, bare_lock, ratio = lock_cost(2_000, reps)
    row(f"lock acquire+release (filelock {filelock.__version__})",
        f"{ours_lock * 1e6:.2f} µs vs bare fcntl.flock {bare_lock * 1e6:.2f} µs = {ratio:.2f}x",
        "<= 2.0x", ratio <= 2.0)
    claimed, flock_only, _ = claim_cost(1_000, reps)
    added = claimed - flock_only
    floor_100 = growth[100][1]
    row("cross-client claim (take, fence, release)",
        f"+{added * 1e6:.1f} µs per save ({claimed * 1e6:.1f} vs flock alone "
        f"{flock_only * 1e6:.1f} µs) = {added / floor_100:.2f}x the floor at 100 runs",
        "<= 0.5x the floor", added / floor_100 <= 0.5)
    for n in (1, 2, 4, 8):
        rate = contention(n, 40 if args.quick else 100)
        row(f"contention, {n} process(es)", f"{rate:.0f} records/s, all present", "printed", None)
    python("-c", "import attrs, stagetimer.hardware")  # writes the bytecode caches if missing
    ours_imp, attrs_imp, ratio = paired(
        lambda: import_time("stagetimer"), lambda: import_time("attrs"), reps
    )
    heavy = heavy_imports()
    row("import stagetimer", f"{ours_imp / 1e3:.1f} ms vs attrs {attrs_imp / 1e3:.1f} ms = "
        f"{ratio:.2f}x; heavy modules: {heavy or 'none'}", "<= 1.5x, none",
        ratio <= 1.5 and not heavy)
    cold = capture_cold(max(reps // 3, 5))
    row("capture_hardware cold", f"{cold * 1e3:.1f} ms", "<= 150 ms", cold <= 0.150)
    from stagetimer import capture_hardware

    capture_hardware()
    cached = per_call(capture_hardware, 10_000, reps)
    row("capture_hardware cached", f"{cached * 1e6:.2f} µs", "<= 50 µs", cached <= 50e-6)
    alone, with_them, without_them, ratio = counter_cost(200, reps)
    row("resource counters per recorded stage", f"{alone * 1e6:.2f} µs (a stage with them "
        f"{with_them * 1e3:.3f} ms vs without {without_them * 1e3:.3f} ms = {ratio:.3f}x)",
        "<= 20 µs", alone <= 20e-6)
    ours_off, floor_off, ratio = disabled_stage(5_000, 3 * reps)
    row("stage() with STAGETIMER_DISABLE=1", f"{ours_off * 1e6:.2f} µs vs codetiming.Timer "
        f"and reading the switch {floor_off * 1e6:.2f} µs = {ratio:.2f}x", "<= 1.0x",
        ratio <= 1.0)
    ours_off, codetiming, ratio = disabled_stage(5_000, 3 * reps, switch=False)
    row("  the same against codetiming.Timer alone", f"{ours_off * 1e6:.2f} µs vs "
        f"{codetiming * 1e6:.2f} µs = {ratio:.2f}x", "(reference)", None)
    ours_off, codetiming, ratio = disabled_stage(5_000, 3 * reps, reuse=True, switch=False)
    row("  the same, objects built once", f"{ours_off * 1e6:.2f} µs vs "
        f"{codetiming * 1e6:.2f} µs = {ratio:.2f}x", "(enter/exit only)", None)
    # Reading suites: report, table and compare on 1,000 artifact directories, as ratios
    # against walking the tree and json.load-ing every sidecar in the same run.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bench_compare
    import bench_history_read
    import bench_html
    import bench_integrations
    import bench_software
    import bench_suite
    import bench_watch
    import replay

    turns = 3 if args.quick else 5
    for figures in (
        bench_suite.figures, bench_compare.figures, bench_software.figures,
        bench_html.figures, bench_integrations.figures, bench_watch.figures,
        bench_history_read.figures,
    ):
        for figure, value, goal, ok in figures(turns):
            row(figure, value, goal, ok)

    for figure, value, goal, ok in replay.figures(100 if args.quick else 400):
        row(figure, value, goal, ok)

    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}, {platform.system()} {platform.release()}")
    widths = [max(len(r[i]) for r in [("figure", "measured", "goal", ""), *rows]) for i in range(4)]
    header = ("figure", "measured", "goal", "")
    for r in [header, tuple("-" * w for w in widths), *rows]:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + " |")
    return 0 if all(r[3] != "MISSED" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
