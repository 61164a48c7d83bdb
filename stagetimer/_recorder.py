"""Recorder: owns one artifact directory and saves each finished stage into its sidecars."""

from __future__ import annotations

import atexit
import contextvars
import json
import os
import sys
import threading
import time
import warnings
from typing import Any

import attrs

from stagetimer._errors import (
    InvalidRecordError,
    NoActiveRecorderError,
    SchemaVersionError,
    SidecarCorruptError,
    StageTimerWarning,
)
from stagetimer._parse import parse_hardware, parse_timings
from stagetimer._rules import POLICIES, apply_run, keep_completed_prefix
from stagetimer._sidecar import (
    HARDWARE_FILE,
    TIMINGS_FILE,
    TimingsCache,
    add_hardware,
    dumps_hardware,
    timings_bytes,
    update_file,
    write_atomic,
)

__all__ = ["Recorder", "active_recorder", "recording_disabled", "resolve_recorder"]

# Errors that mean "this save did not happen": the record stays pending (lenient) or the
# error is raised (strict). LockTimeoutError is a TimeoutError, hence an OSError.
_SAVE_ERRORS = (OSError, SidecarCorruptError, SchemaVersionError)

_stack: contextvars.ContextVar[tuple[Recorder, ...]] = contextvars.ContextVar(
    "stagetimer_recorders", default=()
)
_env_recorders: dict[str, Recorder] = {}
_env_guard = threading.Lock()
# Recorders holding pending records, kept alive (strong references) until those are saved
# or rescued at exit: a recorder dropped by its user must not take its records with it.
_with_pending: set[Recorder] = set()
_with_pending_guard = threading.Lock()
_live_hardware: tuple[str, dict[str, Any]] | None = None


_DISABLE = "STAGETIMER_DISABLE"
# os.environ.get encodes the key and decodes the value on every call (~0.8 µs, half a
# disabled stage); os.environ keeps the encoded mapping it updates in ``_data``
# (CPython's os.py), which is read here directly when present.
_environ_data: Any = getattr(os.environ, "_data", None)
_disable_key: Any = None
_ONE: Any = None
if _environ_data is not None:
    _disable_key = os.environ.encodekey(_DISABLE)
    _ONE = os.environ.encodevalue("1")


def recording_disabled() -> bool:
    """``STAGETIMER_DISABLE=1`` (or true/yes/on) turns recording off."""
    if _environ_data is not None:
        raw = _environ_data.get(_disable_key)
        if raw is None:
            return False
        if raw == _ONE:
            return True
        value: str | None = os.environ.decodevalue(raw)
    else:
        value = os.environ.get(_DISABLE)
    return value is not None and value.strip().lower() in ("1", "true", "yes", "on")


def _this_hardware() -> tuple[str, dict[str, Any]]:
    """This process's (hardware_id, description), captured once."""
    global _live_hardware
    if _live_hardware is None:
        from stagetimer.hardware import capture_hardware, description, hardware_id

        hw = capture_hardware()
        _live_hardware = (hardware_id(hw), description(hw))
    return _live_hardware


