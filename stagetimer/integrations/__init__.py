"""Callbacks that time the stages of a framework's own training loop.

Each lives in its own module and imports its framework only there, so importing
``stagetimer`` (or this package) imports none of them:

- ``stagetimer.integrations.lightning.StageTimerCallback`` (Lightning 2.x);
- ``stagetimer.integrations.transformers.StageTimerCallback`` (Hugging Face ``Trainer``);
- ``stagetimer.integrations.keras.StageTimerCallback`` (Keras 3, any backend).

Each maps the framework's hooks to stages by the table in its module's docstring
(``docs/integrations.md`` has all three).
"""

from __future__ import annotations

from stagetimer.integrations._core import UnsupportedVersionError

__all__ = ["UnsupportedVersionError"]
