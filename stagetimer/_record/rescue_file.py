"""Writing a recorder's rescue file: its records not yet saved, never only in memory.

One file per recorder and process, ``timings.rescue-<UTC time>Z-<pid>-<random>.json``
beside the sidecar (the random part keeps two recorders of one process apart even under
a frozen clock), rewritten atomically whenever that set of records changes and removed
once it is empty (``recover`` in ``stagetimer._store.rescue`` folds it back). The file
names its writer (``owner``: host, boot, pid, start time; see ``_store/owner.py``), so
that ``recover`` leaves it alone while the writer lives, and each record by an ``id`` of
its own, so that two identical records are two records.

The last resort, standard error, takes each record exactly once (known by its serial
number, never by ``id()``, which Python reuses for a new object once the old one is
freed), and nothing it meets (a closed or broken standard error, interpreter shutdown)
raises out of a stage.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from stagetimer._format import RESCUE_FORMAT, RESCUE_PREFIX, RESCUE_SUFFIX, TIMINGS_FILE
from stagetimer._record.pending import Pending, descriptions
from stagetimer._store.leftovers import token
from stagetimer._store.owner import this_process
from stagetimer._store.rescue import inode
from stagetimer._store.sidecar import WriteProgress, write_atomic

__all__ = ["RescueFile", "to_stderr"]


def to_stderr(text: str) -> bool:
    """Write ``text`` to standard error; whether it got there. Never raises.

    ``sys.stderr`` may be None (``pythonw``, a closed descriptor at start), closed by
    the program, or a pipe whose reader left (``... 2>&1 | head``: EPIPE, write(2));
    then descriptor 2 is tried directly, and failing that the text is dropped.
    """
    stream = sys.stderr
    if stream is not None:
        try:
            stream.write(text)
            stream.flush()
            return True
        except Exception:  # ValueError (closed), OSError (EPIPE), anything a replacement raises
            pass
    try:
        os.write(2, text.encode("utf-8", "backslashreplace"))
        return True
    except Exception:
        return False


class RescueFile:
    """One recorder's rescue file in this process: its records not yet saved."""

    def __init__(self, directory: str, policy: str, expected_runs: int | None) -> None:
        self.directory = directory
        self.policy = policy
        self.expected_runs = expected_runs
        # Chosen now, not at the first failure: interpreter shutdown or a frozen clock
        # must not stop a name from being made; the random part keeps recorders apart.
        now = time.time()
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now))
        name = (
            f"{RESCUE_PREFIX}{stamp}{int(now % 1 * 1e6):06d}Z-{os.getpid()}-"
            f"{os.urandom(4).hex()}{RESCUE_SUFFIX}"
        )
        self.name = os.path.join(directory, name)
        self.owner = this_process()
        token()  # the temporary file's name needs it: made now, not at interpreter shutdown
        self.path: str | None = None  # set while the file exists
        self.in_file: list[Pending] = []  # the records the file holds, once written
        self.progress: WriteProgress | None = None  # the last write: what an interrupt left
        self.refused: list[Pending] = []  # records the file refuses: kept here for the user
        self.printed: set[int] = set()  # serials of records already printed to stderr
        self.written: list[Pending] = []  # the records the file (or stderr) last took

    def _advice(self) -> str:
        return (
            f"fold it back into {TIMINGS_FILE} with: stagetimer recover "
            f"{os.path.abspath(self.directory)}"
        )

    def write(self, pending: list[Pending], refused: list[Pending]) -> str:
        """Make the rescue file hold ``pending`` and the refused records; say where it is.

        No record left: the file is removed. Where no file can be written, the records
        not printed before go to standard error as one JSON line. Never raises an
        ``Exception`` (at interpreter shutdown an import fails with ``ImportError``).
        """
        self.refused.extend(refused)
        records = [*list(pending), *self.refused]  # a copy: a handler may append meanwhile
        self.written = records
        try:
            if self.progress is not None:
                self.progress.replaced()  # removes a temporary file an interrupt left behind
            if not records:
                return self._remove()
            payload = self._payload(records)
            text = json.dumps(payload, indent=2, ensure_ascii=False) + "\n"
            self.progress = progress = WriteProgress()
            os.makedirs(self.directory, exist_ok=True)
            # Never writable by others, whatever the umask: ``recover`` trusts a rescue
            # file as far as its owner, who alone may then have written it.
            write_atomic(self.name, text.encode("utf-8"), None, progress, new_mode=0o644)
            self.path = self.name
            self.in_file = records
        except Exception as exc:
            return self._print(records, exc)
        return f"they are in the rescue file {self.name} ({self._advice()})"

    def taken_by_recover(self) -> list[Pending]:
        """The records of our rescue file when ``recover`` folded it meanwhile (and
        removed it: each of its records is stored, or older than what is), else [].
        Asked under the sidecar's lock, which ``recover`` holds while it removes the file.

        Only its absence counts: whatever an interrupt cut short, the name holds our old
        or our new file (``write_atomic``), and ``path`` is cleared only with no record.
        """
        if self.path is None or inode(self.path) is not None:
            return []
        self.path = None
        taken, self.in_file = self.in_file, []
        return taken

    def _payload(self, records: list[Pending]) -> dict[str, Any]:
        entries = [self._entry(p) for p in records]
        hardware, software = descriptions(records)  # of the records just resolved
        payload: dict[str, Any] = {
            "format": RESCUE_FORMAT,
            "directory": os.path.abspath(self.directory),
            "owner": self.owner,
            "policy": self.policy,
            "hardware": hardware,
            "records": entries,
        }
        if software:
            payload["software"] = software
        if self.expected_runs is not None:
            payload["expected_runs"] = self.expected_runs
        return payload

    def _entry(self, p: Pending) -> dict[str, Any]:
        entry = {"id": f"{self.owner['pid']}-{p.serial}", "stage": p.name, "run": p.run_or_bare()}
        if p.policy not in (None, self.policy):
            entry["policy"] = p.policy  # a part of a run (a callback's epoch)
        return entry

    def _remove(self) -> str:
        if self.path is not None:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass
            except OSError:
                return ""  # kept; recover finds its records already stored
            self.path = None
        return ""

    def _print(self, records: list[Pending], exc: Exception) -> str:
        """No rescue file can be written: the records not printed before, to stderr."""
        fresh = [p for p in records if p.serial not in self.printed]
        # Marked first: whatever happens below, no record is printed twice.
        self.printed.update(p.serial for p in fresh)
        reason = f"{type(exc).__name__}: {exc}" if not isinstance(exc, OSError) else str(exc)
        if fresh:
            to_stderr(self._printed(fresh, reason))
        return (
            f"no rescue file could be written ({reason}): the records were printed to "
            "standard error as JSON"
        )

    def _printed(self, fresh: list[Pending], reason: str) -> str:
        """The line to standard error that carries ``fresh`` as JSON."""
        try:
            line = json.dumps(self._payload(fresh), ensure_ascii=False)
            directory = os.path.abspath(self.directory)
        except Exception:  # pragma: no cover - at shutdown, json itself may be gone
            line = repr([(p.name, p.finished.seconds) for p in fresh])
            directory = self.directory
        return (
            f"stagetimer: could not save {len(fresh)} record(s) for {directory} nor "
            f"write a rescue file ({reason}); here they are as JSON: {line}\n"
        )
