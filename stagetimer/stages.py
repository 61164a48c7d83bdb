"""The stage-name catalogue (SPEC section 5). Recording accepts any valid name.

>>> from stagetimer import stages
>>> stages.auto_resume("ippo_train")
'ippo_train_auto_resume'
"""

from __future__ import annotations

__all__ = [
    "AUTO_RESUMABLE_STAGES",
    "OTHER_STAGES",
    "TRAINING_STAGES",
    "auto_resume",
    "is_known",
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
#: Stages a NashConv-triggered continuation repeats.
AUTO_RESUMABLE_STAGES: frozenset[str] = frozenset((*TRAINING_STAGES, "checkpoint_save", "nashconv"))


def auto_resume(name: str) -> str:
    """``<name>_auto_resume`` for a training stage, ``checkpoint_save`` or ``nashconv``."""
    if name not in AUTO_RESUMABLE_STAGES:
        raise ValueError(
            f"{name!r} has no auto-resume companion: expected a training stage, "
            "'checkpoint_save' or 'nashconv'"
        )
    return name + "_auto_resume"


def is_known(name: str) -> bool:
    """Whether ``name`` is in the catalogue (an auto-resume companion included)."""
    base = name.removesuffix("_auto_resume") if name.endswith("_auto_resume") else None
    return name in TRAINING_STAGES or name in OTHER_STAGES or base in AUTO_RESUMABLE_STAGES
