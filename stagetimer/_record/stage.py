"""The ways to time a stage as it runs: ``stage`` (with / async with) and ``record_timing``.

``@timed_stage`` (``timed.py``) builds on ``stage``. ``StageTarget`` is the contract
between a stage and the recorder it records into.
"""

from __future__ import annotations

import contextlib
import time
import weakref
from os import getpid
from time import perf_counter
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from stagetimer._format import MAX_RUN_IDX as _MAX
from stagetimer._record import resources
from stagetimer._record.active import open_stages
from stagetimer._record.recorder import Recorder, record_run, resolve_recorder
from stagetimer._settings import recording_disabled
from stagetimer._store.validate import check_record, copy_metadata

if TYPE_CHECKING:
    from stagetimer._record.attempt import Started
    from stagetimer._record.attempt_markers import AttemptMarkers
    from stagetimer._record.pending import Pending
    from stagetimer._record.saver import FinishedArgs

__all__ = [
    "Stage",
    "StageTarget",
    "checked_stage",
    "open_parent",
    "part_stage",
    "record_timing",
    "stage",
]


class StageTarget(Protocol):
    """What a ``Stage`` needs of the recorder it records into (``Recorder`` keeps it).

    Its members keep their leading underscore: they are the recorder's side of this
    contract, not part of ``Recorder``'s public API. A stage's life through them:

    1. on entry, ``_markers`` writes its started marker (``begin``, ``mark``; ``abandon``
       when the entry is cut short) and, when the block fails, says how (``failed``);
    2. on a normal exit, ``_hand_over`` registers the run as pending: from then on no
       interrupt loses it;
    3. ``_save_handed`` saves it (queued when this thread is already saving); a strict
       recorder's failure raises;
    4. ``_make_safe``, after an interrupt between 2 and 3, settles the write it cut
       short and rescues what is pending.
    """

    @property
    def _markers(self) -> AttemptMarkers: ...

    def _hand_over(
        self, finished: FinishedArgs, resources: dict[str, Any] | None = None,
        attempt: Started | None = None, policy: str | None = None,
    ) -> Pending: ...

    def _save_handed(self, pending: Pending) -> None: ...

    def _make_safe(self) -> None: ...

# Stage names that passed check_name (a name is checked once per process, not per stage).
_checked_names: set[str] = set()


def record_timing(
    name: str,
    seconds: float,
    *,
    run_idx: int | None = None,
    label: str | None = None,
    recorder: Recorder | None = None,
    **metadata: Any,
) -> None:
    """Record that stage ``name`` took ``seconds``, applying the replacement rules, and save now.

    >>> record_timing("alpharank", 12.5, recorder=rec)
    """
    record_run(recorder, name, seconds, run_idx, label, None, metadata)


def stage(
    name: str,
    *,
    run_idx: int | None = None,
    label: str | None = None,
    recorder: Recorder | None = None,
    **metadata: Any,
) -> Stage:
    """Time a block as one run of stage ``name``; record it when the block ends normally.

    >>> with stage("ippo_train", run_idx=i):
    ...     train(i)

    Arguments are checked on entry, before the block runs. When the block raises,
    nothing is recorded and the exception propagates unchanged. ``.seconds`` holds
    the duration (``time.perf_counter``) after exit; it is set once the record was
    handed to the recorder (an interrupt in the exit before that leaves it None: the
    stage was not recorded). Also ``async with stage(...)``.
    """
    # A function building the object, not a class: on CPython 3.11 calling a class with
    # keyword arguments packs them into a dict and unpacks them again for __init__,
    # about a fifth of the cost of a whole codetiming.Timer block (see benchmarks/).
    return _made(Stage(), name, run_idx, label, recorder, metadata)


