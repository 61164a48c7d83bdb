"""The ``owner`` record of a rescue file: who wrote it, and whether that writer still runs.

A rescue file records its writer as ``owner``: ``host``, ``boot_id``, ``pidns`` (its
pid namespace: a container's pid 7 is not ours), ``pid``, ``start_time`` and ``uid``
(what each means, and how a record is judged, is in ``processes``). Files written
before ``pidns`` was recorded are judged without it. ``recover`` leaves a live
writer's file alone: that writer still owns the records in it and saves or rewrites
them itself.
"""

from __future__ import annotations

from typing import Any

from stagetimer._store.processes import UNRECORDED, Identity, Liveness, record
from stagetimer._store.processes import liveness as _liveness
from stagetimer._system.text import json_text

__all__ = ["Liveness", "liveness", "this_process"]


def this_process() -> dict[str, Any]:
    """The ``owner`` record of this process (read once per pid, a fork its own)."""
    return record(_owner_record)


def _owner_record(me: Identity) -> dict[str, Any]:
    return {
        "host": json_text(me.host),
        "boot_id": me.boot_id,
        "pidns": me.pidns,
        "pid": me.pid,
        "start_time": me.start_time,
        "uid": me.uid,
    }


def liveness(owner: object) -> Liveness:
    """Whether the writer an ``owner`` record names still runs (``processes.liveness``).

    Its machine is told by its host, boot and pid namespace: any of them not ours is
    ``"elsewhere"`` (kept until the stale rule), as nothing here can prove it dead.
    """
    if not isinstance(owner, dict):
        return "dead"
    return _liveness(
        owner.get("pid"), owner.get("start_time"), host=owner.get("host"),
        boot=owner.get("boot_id"), pidns=owner.get("pidns", UNRECORDED),
    )
