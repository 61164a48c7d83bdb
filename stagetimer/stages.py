"""The stage-name catalogue. Recording accepts any valid name; these are for checks.

A training stage is a name of :data:`TRAINING_STAGES` or any valid stage name ending
in ``_train`` (your own algorithm's ``cfr_train``). A training stage,
``checkpoint_save`` and ``nashconv`` have an auto-resume companion, the stage a
NashConv-triggered continuation records; no other stage has one. The same rule holds
for ``@timed_stage``'s ``.auto_resume`` and for every reader (``to_records``, the
report's picture): ``evaluate_auto_resume`` is a stage of its own, not a continuation.

>>> from stagetimer import stages
>>> stages.auto_resume("ippo_train")
'ippo_train_auto_resume'
>>> stages.auto_resume("cfr_train")
'cfr_train_auto_resume'
"""

from __future__ import annotations

from stagetimer._errors import InvalidRecordError
from stagetimer._format import (
    AUTO_RESUME_SUFFIX,
    CONTINUED_STAGES,
    TRAINING_SUFFIX,
    can_continue,
    is_training_name,
)
from stagetimer._store.validate import check_name

__all__ = [
    "AUTO_RESUMABLE_STAGES",
    "AUTO_RESUME_SUFFIX",
    "OTHER_STAGES",
    "TRAINING_STAGES",
    "TRAINING_SUFFIX",
    "auto_resume",
    "is_known",
    "is_training",
]

TRAINING_STAGES: tuple[str, ...] = (
    "ippo_train",
    "ippo_cer_train",
    "pr2_ippo_train",
    "pr2_ippo_cer_train",
    "iql_train",
    "iql_cer_train",
    "pr2_iql_train",
    "pr2_iql_cer_train",
    "nashq_train",
    "nashq_cer_train",
    "hc_ippo_train",
    "hc_pr2_ippo_train",
    "hc_iql_train",
    "hc_pr2_iql_train",
    "hc_nashq_train",
)
OTHER_STAGES: tuple[str, ...] = ("checkpoint_save", "nashconv", "satisfaction", "alpharank")
#: The catalogue's stages a NashConv-triggered continuation repeats (any training stage does).
AUTO_RESUMABLE_STAGES: frozenset[str] = frozenset((*TRAINING_STAGES, *CONTINUED_STAGES))


def is_training(name: str) -> bool:
    """Whether ``name`` is a training stage: in the catalogue, or a valid name ending in
    ``_train`` (``cfr_train``; ``_train`` alone names no algorithm)."""
    if name in TRAINING_STAGES:
        return True
    if not isinstance(name, str) or not is_training_name(name):
        return False
    return _is_valid(name)


def _is_valid(name: object) -> bool:
    try:
        check_name(name)
    except ValueError:
        return False
    return True


def auto_resume(name: str) -> str:
    """``<name>_auto_resume`` for a training stage, ``checkpoint_save`` or ``nashconv``.

    Any other name (``alpharank``, ``satisfaction``, a companion itself) raises
    ``InvalidRecordError`` (a ``ValueError``), as ``.auto_resume`` of a function decorated
    with ``@timed_stage`` for such a stage does.
    """
    if not isinstance(name, str) or not can_continue(name) or not _is_valid(name):
        raise InvalidRecordError(
            f"{name!r} has no auto-resume companion: expected a training stage (one of "
            f"stages.TRAINING_STAGES, or any valid name ending in {TRAINING_SUFFIX!r}), "
            "'checkpoint_save' or 'nashconv'",
            name,
        )
    return name + AUTO_RESUME_SUFFIX


def is_known(name: str) -> bool:
    """Whether ``name`` is in the catalogue (an auto-resume companion included)."""
    base = name.removesuffix(AUTO_RESUME_SUFFIX)
    return (
        name in TRAINING_STAGES
        or name in OTHER_STAGES
        or (base != name and base in AUTO_RESUMABLE_STAGES)
    )
