"""Recorder: owns one artifact directory and saves each finished stage into its sidecars.

How a process's life is handled (see docs/guarantees.md):

- A record whose save failed stays pending and is, before the stage returns, in the
  recorder's rescue file (``_rescue``), which each later save rewrites or removes.
- A save runs as this thread's section (``_section``): a stage recorded from a signal
  handler inside a save is queued, never waits, and is saved before that save returns.
- Whether an interrupted write reached the disk is read back from its ``Attempt``;
  records that went through a write are never applied twice (an identical run already
  in the stage is taken as theirs).
- ``fork()``: the child drops the parent's pending records, locks and caches.
"""

from __future__ import annotations

import atexit
import contextvars
import functools
import os
import sys
import threading
import time
import warnings
import weakref
from collections.abc import Callable
from typing import Any

import attrs

from stagetimer._errors import InvalidRecordError, NoActiveRecorderError, StageTimerWarning
from stagetimer._format import HARDWARE_FILE, TIMINGS_FILE
from stagetimer._record import pending as _pending_module
from stagetimer._record import reentry as _section
from stagetimer._record.likely_mistakes import appended_again, find_duplicate, unindexed_again
from stagetimer._record.pending import Pending, utc_iso
from stagetimer._record.reentry import defer, reentered, section
from stagetimer._record.settings import (
    as_path,
    check_completed_runs,
    check_directory,
    check_expected_runs,
    check_policy,
    check_timeout,
)
from stagetimer._store.lock import reset_after_fork
from stagetimer._store.parse import parse_hardware, parse_timings
from stagetimer._store.rescue import Rescue, run_is_stored
from stagetimer._store.rules import apply_run, keep_completed_prefix
from stagetimer._store.sidecar import (
    Attempt,
    TimingsCache,
    add_hardware,
    dumps_hardware,
    timings_bytes,
    update_file,
)

__all__ = ["Recorder", "active_recorder", "recording_disabled", "resolve_recorder"]

_stack: contextvars.ContextVar[tuple[Recorder, ...]] = contextvars.ContextVar(
    "stagetimer_recorders", default=()
)
_env_recorders: dict[str, Recorder] = {}
_env_guard = threading.Lock()
# Recorders holding pending records, kept alive (strong references) until those are saved
# or given up at exit: a recorder dropped by its user must not take its records with it.
# Only added to, discarded from and copied: each one atomic operation, no lock.
_with_pending: set[Recorder] = set()
# Every recorder of this process, for the reset in a forked child.
_instances: weakref.WeakSet[Recorder] = weakref.WeakSet()
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


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


def _restore(settings: dict[str, Any]) -> Recorder:
    return Recorder(**settings)


