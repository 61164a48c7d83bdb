"""How the recorder warns its user: one ``StageTimerWarning`` per message, attributed to
the first caller outside stagetimer's recording layer, and never fatal to the stage.
"""

from __future__ import annotations

import os
import warnings

from stagetimer._errors import StageTimerWarning
from stagetimer._record.reentry import current_frame
from stagetimer._system import process_state

__all__ = ["warn_user"]

# Frames of this folder (the recording layer), and of the exit hook that closes the
# recorders, are skipped when attributing a warning.
_SKIPPED = (
    os.path.dirname(os.path.abspath(__file__)) + os.sep,
    os.path.abspath(process_state.__file__),
)


def warn_user(directory: str, message: str) -> None:
    """One ``StageTimerWarning`` about ``directory``, attributed to the first caller outside
    stagetimer."""
    level, frame = 1, current_frame()
    while frame is not None and frame.f_code.co_filename.startswith(_SKIPPED):
        level, frame = level + 1, frame.f_back
    try:
        warnings.warn(f"{directory}: {message}", StageTimerWarning, stacklevel=level)
    except (ValueError, OSError) as exc:
        if isinstance(exc, Warning):
            raise  # the user's filter turned the warning into an error
        # warnings writes to a closed sys.stderr (ValueError) or one whose reader
        # left; the record itself is in its rescue file: a lost warning must not fail
        # the stage.
