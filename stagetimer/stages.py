"""The stage-name catalogue (SPEC section 5). Recording accepts any valid name.

>>> from stagetimer import stages
>>> stages.auto_resume("ippo_train")
'ippo_train_auto_resume'
"""

from __future__ import annotations

__all__ = [
    "AUTO_RESUMABLE_STAGES",
    "AUTO_RESUME_SUFFIX",
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
#: What a NashConv-triggered continuation adds to a stage's name.
AUTO_RESUME_SUFFIX = "_auto_resume"
#: Stages a NashConv-triggered continuation repeats.
AUTO_RESUMABLE_STAGES: frozenset[str] = frozenset((*TRAINING_STAGES, "checkpoint_save", "nashconv"))


def auto_resume(name: str) -> str:
    """``<name>_auto_resume`` for a training stage, ``checkpoint_save`` or ``nashconv``."""
    if name not in AUTO_RESUMABLE_STAGES:
        raise ValueError(
            f"{name!r} has no auto-resume companion: expected a training stage, "
            "'checkpoint_save' or 'nashconv'"
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