@attrs.define(eq=False)
class Recorder:
    """Owns one artifact directory; ``with rec:`` makes it the active recorder.

    >>> with Recorder("exports/pursuit/classic_3/ippo"):
    ...     with stage("ippo_train", run_idx=0):
    ...         train()

    Parameters (all but ``directory`` keyword-only):

    directory
        The artifact directory (a ``str`` or ``os.PathLike``), created at the first
        save. A path that exists and is not a directory is refused (``ValueError``).
    resume_partial_runs, completed_runs
        ``resume_partial_runs=True`` with ``completed_runs=n`` (an int >= 0, the prefix
        the caller validated against its checkpoints) keeps, at the first save, only
        the runs of indexed stages with ``run_idx < n``. Stages without ``run_idx``
        are kept.
    policy
        ``"sequential"`` (default: one process runs the seeds in order; ``run_idx=0``
        resets a stage, ``k > 0`` appends) or ``"upsert"`` (seeds in parallel, e.g. a
        job array: a record replaces the run with the same ``run_idx`` and label).
    strict
        ``False`` (default): a failed save emits one ``StageTimerWarning``, keeps the
        record pending (retried at the next save and at close/exit) and writes it to
        this recorder's rescue file ``timings.rescue-….json`` before the stage returns
        (``stagetimer recover DIR`` folds it back). ``True``: the error is raised.
    lock_timeout
        Seconds to wait for a sidecar's lock (default 60); ``float("inf")`` waits as
        long as it takes. A save that times out fails as above.
    expected_runs
        ``None`` (default) or an int >= 1: the number of runs the suite will make,
        written as ``"expected_runs"`` into each indexed stage this recorder records,
        so that the report can show progress.

    A recorder can be pickled (its settings; a spawn worker gets a fresh one for the
    same directory). After ``fork()`` the child's recorders start without the parent's
    pending records.
    """

    directory: str = attrs.field(converter=as_path, validator=check_directory)
    resume_partial_runs: bool = attrs.field(default=False, kw_only=True)
    completed_runs: int | None = attrs.field(
        default=None, kw_only=True, validator=check_completed_runs
    )
    policy: str = attrs.field(default="sequential", kw_only=True, validator=check_policy)
    strict: bool = attrs.field(default=False, kw_only=True)
    lock_timeout: float = attrs.field(default=60.0, kw_only=True, validator=check_timeout)
    expected_runs: int | None = attrs.field(
        default=None, kw_only=True, validator=check_expected_runs
    )
    _pending: list[Pending] = attrs.field(factory=list, init=False, repr=False)
    _resume_done: bool = attrs.field(default=False, init=False, repr=False)
    _hardware_stat: tuple[int, int, int] | None = attrs.field(default=None, init=False, repr=False)
    _hardware_known: set[str] = attrs.field(factory=set, init=False, repr=False)
    _mutex: threading.RLock = attrs.field(factory=threading.RLock, init=False, repr=False)
    _cache: TimingsCache = attrs.field(factory=TimingsCache, init=False, repr=False)
    # (the write, the records it holds, whether it truncated): until settled
    _inflight: tuple[Attempt, list[Pending], bool] | None = attrs.field(
        default=None, init=False, repr=False
    )
    _rescue: Rescue = attrs.field(init=False, repr=False)
    _swept: set[str] = attrs.field(factory=set, init=False, repr=False)  # files it cleared
    # Stages (with their label under upsert) this recorder recorded without run_idx, and
    # the stages it has warned about: each likely mistake is said once per stage.
    _unindexed: set[tuple[str, str | None]] = attrs.field(factory=set, init=False, repr=False)
    _warned: set[tuple[str, str]] = attrs.field(factory=set, init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if self.resume_partial_runs and self.completed_runs is None:
            raise ValueError(
                "resume_partial_runs=True needs completed_runs=n, the number of runs "
                "validated against the checkpoints"
            )
        if not self.resume_partial_runs and self.completed_runs is not None:
            raise ValueError("completed_runs is only meaningful with resume_partial_runs=True")
        self._rescue = Rescue(self.directory, self.policy, self.expected_runs)
        _instances.add(self)

    def __reduce__(self) -> tuple[Callable[[dict[str, Any]], Recorder], tuple[dict[str, Any]]]:
        settings = {
            "directory": self.directory,
            "resume_partial_runs": self.resume_partial_runs,
            "completed_runs": self.completed_runs,
            "policy": self.policy,
            "strict": self.strict,
            "lock_timeout": self.lock_timeout,
            "expected_runs": self.expected_runs,
        }
        return _restore, (settings,)

    def _reset_in_child(self) -> None:
        """After fork: the parent's pending records, rescue file and locks are not ours."""
        self._pending = []
        self._inflight = None
        self._mutex = threading.RLock()
        self._cache = TimingsCache()
        self._hardware_stat = None
        self._hardware_known = set()
        self._swept = set()
        self._rescue = Rescue(self.directory, self.policy, self.expected_runs)

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
        """Save one validated run now (arguments must already be checked).

        Called while this thread is already saving (from a signal handler), the run is
        queued and saved before that save returns.
        """
        if run_idx is None:
            self._note_unindexed(name, label)
        iso = None if started_at is None else utc_iso(started_at)
        pending = Pending(name, (seconds, run_idx, label, iso, metadata))
        # Registered first (two atomic operations): from here on an interrupt cannot
        # lose it; it is saved by this call, by another thread's save, or at exit.
        self._pending.append(pending)
        _with_pending.add(self)
        try:
            if reentered():
                defer(self)
                return
            section(functools.partial(self._record_one, pending))
        except BaseException as exc:
            if not isinstance(exc, Exception):
                self._make_safe()
            raise

    def _note_unindexed(self, name: str, label: str | None) -> None:
        """Warn once when this recorder replaces an un-indexed stage it recorded itself."""
        key = (name, label if self.policy == "upsert" else None)
        if key not in self._unindexed:
            self._unindexed.add(key)
            return
        if (name, "unindexed") not in self._warned:
            self._warned.add((name, "unindexed"))
            self._warn(unindexed_again(name))

    def _warn_duplicates(self, duplicates: list[tuple[str, int]]) -> None:
        """Under ``sequential``: a run k > 0 appended beside a run k already on disk."""
        for name, run_idx in duplicates:
            if (name, "duplicate") in self._warned:
                continue
            self._warned.add((name, "duplicate"))
            self._warn(appended_again(name, run_idx))

    def _record_one(self, pending: Pending) -> None:
        with self._mutex:
            if self._pending:  # else another thread's save stored it meanwhile
                self._attempt(pending, raising=True)

    def _flush(self) -> None:
        """Save what signal handlers queued; a failure warns and rescues, never raises."""
        with self._mutex:
            if self._pending:
                self._attempt(self._pending[-1], raising=False, lenient=True)

    def close(self) -> None:
        """Save pending records; what still fails stays in the rescue file, for ``recover``."""
        if reentered():
            return  # a signal handler inside a save: that save stores everything pending
        section(self._close_now)

    def _close_now(self) -> None:
        with self._mutex:
            if not self._pending:
                return
            try:
                rejected = self._save()
            except Exception as exc:
                self._settle()
                where = self._rescue.write(self._pending, [])
                count = len(self._pending)
                # Given up: the records live on in the rescue file, which this recorder
                # no longer rewrites.
                self._pending = []
                self._rescue = Rescue(self.directory, self.policy, self.expected_runs)
                _with_pending.discard(self)
                self._warn(f"{count} record(s) could not be saved at close: {exc}; {where}")
                return
            except BaseException:
                self._make_safe()
                raise
            self._after_save(rejected, raising=False)

    def _attempt(self, newest: Pending, *, raising: bool, lenient: bool = False) -> None:
        """One save of everything pending; a failure warns once and updates the rescue file."""
        try:
            rejected = self._save()
        except Exception as exc:
            self._settle()
            if self.strict and not lenient:
                self._forget(newest)
                raise
            _with_pending.add(self)
            where = self._rescue.write(self._pending, [])
            seconds = newest.fields[0]
            self._warn(
                f"stage {newest.name!r} finished ({seconds:.3f} s) but could not be saved: "
                f"{exc}; {len(self._pending)} record(s) kept pending, retried at the next "
                f"save and at exit; {where}"
            )
            return
        except BaseException:
            self._make_safe()
            raise
        self._after_save(rejected, raising=raising)

    def _forget(self, pending: Pending) -> None:
        self._pending = [p for p in self._pending if p is not pending]
        self._rescue.write(self._pending, [])

    def _make_safe(self) -> None:
        """After an interrupt: settle the write it cut short, rescue what is still pending."""
        self._settle()
        if self._pending:
            _with_pending.add(self)
            self._rescue.write(self._pending, [])

    def _after_save(
        self, rejected: list[tuple[Pending, InvalidRecordError]], *, raising: bool
    ) -> None:
        """Records the file refuses (their name holds other data) are bad input: raised.

        Lenient recorders first put them in the rescue file, so nothing is lost; at close
        they are only rescued.
        """
        if not self._pending:
            _with_pending.discard(self)
        refused = [] if self.strict else [p for p, _ in rejected]
        where = self._rescue.write(self._pending, refused)
        if refused:
            self._warn(f"{rejected[0][1]}; {where}")
        if rejected and (raising or self.strict):
            raise rejected[0][1]

    def _settle(self) -> None:
        """Learn whether the last write reached the disk; drop the records it stored."""
        inflight = self._inflight
        if inflight is None:
            return
        attempt, records, truncated = inflight
        if attempt.replaced():
            stored = {id(p) for p in records}
            self._pending = [p for p in self._pending if id(p) not in stored]
            if truncated:
                self._resume_done = True
        self._inflight = None

    def _save(self) -> list[tuple[Pending, InvalidRecordError]]:
        """Save every pending record (hardware first); return those the file refused.

        The first lock taken creates the directory when it is missing.
        """
        self._settle()
        deadline = time.monotonic() + self.lock_timeout  # one budget for the whole save
        records = list(self._pending)
        for pending in records:
            pending.resolve()
        self._save_hardware({p.hardware_id: p.hardware for p in records})  # type: ignore[misc]
        rejected: list[tuple[Pending, InvalidRecordError]] = []
        duplicates: list[tuple[str, int]] = []
        sequential = self.policy == "sequential"
        truncate = self.resume_partial_runs and not self._resume_done
        expected = self.expected_runs

        def change(data: dict[str, Any]) -> bytes | None:
            rejected.clear()
            duplicates.clear()
            if truncate:
                assert self.completed_runs is not None
                keep_completed_prefix(data, self.completed_runs)
            trusted = self._cache.trusted_totals
            changed = truncate
            for pending in records:
                run = pending.run
                assert run is not None
                if pending.attempted and run_is_stored(data, pending.name, run):
                    continue  # an interrupted write of this process stored it already
                pending.attempted = True
                if sequential:
                    find_duplicate(data, pending.name, run, duplicates)
                try:
                    apply_run(
                        data, pending.name, run, self.policy,
                        trusted_total=pending.name in trusted,
                    )
                except InvalidRecordError as exc:
                    rejected.append((pending, exc))
                    continue
                trusted.add(pending.name)
                changed = True
                if expected is not None and run.get("run_idx") is not None:
                    data[pending.name]["expected_runs"] = expected
            return timings_bytes(data, self._cache) if changed else None

        attempt = Attempt()
        self._inflight = (attempt, records, truncate)
        remaining = max(0.0, deadline - time.monotonic())
        path = self.timings_path
        update_file(
            path, parse_timings, change, remaining, self._cache, attempt, path not in self._swept
        )
        self._swept.add(path)
        # Written, or nothing needed writing (every record refused or already stored).
        attempt.done = True
        self._settle()
        if duplicates:
            self._warn_duplicates(duplicates)
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

        update_file(
            path, parse_hardware, change, self.lock_timeout, sweep=path not in self._swept
        )
        self._swept.add(path)
        st = os.stat(path)
        self._hardware_stat = (st.st_ino, st.st_size, st.st_mtime_ns)
        self._hardware_known = set(needed)

    def _warn(self, message: str) -> None:
        """One ``StageTimerWarning``, attributed to the first caller outside stagetimer."""
        level, frame = 1, sys._getframe()
        while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
            level, frame = level + 1, frame.f_back  # type: ignore[assignment]
        warnings.warn(f"{self.directory}: {message}", StageTimerWarning, stacklevel=level)


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
    recorders = list(_with_pending)  # one C-level copy: atomic under the GIL
    for rec in recorders:
        try:
            rec.close()
        except Exception as exc:  # at exit, one recorder's failure must not hide the others'
            warnings.warn(
                f"{rec.directory}: closing at exit failed: {exc}", StageTimerWarning, stacklevel=2
            )


def _after_fork_in_child() -> None:
    """A forked child starts with no lock held and none of the parent's pending records."""
    global _env_guard
    _env_guard = threading.Lock()
    _with_pending.clear()
    _pending_module.reset_after_fork()
    _section.reset_after_fork()
    reset_after_fork()
    from stagetimer._store import sidecar as _sidecar

    _sidecar.reset_after_fork()
    for rec in list(_instances):
        rec._reset_in_child()
    if "stagetimer.hardware._capture" in sys.modules:
        from stagetimer.hardware import _capture

        # The child may run elsewhere (it may set its own affinity): capture again. The
        # cache's lock may have been copied held by a thread the child does not have.
        _capture._live_lock = threading.Lock()
        _capture.clear_cache()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
