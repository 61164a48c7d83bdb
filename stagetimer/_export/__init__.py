"""Exports of recorded runs into other tools: MLflow (``mlflow``), TensorBoard event files
(``tensorboard``) and OpenTelemetry spans in the OTLP/JSON file format (``otlp``).

Each reads the sidecars through ``_analysis`` and imports its tool only inside its own
module, which only its command imports. Each is idempotent: what a destination already
holds is read back (or found by deterministic ids) and never written twice, under a lock
on the destination (``lock``) so that two exports at once are too. Runs and attempts with
times no writer could have recorded are left out and named (``plausible``).
"""

from __future__ import annotations

__all__: list[str] = []