def _utc_iso(timestamp: float) -> str:
    """``2026-11-29T22:28:02.123Z``"""
    whole = int(timestamp)
    millis = int((timestamp - whole) * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{millis:03d}Z"


class _Pending:
    """One finished run waiting to be saved, with the hardware it ran on."""

    __slots__ = ("hardware", "hardware_id", "name", "run")

    def __init__(self, name: str, run: dict[str, Any], hw_id: str, hw: dict[str, Any]) -> None:
        self.name, self.run, self.hardware_id, self.hardware = name, run, hw_id, hw


def _as_path(directory: str | os.PathLike[str]) -> str:
    return os.fspath(directory)


def _check_completed_runs(instance: Recorder, attribute: Any, value: object) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ValueError(f"completed_runs {value!r} is not valid: expected an int >= 0")


def _check_policy(instance: Recorder, attribute: Any, value: object) -> None:
    if value not in POLICIES:
        raise ValueError(f"policy {value!r} is not valid: expected one of {POLICIES}")


def _check_timeout(instance: Recorder, attribute: Any, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ValueError(f"lock_timeout {value!r} is not valid: expected a number of seconds >= 0")


@attrs.define(eq=False)
class Recorder:
    """Owns one artifact directory; ``with rec:`` makes it the active recorder.

    >>> with Recorder("exports/pursuit/classic_3/ippo"):
    ...     with stage("ippo_train", run_idx=0):
    ...         train()

    ``resume_partial_runs=True`` with ``completed_runs=n`` keeps, at the first save,
    only the runs of indexed stages with ``run_idx < n`` (the prefix the caller
    validated against its checkpoints). ``policy`` is ``"sequential"`` (one process
    runs the seeds in order) or ``"upsert"`` (seeds in parallel). With
    ``strict=False`` a failed save warns and keeps the record pending; with
    ``strict=True`` it raises.
    """

    directory: str = attrs.field(converter=_as_path)
    resume_partial_runs: bool = attrs.field(default=False, kw_only=True)
    completed_runs: int | None = attrs.field(
        default=None, kw_only=True, validator=_check_completed_runs
    )
    policy: str = attrs.field(default="sequential", kw_only=True, validator=_check_policy)
    strict: bool = attrs.field(default=False, kw_only=True)
    lock_timeout: float = attrs.field(default=60.0, kw_only=True, validator=_check_timeout)
    _pending: list[_Pending] = attrs.field(factory=list, init=False, repr=False)
    _resume_done: bool = attrs.field(default=False, init=False, repr=False)
    _hardware_stat: tuple[int, int, int] | None = attrs.field(default=None, init=False, repr=False)
    _hardware_known: set[str] = attrs.field(factory=set, init=False, repr=False)
    _mutex: threading.RLock = attrs.field(factory=threading.RLock, init=False, repr=False)
    _cache: TimingsCache = attrs.field(factory=TimingsCache, init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if self.resume_partial_runs and self.completed_runs is None:
            raise ValueError(
                "resume_partial_runs=True needs completed_runs=n, the number of runs "
                "validated against the checkpoints"
            )
        if not self.resume_partial_runs and self.completed_runs is not None:
            raise ValueError("completed_runs is only meaningful with resume_partial_runs=True")

    @property
    def timings_path(self) -> str:
        return os.path.join(self.directory, TIMINGS_FILE)

    @property
    def hardware_path(self) -> str:
        return os.path.join(self.directory, HARDWARE_FILE)

    @property
    def pending(self) -> int:
        """How many finished records are waiting to be saved."""
        return len(self._pending)

    def __enter__(self) -> Recorder:
        _stack.set((*_stack.get(), self))
        return self

    def __exit__(self, *exc_info: object) -> None:
        stack = list(_stack.get())
        for i in range(len(stack) - 1, -1, -1):
            if stack[i] is self:
                del stack[i]
                break
        _stack.set(tuple(stack))
        self.close()

    # -- saving ------------------------------------------------------------

    def record(
        self,
        name: str,
        seconds: float,
        *,
        run_idx: int | None = None,
        label: str | None = None,
        started_at: float | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        """Save one validated run now (arguments must already be checked)."""
        hw_id, hw = _this_hardware()
        run: dict[str, Any] = {"seconds": seconds, "hardware_id": hw_id}
        if run_idx is not None:
            run["run_idx"] = run_idx
        if label is not None:
            run["label"] = label
        if started_at is not None:
            run["started_at"] = _utc_iso(started_at)
        if metadata:
            run.update(metadata)
        pending = _Pending(name, run, hw_id, hw)
        with self._mutex:
            self._pending.append(pending)
            try:
                rejected = self._save()
            except _SAVE_ERRORS as exc:
                if self.strict:
                    self._pending.remove(pending)
                    raise
                with _with_pending_guard:
                    _with_pending.add(self)
                self._warn(
                    f"stage {name!r} finished ({seconds:.3f} s) but could not be saved: {exc}; "
                    f"{len(self._pending)} record(s) kept pending, retried at the next save "
                    "and at close"
                )
                return
            self._handle_rejected(rejected, raising=True)

    def close(self) -> None:
        """Save pending records; where that still fails, write them to a rescue file."""
        with self._mutex:
            if not self._pending:
                return
            try:
                rejected = self._save()
            except _SAVE_ERRORS as exc:
                records, self._pending[:] = list(self._pending), []
                with _with_pending_guard:
                    _with_pending.discard(self)
                self._rescue(records, f"could not be saved at close: {exc}")
                return
            self._handle_rejected(rejected, raising=False)

    def _handle_rejected(
        self, rejected: list[tuple[_Pending, InvalidRecordError]], *, raising: bool
    ) -> None:
        """Records the file refuses (their name holds other data) are bad input: raised.

        Lenient recorders first put them in a rescue file, so nothing is lost; at close
        they are only rescued.
        """
        if not self.strict:
            for pending, exc in rejected:
                self._rescue([pending], str(exc))
        if rejected and (raising or self.strict):
            raise rejected[0][1]

    def _save(self) -> list[tuple[_Pending, InvalidRecordError]]:
        """Save every pending record (hardware first); return those the file refused.

        The first lock taken creates the directory when it is missing.
        """
        deadline = time.monotonic() + self.lock_timeout  # one budget for the whole save
        self._save_hardware({p.hardware_id: p.hardware for p in self._pending})
        rejected: list[tuple[_Pending, InvalidRecordError]] = []

        def change(data: dict[str, Any]) -> bytes | None:
            rejected.clear()
            truncate = self.resume_partial_runs and not self._resume_done
            if truncate:
                assert self.completed_runs is not None
                keep_completed_prefix(data, self.completed_runs)
            trusted = self._cache.trusted_totals
            for pending in self._pending:
                try:
                    apply_run(
                        data,
                        pending.name,
                        pending.run,
                        self.policy,
                        trusted_total=pending.name in trusted,
                    )
                except InvalidRecordError as exc:
                    rejected.append((pending, exc))
                else:
                    trusted.add(pending.name)
            if not truncate and len(rejected) == len(self._pending):
                return None  # nothing changed: leave the file's bytes alone
            return timings_bytes(data, self._cache)

        remaining = max(0.0, deadline - time.monotonic())
        update_file(self.timings_path, parse_timings, change, remaining, self._cache)
        self._resume_done = True
        self._pending.clear()
        with _with_pending_guard:
            _with_pending.discard(self)
        return rejected

    def _save_hardware(self, needed: dict[str, dict[str, Any]]) -> None:
        path = self.hardware_path
        if needed.keys() <= self._hardware_known:
            # Entries are never removed: an unchanged file still holds what we confirmed.
            try:
                st = os.stat(path)
            except FileNotFoundError:
                st = None
            if st is not None and (st.st_ino, st.st_size, st.st_mtime_ns) == self._hardware_stat:
                return

        def change(data: dict[str, Any]) -> str | None:
            return dumps_hardware(data) if add_hardware(data, needed) else None

        update_file(path, parse_hardware, change, self.lock_timeout)
        st = os.stat(path)
        self._hardware_stat = (st.st_ino, st.st_size, st.st_mtime_ns)
        self._hardware_known = set(needed)

    # -- last resorts --------------------------------------------------------

    def _warn(self, message: str) -> None:
        import logging  # only on the failure path

        logging.getLogger("stagetimer").warning("%s: %s", self.directory, message)
        warnings.warn(f"{self.directory}: {message}", StageTimerWarning, stacklevel=4)

    def _rescue(self, records: list[_Pending], reason: str) -> None:
        payload = {
            "directory": os.path.abspath(self.directory),
            "reason": reason,
            "policy": self.policy,
            "hardware": {p.hardware_id: p.hardware for p in records},
            "records": [{"stage": p.name, "run": p.run} for p in records],
        }
        now = time.time()
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)) + f"{int(now % 1 * 1e6):06d}Z"
        path = os.path.join(self.directory, f"timings.rescue-{stamp}-{os.getpid()}.json")
        try:
            text = json.dumps(payload, indent=2, ensure_ascii=False) + "\n"
            write_atomic(path, text.encode("utf-8"), None)  # a new file of its own
        except OSError as exc:
            sys.stderr.write(
                f"stagetimer: could not save {len(records)} record(s) nor a rescue file "
                f"({exc}); here they are: {json.dumps(payload, ensure_ascii=False)}\n"
            )
            sys.stderr.flush()
            return
        self._warn(f"{len(records)} record(s) written to the rescue file {path}: {reason}")


def active_recorder() -> Recorder | None:
    """The recorder made active by the innermost ``with rec:`` of this context."""
    stack = _stack.get()
    return stack[-1] if stack else None


def resolve_recorder(recorder: Recorder | None) -> Recorder:
    """``recorder``, else the active one, else one for ``STAGETIMER_DIR``."""
    if recorder is not None:
        if not isinstance(recorder, Recorder):
            raise InvalidRecordError(
                f"recorder {recorder!r} is not valid: expected a stagetimer.Recorder", recorder
            )
        return recorder
    stack = _stack.get()
    if stack:
        return stack[-1]
    directory = os.environ.get("STAGETIMER_DIR")
    if not directory:
        raise NoActiveRecorderError()
    key = os.path.abspath(directory)
    with _env_guard:
        rec = _env_recorders.get(key)
        if rec is None:
            rec = _env_recorders[key] = Recorder(directory)
        return rec


@atexit.register
def _close_all() -> None:
    with _with_pending_guard:
        recorders = list(_with_pending)
    for rec in recorders:
        try:
            rec.close()
        except Exception:  # at exit, one recorder's failure must not hide the others'
            import logging

            logging.getLogger("stagetimer").exception("closing %s at exit failed", rec.directory)
