"""Several processes writing one artifact directory, and hardware ids across processes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from stagetimer import load_hardware, load_timings

WRITER = """
import sys
from stagetimer import Recorder, record_timing
directory, worker, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rec = Recorder(directory, strict=True)
for i in range(count):
    record_timing(f"stage_{worker}", 0.001 * (i + 1), run_idx=i, recorder=rec)
"""


def test_four_processes_recording_distinct_stages_lose_nothing(tmp_path: Path) -> None:
    workers, count = 5, 20
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), str(w), str(count)])
        for w in range(workers)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0] * workers
    timings = load_timings(tmp_path)
    assert sorted(timings.stages) == [f"stage_{w}" for w in range(workers)]
    for w in range(workers):
        runs = timings.stages[f"stage_{w}"].runs
        assert [r.run_idx for r in runs] == list(range(count))
    known = load_hardware(tmp_path).hardware
    assert {r.hardware_id for s in timings.stages.values() for r in s.runs} <= set(known)


def test_hardware_id_is_equal_across_processes() -> None:
    code = (
        "import stagetimer as s, json; h = s.capture_hardware();"
        "print(json.dumps([s.hardware_id(h), s.hardware.description(h)]))"
    )
    outputs = [
        json.loads(subprocess.run([sys.executable, "-c", code], check=True,
                                  capture_output=True, text=True).stdout)
        for _ in range(2)
    ]
    assert outputs[0] == outputs[1]
    assert outputs[0][0].startswith("hw-") and len(outputs[0][0]) == 19
