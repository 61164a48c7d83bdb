"""stagetimer: time experiment stages into crash-safe JSON sidecars beside the artifacts.

>>> from stagetimer import Recorder, stage
>>> with Recorder("exports/gridworlds/pursuit/classic_3/ippo"):
...     with stage("ippo_train", run_idx=0):
...         train()
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stagetimer import stages
from stagetimer._errors import (
    InvalidRecordError,
    LockTimeoutError,
    NoActiveRecorderError,
    SchemaVersionError,
    SidecarCorruptError,
    StageTimerError,
    StageTimerWarning,
)
from stagetimer._lazy import lazy_attributes
from stagetimer._record.recorder import Recorder
from stagetimer._record.stage import record_timing, stage
from stagetimer._record.timed import TimedFunction, timed_stage

if TYPE_CHECKING:
    from stagetimer._analysis.attempts.scan import Attempt, attempts
    from stagetimer._analysis.compare.model import Comparison
    from stagetimer._analysis.compare.suites import compare
    from stagetimer._analysis.doctor import DirectoryReport, doctor
    from stagetimer._analysis.history.model import History
    from stagetimer._analysis.history.series import history
    from stagetimer._analysis.rows import to_frame, to_records
    from stagetimer._analysis.tree import Artifact, load_tree
    from stagetimer._store.load import load_hardware, load_timings
    from stagetimer._store.records import HardwareSidecar, RunTiming, StageTiming, Timings
    from stagetimer._store.rescue import recover
    from stagetimer.hardware import (
        Difference,
        Hardware,
        capture_hardware,
        hardware_differences,
        hardware_id,
    )
    from stagetimer.software import (
        Software,
        capture_software,
        software_differences,
        software_id,
    )

# Reading sidecars and probing hardware are imported on first use, so that
# ``import stagetimer`` stays as light as the recording path needs.
_LAZY = {
    "load_hardware": "stagetimer._store.load",
    "load_timings": "stagetimer._store.load",
    "HardwareSidecar": "stagetimer._store.records",
    "RunTiming": "stagetimer._store.records",
    "StageTiming": "stagetimer._store.records",
    "Timings": "stagetimer._store.records",
    "Hardware": "stagetimer.hardware",
    "capture_hardware": "stagetimer.hardware",
    "hardware_id": "stagetimer.hardware",
    "compare": "stagetimer._analysis.compare.suites",
    "attempts": "stagetimer._analysis.attempts.scan",
    "Attempt": "stagetimer._analysis.attempts.scan",
    "Comparison": "stagetimer._analysis.compare.model",
    "history": "stagetimer._analysis.history.series",
    "History": "stagetimer._analysis.history.model",
    "hardware_differences": "stagetimer.hardware",
    "Difference": "stagetimer.hardware",
    "load_tree": "stagetimer._analysis.tree",
    "Artifact": "stagetimer._analysis.tree",
    "to_records": "stagetimer._analysis.rows",
    "to_frame": "stagetimer._analysis.rows",
    "recover": "stagetimer._store.rescue",
    "doctor": "stagetimer._analysis.doctor",
    "DirectoryReport": "stagetimer._analysis.doctor",
    "Software": "stagetimer.software",
    "capture_software": "stagetimer.software",
    "software_differences": "stagetimer.software",
    "software_id": "stagetimer.software",
}


__getattr__ = lazy_attributes(__name__, _LAZY, globals())


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__version__ = "0.1.0"

__all__ = [
    "Artifact",
    "Attempt",
    "Comparison",
    "Difference",
    "DirectoryReport",
    "Hardware",
    "HardwareSidecar",
    "History",
    "InvalidRecordError",
    "LockTimeoutError",
    "NoActiveRecorderError",
    "Recorder",
    "RunTiming",
    "SchemaVersionError",
    "SidecarCorruptError",
    "Software",
    "StageTimerError",
    "StageTimerWarning",
    "StageTiming",
    "TimedFunction",
    "Timings",
    "__version__",
    "attempts",
    "capture_hardware",
    "capture_software",
    "compare",
    "doctor",
    "hardware_differences",
    "hardware_id",
    "history",
    "load_hardware",
    "load_timings",
    "load_tree",
    "record_timing",
    "recover",
    "software_differences",
    "software_id",
    "stage",
    "stages",
    "timed_stage",
    "to_frame",
    "to_records",
]
