"""Runs and their parts: a seed's labelled records of one stage (a callback's epochs) are
one run, the labels its parts.

Where a stage's records share a ``run_idx`` (a seed of a distributed launch already
counted once, as its slowest rank) and differ by ``label``, they are one run of that
seed, each label one of its parts: ``train_epoch  2 runs (6 epochs)``. Records that
share a ``run_idx`` and a label (a legacy file, ``"sequential"`` runs without an index)
stay runs of their own. The statistics of a stage are over its records (an epoch's
duration); only the count of runs is by seed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

__all__ = ["RunParts", "run_parts"]

_EPOCH = re.compile(r"epoch[ _-]?\d+", re.IGNORECASE)

#: (runs counted by seed, records in all, the parts' name: "epochs" or "parts")
RunParts = tuple[int, int, str]


def run_parts(run_idxs: Sequence[Any], labels: Sequence[Any]) -> RunParts | None:
    """How many runs the records with these ``run_idxs`` and ``labels`` (in order, one
    each) are, counted by seed, where some seed's records differ by label; None where
    none does (each record is a run). The parts are "epochs" where every label reads as
    one (``epoch3``, ``Epoch 3``), else "parts"."""
    if labels.count(None) == len(labels):
        return None  # the usual stage: no labels, in C
    groups: dict[Any, list[Any]] = {}
    for idx, label in zip(run_idxs, labels, strict=True):
        groups.setdefault(idx, []).append(label)
    runs = sum(map(_runs_of_seed, groups.values()))
    if runs == len(labels):
        return None  # no seed's records differ by label: each is a run
    return runs, len(labels), _parts_name(labels)


def _runs_of_seed(labels: list[Any]) -> int:
    """One run in parts where a seed's labels are several and all different, else a
    run per record."""
    if len(labels) > 1 and len(set(labels)) == len(labels):
        return 1
    return len(labels)


def _parts_name(labels: Sequence[Any]) -> str:
    """"epochs" where every label reads as one (``epoch3``, ``Epoch 3``), else "parts"."""
    epochs = all(type(label) is str and _EPOCH.fullmatch(label) for label in labels)
    return "epochs" if epochs else "parts"
