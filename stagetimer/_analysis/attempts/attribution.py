"""Which hardware description an attempt ran on, the one answer ``lost``, ``compute`` and
the page share, so that their totals always agree.

An attempt names its description where its process had captured it (every run, and
the markers written after the process's first save). A marker written before (the
first stage of a process, killed or failed) names none; it is attributed to the
description recorded by the same node, where there is exactly one:

1. the descriptions the markers of the same node (host and boot id) name, in every
   directory read;
2. where no marker of that node names one: the descriptions whose ``host`` is the
   writer's host (a description names its host, not its boot), and the runs whose job
   names that node;
3. where several remain: those of the same batch job in the same directory, if that
   leaves one; where the writer names no node, the same job's alone.

Otherwise it belongs to no description: the group ``NOT_DESCRIBED``, which every
reader names and counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from stagetimer._analysis.attempts.scan import Attempt

__all__ = ["NOT_DESCRIBED", "attribute"]

#: The group of the attempts no description can be given to.
NOT_DESCRIBED = "(not described)"

_Node = tuple[str, str]


def _node(attempt: Attempt) -> _Node | None:
    """(host, boot id) of the process that wrote an attempt's marker, where it says."""
    boot = attempt.boot_id
    return None if attempt.host is None or boot is None else (attempt.host, boot)


def _job(attempt: Attempt) -> tuple[str, str] | None:
    job_id = (attempt.job or {}).get("job_id")
    return (attempt.directory, job_id) if isinstance(job_id, str) else None


def _only(found: set[str] | None) -> str | None:
    return next(iter(found)) if found is not None and len(found) == 1 else None


def attribute(
    attempts: Iterable[Attempt], hosts: Mapping[str, str | None] | None = None
) -> dict[int, str | None]:
    """Each attempt's hardware description (by ``id`` of the attempt): its own, else the
    one its node recorded (see above), else None (``NOT_DESCRIBED``). ``hosts``: each
    hardware id described in the directories read -> the host its description names."""
    listed = list(attempts)
    by_node, by_host, by_job = _recorded(listed, hosts)
    found: dict[int, str | None] = {}
    for attempt in listed:
        own = attempt.hardware_id
        found[id(attempt)] = own if own is not None else _of_node(
            attempt, by_node, by_host, by_job)
    return found


def _recorded(listed: list[Attempt], hosts: Mapping[str, str | None] | None,
              ) -> tuple[dict[_Node, set[str]], dict[str, set[str]],
                         dict[tuple[str, str], set[str]]]:
    """The descriptions recorded by each node, each host and each job (see above)."""
    by_node: dict[_Node, set[str]] = {}
    by_host = _by_host(hosts or {})
    by_job: dict[tuple[str, str], set[str]] = {}
    for attempt in listed:
        if attempt.hardware_id is None:
            continue
        hardware_id = attempt.hardware_id
        node, job = _node(attempt), _job(attempt)
        if node is not None:
            by_node.setdefault(node, set()).add(hardware_id)
        elif attempt.host is not None:  # a run: its job names its node, not its boot
            by_host.setdefault(attempt.host, set()).add(hardware_id)
        if job is not None:
            by_job.setdefault(job, set()).add(hardware_id)
    return by_node, by_host, by_job


def _by_host(hosts: Mapping[str, str | None]) -> dict[str, set[str]]:
    """The descriptions each host names as its own (``hosts``: description -> host)."""
    by_host: dict[str, set[str]] = {}
    for hardware_id, host in hosts.items():
        if host is not None:
            by_host.setdefault(host, set()).add(hardware_id)
    return by_host


def _of_node(
    attempt: Attempt,
    by_node: Mapping[_Node, set[str]],
    by_host: Mapping[str, set[str]],
    by_job: Mapping[tuple[str, str], set[str]],
) -> str | None:
    node, job = _node(attempt), _job(attempt)
    same_job = by_job.get(job) if job is not None else None
    if node is None:
        return _only(same_job)
    candidates = by_node.get(node) or by_host.get(node[0])
    if not candidates:
        return None
    if len(candidates) == 1:
        return next(iter(candidates))
    return _only(candidates & same_job) if same_job else None
