"""Writing a recorder's rescue file: its records not yet saved, never only in memory.

One file per recorder and process, ``timings.rescue-<UTC time>-<pid>.json`` beside the
sidecar, rewritten atomically whenever that set of records changes and removed once it
is empty (``recover`` in ``stagetimer._store.rescue`` folds it back).
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from stagetimer._format import RESCUE_PREFIX, RESCUE_SUFFIX, TIMINGS_FILE
from stagetimer._record.pending import Pending
from stagetimer._store.sidecar import Attempt, write_atomic

__all__ = ["RescueFile"]


class RescueFile:
    """One recorder's rescue file in this process: its records not yet saved."""

    def __init__(self, directory: str, policy: str, expected_runs: int | None) -> None:
        self.directory = directory
        self.policy = policy
        self.expected_runs = expected_runs
        self.path: str | None = None
        self.attempt: Attempt | None = None  # the last write, to clear what an interrupt left
        self.refused: list[Pending] = []  # records the file refuses: kept here for the user
        self.printed: set[int] = set()  # ids of records already printed to stderr

    def _advice(self) -> str:
        return (
            f"fold it back into {TIMINGS_FILE} with: stagetimer recover "
            f"{os.path.abspath(self.directory)}"
        )

    def write(self, pending: list[Pending], refused: list[Pending]) -> str:
        """Make the rescue file hold ``pending`` and the refused records; say where it is.

        No record left: the file is removed. Where no file can be written, the records
        not printed before go to standard error as one JSON line.
        """
        self.refused.extend(refused)
        records = [*pending, *self.refused]
        if self.attempt is not None:
            self.attempt.replaced()  # removes a temporary file an interrupt left behind
        if not records:
            return self._remove()
        entries = []
        hardware: dict[str, Any] = {}
        software: dict[str, Any] = {}
        for p in records:
            run = p.run_or_bare()
            if p.hardware is not None:
                hardware[p.hardware.id] = p.hardware.description
            if p.software is not None:
                software[p.software.id] = p.software.description
            entries.append({"stage": p.name, "run": run})
        payload: dict[str, Any] = {
            "directory": os.path.abspath(self.directory),
            "policy": self.policy,
            "hardware": hardware,
            "records": entries,
        }
        if software:
            payload["software"] = software
        if self.expected_runs is not None:
            payload["expected_runs"] = self.expected_runs
        text = json.dumps(payload, indent=2, ensure_ascii=False) + "\n"
        path = self.path
        if path is None:
            now = time.time()
            stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now))
            name = f"{RESCUE_PREFIX}{stamp}{int(now % 1 * 1e6):06d}Z-{os.getpid()}{RESCUE_SUFFIX}"
            # Chosen once: a write an interrupt cut short is redone under the same name.
            path = self.path = os.path.join(self.directory, name)
        self.attempt = attempt = Attempt()
        try:
            os.makedirs(self.directory, exist_ok=True)
            write_atomic(path, text.encode("utf-8"), None, attempt)
        except OSError as exc:
            return self._print(records, entries, payload, exc)
        return f"they are in the rescue file {path} ({self._advice()})"

    def _remove(self) -> str:
        if self.path is not None:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass
            except OSError:
                return ""  # kept; recover skips records already stored
            self.path = None
        return ""

    def _print(
        self,
        records: list[Pending],
        entries: list[dict[str, Any]],
        payload: dict[str, Any],
        exc: OSError,
    ) -> str:
        """No rescue file can be written: the records not printed before, to stderr."""
        fresh = [e for p, e in zip(records, entries, strict=True) if id(p) not in self.printed]
        if fresh:
            line = json.dumps({**payload, "records": fresh}, ensure_ascii=False)
            sys.stderr.write(
                f"stagetimer: could not save {len(fresh)} record(s) for "
                f"{payload['directory']} nor write a rescue file ({exc}); here they are "
                f"as JSON: {line}\n"
            )
            sys.stderr.flush()
            self.printed.update(id(p) for p in records)
        return (
            f"no rescue file could be written ({exc}): the records were printed to "
            "standard error as JSON"
        )
