"""stagetimer: time experiment stages into crash-safe JSON sidecars beside the artifacts.

>>> from stagetimer import Recorder, stage
>>> with Recorder("exports/gridworlds/pursuit/classic_3/ippo"):
...     with stage("ippo_train", run_idx=0):
...         train()
"""

from __future__ import annotations

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
from stagetimer._load import load_hardware, load_timings
from stagetimer._recorder import Recorder
from stagetimer._records import HardwareSidecar, RunTiming, StageTiming, Timings
from stagetimer._stage import record_timing, stage, timed_stage
from stagetimer.hardware import Hardware, capture_hardware, hardware_id

__version__ = "0.1.0"

__all__ = [
    "Hardware",
    "HardwareSidecar",
    "InvalidRecordError",
    "LockTimeoutError",
    "NoActiveRecorderError",
    "Recorder",
    "RunTiming",
    "SchemaVersionError",
    "SidecarCorruptError",
    "StageTimerError",
    "StageTimerWarning",
    "StageTiming",
    "Timings",
    "__version__",
    "capture_hardware",
    "hardware_id",
    "load_hardware",
    "load_timings",
    "record_timing",
    "stage",
    "stages",
    "timed_stage",
]