class Stage:
    """One timed block, made by :func:`stage`: its arguments, and ``.seconds`` after exit."""

    #: whether its label and metadata were checked and copied by its maker (``_Checked``)
    _arguments_checked = False
    #: the replacement rule its run is saved by; None: its recorder's policy (``_Part``)
    _policy: str | None = None

    __slots__ = (
        "__weakref__", "_attempt", "_recorder", "_t0", "_target", "_until", "_used0", "_wall0",
        "label", "metadata", "name", "run_idx", "seconds",
    )
    name: str
    run_idx: int | None
    label: str | None
    metadata: dict[str, Any]
    seconds: float | None
    _recorder: Recorder | None
    _target: StageTarget | None
    _t0: float
    _wall0: float
    _used0: tuple[Any, ...]  # the resource counters at entry (resources.start)
    _attempt: Started | None  # its started marker (attempt.py), None when none was written

    def __enter__(self) -> Stage:
        name, run_idx = self.name, self.run_idx
        # Fast path for a name already checked and a plain run index; anything else gets
        # the full checks. A disabled stage must cost no more than a bare
        # timer and one read of the switch (benchmarks/run.py).
        # A stage made by ``checked_stage`` had its label and metadata checked once.
        if (
            type(name) is not str
            or name not in _checked_names
            or (run_idx is not None and (type(run_idx) is not int or not 0 <= run_idx <= _MAX))
            or ((self.label is not None or self.metadata) and not self._arguments_checked)
        ):
            self._check()
        if recording_disabled():
            self._target = None
            self._t0 = perf_counter()
            return self
        self._attempt = None
        return self._begin(resolve_recorder(self._recorder))

    def _check(self) -> None:
        """The full checks of its arguments, and its metadata copied (once per stage)."""
        name = self.name
        check_record(name, self.run_idx, self.label)
        if self.metadata and not self._arguments_checked:
            # Checked and copied on entry, in one pass: later changes by the caller
            # do not change the record.
            self.metadata = copy_metadata(self.metadata)
        if len(_checked_names) < 4096:
            _checked_names.add(name)

    def _begin(self, target: StageTarget) -> Stage:
        """Enter as a stage recorded into ``target``: its started marker, then the clock."""
        self._target = target
        self._wall0 = wall0 = time.time()
        # The started marker, durable before the block runs (nothing when markers are
        # off or cannot be written). An interrupt from here until the block runs
        # removes it again: that attempt never started.
        markers = target._markers
        opened = open_stages.get()
        parent = _parent(opened, target) if opened else None
        if opened:
            opened = tuple(ref for ref in opened if ref() is not None)
        self._attempt = attempt = markers.begin(self.name, self.run_idx, self.label, wall0, parent)
        try:
            if attempt is not None and not markers.mark(attempt):
                self._attempt = None
            open_stages.set((*opened, weakref.ref(self)))  # the parent of what opens in it
            # Read before the clock starts and after it stops: their cost is not the
            # stage's.
            self._used0 = resources.start()
            self._t0 = perf_counter()
            return self
        except BaseException:
            _close(self)
            markers.abandon(attempt)
            raise

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: object, tb: TracebackType | None
    ) -> None:
        try:
            seconds = perf_counter() - self._t0
            target = self._target
            if target is None:
                self.seconds = seconds
                return
            _close(self)
            attempt = self._attempt
            if attempt is not None and attempt.pid != getpid():
                attempt = None  # a forked child leaving its parent's block: not its attempt
            if exc_type is not None:
                ended_at = until = None
                with contextlib.suppress(AttributeError):  # unset but by ``_settle``
                    until = self._until
                if until is not None:
                    ended_at = time.time() - max(perf_counter() - until, 0.0)
                    seconds = max(until - self._t0, 0.0)
                    if exc_type is _EndUnknown:
                        exc_type = None
                self.seconds = seconds
                resources.discard(self._used0)  # records nothing: closes what start() opened
                if attempt is not None:
                    target._markers.failed(attempt, exc_type, tb, seconds, ended_at)
                return
            # The record is handed to the recorder before ``seconds`` says the stage
            # finished: an interrupt before the hand-over means it did not (its marker
            # says so); after it, the record is pending (and rescued) or saved.
            used = resources.finish(self._used0)  # also closes what start() opened
            finished = (self.name, seconds, self.run_idx, self.label, self._wall0, self.metadata)
            pending = target._hand_over(finished, used, attempt, self._policy)
            self.seconds = seconds
            target._save_handed(pending)
        except BaseException as error:
            self._exit_failed(error)
            raise

    def _exit_failed(self, error: BaseException) -> None:
        """The exit itself raised (a strict save that failed, an interrupt anywhere in
        it): the record is safe if it was handed over, else the marker says the attempt
        failed."""
        target = self._target
        if target is None:
            return
        _close(self)  # where the exit was cut off before it got so far
        seconds = perf_counter() - self._t0
        if isinstance(error, Exception):
            self.seconds = seconds  # a save that failed (strict): the block finished
        else:
            target._make_safe()  # an interrupt between the hand-over and the save
        attempt = self._attempt
        if attempt is not None and attempt.pid == getpid():
            target._markers.failed(attempt, type(error), error.__traceback__, seconds)

    def _settle(self, error: BaseException | None, until: float) -> None:
        """Leave a stage whose block ended without its exit running (a framework that calls
        no hook when a fit raises): failed, as a block that raised ``error`` (None: not
        known, its marker says interrupted), its time up to ``until``, the
        ``time.perf_counter()`` of its last sign of life. Nothing is recorded."""
        self._until = until
        exc_type = _EndUnknown if error is None else type(error)
        self.__exit__(exc_type, error, None if error is None else error.__traceback__)

    async def __aenter__(self) -> Stage:
        return self.__enter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: object, tb: TracebackType | None
    ) -> None:
        self.__exit__(exc_type, exc, tb)


def _parent(
    opened: tuple[weakref.ref[Stage], ...], target: StageTarget
) -> dict[str, str] | None:
    """What a stage of ``target`` entered now records as its ``parent``: the innermost
    stage of the same recorder open in this thread or task (``opened``), by its name and
    attempt id; None where there is none, or where that stage has no started marker (no
    id to name) or is a forked parent's (another process: not this thread)."""
    for ref in reversed(opened):
        outer = ref()
        if outer is not None and outer._target is target:
            started = outer._attempt
            if started is None or started.pid != getpid():
                return None
            return {"stage": outer.name, "attempt_id": started.id}
    return None


def open_parent(target: StageTarget) -> dict[str, str] | None:
    """The ``parent`` of a run of ``target`` measured now without a stage of its own (a
    callback's time between two hooks): the innermost stage of ``target`` open in this
    thread or task, as a stage entered now would record it."""
    opened = open_stages.get()
    return _parent(opened, target) if opened else None


def _close(timing: Stage) -> None:
    """``timing`` is no longer open in this context (innermost, the usual case, in one
    step; a generator's stage may close under another that opened after it)."""
    opened = open_stages.get()
    if opened and opened[-1]() is timing:
        open_stages.set(opened[:-1])
    elif opened:
        open_stages.set(tuple(ref for ref in opened if ref() not in (timing, None)))


class _EndUnknown(BaseException):
    """What ended a settled stage, where nothing says (never raised; see ``_settle``)."""


class _Part(Stage):
    """A stage whose run is one part of a run (a fit's epoch): saved by ``upsert``'s rule
    (it replaces the part of the same ``run_idx``, ``label`` and rank) under any policy."""

    __slots__ = ()
    _policy = "upsert"


def part_stage(
    name: str, *, run_idx: int | None, label: str | None, recorder: Recorder | None
) -> Stage:
    """``stage(...)`` whose run replaces the run of the same ``run_idx``, ``label`` and
    rank, and no other, whatever the recorder's policy (a callback's fit and epochs: the
    parts of one run, which ``"sequential"``'s reset would drop one by one)."""
    return _made(_Part(), name, run_idx, label, recorder, {})


class _Checked(Stage):
    """A stage whose label and metadata were checked and copied before it was made."""

    __slots__ = ()
    _arguments_checked = True


def checked_stage(
    name: str,
    run_idx: int | None,
    label: str | None,
    recorder: Recorder | None,
    metadata: dict[str, Any],
) -> Stage:
    """``stage(...)`` for a ``label`` that passed ``check_record`` and ``metadata`` that
    ``copy_metadata`` made (``@timed_stage`` does both once, at decoration): each entry
    checks only the name (once per process) and the run index, and the copy is shared."""
    return _made(_Checked(), name, run_idx, label, recorder, metadata)


def _made(
    timing: Stage, name: str, run_idx: int | None, label: str | None,
    recorder: Recorder | None, metadata: dict[str, Any],
) -> Stage:
    """``timing``, a new stage, given its arguments (none checked yet)."""
    timing.name = name
    timing.run_idx = run_idx
    timing.label = label
    timing.metadata = metadata
    timing.seconds = None
    timing._recorder = recorder
    return timing
