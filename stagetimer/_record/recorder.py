"""Recorder: owns one artifact directory and saves each finished stage into its sidecars.

The recorder is the facade: its settings, ``with rec:``, ``record``, ``close``,
``pending`` and pickling, the checks of the runs handed to it, and how it warns. Saving
is its ``Saver``'s (``saver.py``), whose every save ends in one named outcome
(``outcomes.py``) that reports itself through the recorder's warning.
How a process's life is handled (see docs/guarantees.md):

- A record whose save failed stays pending and is, before the stage returns, in the
  recorder's rescue file (``rescue_file.py``), which each later save rewrites or removes.
- A save runs as this thread's section (``reentry.py``): a stage recorded from a signal
  handler inside a save is queued, never waits, and is saved before that save returns.
- ``fork()``: the child's recorders drop the parent's pending records; each module hands
  the reset of its own state (locks, caches) to ``_system/process_state.py``, which runs
  them in a written order.

A ``Stage`` (``stage.py``) reaches its recorder through the contract ``StageTarget``
names there. Beside it: ``active.py`` (which recorder a stage without one records into),
``_system/process_state.py`` (the save at exit, the reset after fork) and
``attempt_markers.py`` (the started marker of each stage's attempt).
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from stagetimer._errors import InvalidRecordError, StageTimerWarning, short_repr
from stagetimer._record.active import enter, environment_recorder, leave, stack
from stagetimer._record.reentry import current_frame, defer, hold, reentered, section
from stagetimer._settings import (
    as_path,
    check_completed_runs,
    check_directory,
    check_expected_runs,
    check_flag,
    check_heartbeat,
    check_policy,
    check_resume,
    check_timeout,
    recorder_environment,
    recording_disabled,
)
from stagetimer._store.validate import check_record, check_seconds, copy_metadata
from stagetimer._system import process_state
from stagetimer._system.process_state import recorders as instances
from stagetimer._system.process_state import with_pending

if TYPE_CHECKING:
    from stagetimer._record.attempt import Started
    from stagetimer._record.attempt_markers import AttemptMarkers
    from stagetimer._record.likely_mistakes import LikelyMistakes
    from stagetimer._record.outcomes import Outcome
    from stagetimer._record.pending import Pending
    from stagetimer._record.saver import FinishedArgs, Saver

# The save path (saver.py and the modules it needs: outcomes, pending, likely_mistakes,
# rescue_file, the sidecar readers and writers; attempt_markers.py, which writes the
# markers) is imported by the first recorder, not by ``import stagetimer``: its classes
# cost milliseconds to build (benchmarks/run.py, "import stagetimer"). Hence the imports
# inside ``Recorder.__attrs_post_init__``; afterwards the recorder reaches the save path
# only through the objects it made there (its saver, its markers, the outcomes), never
# through an import statement: at interpreter shutdown ``sys.modules`` is emptied before
# the finalisers of module globals run, so an import inside a method fails there
# ("ImportError: sys.meta_path is None"), and a ``__del__`` that records a stage would
# lose its record.

__all__ = ["Recorder", "record_run", "resolve_recorder"]

# Frames of this folder (the recording layer), and of the exit hook that closes the
# recorders, are skipped when attributing a warning.
_SKIPPED = (
    os.path.dirname(os.path.abspath(__file__)) + os.sep,
    os.path.abspath(process_state.__file__),
)

# time.gmtime's range on every platform: a start time from 1970 to the year 9999.
_LATEST_START = 253402300799.0

def _restore(settings: dict[str, Any]) -> Recorder:
    return Recorder(**settings)


def _absolute(directory: str | os.PathLike[str]) -> str:
    """The directory a recorder owns, made absolute against the working directory of
    now (``as_path`` checks it first). Not normalised: ``link/..`` keeps the meaning
    the kernel gives it. A working directory that no longer exists leaves it as given."""
    path = as_path(directory)
    if os.path.isabs(path):
        return path
    try:
        return os.path.join(os.getcwd(), path)
    except OSError:
        return path


def _fixed(rec: Recorder, attribute: attrs.Attribute[Any], value: Any) -> Any:
    """A setting assigned after construction: refused (the saver and the markers were
    made for the settings the recorder was made with)."""
    raise AttributeError(
        f"Recorder.{attribute.name} cannot be changed after the recorder is made "
        f"(to {value!r}); make a new Recorder({attribute.name}=...)"
    )


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
        A relative path is fixed, absolute, when the recorder is made: a later
        ``os.chdir`` changes nothing (its runs and markers stay in one place).
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
        (``stagetimer recover DIR`` folds it back). ``True``: the error is raised, and
        a bad ``STAGETIMER_*`` variable raises when the recorder is made.
    lock_timeout
        Seconds to wait for a sidecar's lock (default 60); ``float("inf")`` waits as
        long as it takes. A save that times out fails as above.
    expected_runs
        ``None`` (default) or an int >= 1: the number of runs the suite will make,
        written as ``"expected_runs"`` into each indexed stage this recorder records,
        so that the report can show progress.
    software
        ``True`` (default): each run holds the ``software_id`` of this process's
        software (its code's commit, imported packages, accelerator libraries),
        captured once at the first save. ``False``, or ``STAGETIMER_SOFTWARE=0`` in
        the environment: not captured, and runs have no ``software_id``.

    attempts
        ``True`` (default): entering a recorded stage writes its started marker,
        ``timings.attempts/<attempt_id>.json``, removed once the run is saved and kept,
        saying how the block ended, when it raised or was interrupted
        (docs/format.md). ``False``, or ``STAGETIMER_ATTEMPTS=0``: no markers.
    heartbeat
        ``None`` (default: no beats, unless ``STAGETIMER_HEARTBEAT=S`` says so) or S,
        a number of seconds > 0: while a stage runs, a daemon thread sets its marker's
        modification time to now every S seconds, so that readers can tell a writer
        that was killed from one that runs. The marker records S.

    The settings are fixed once the recorder is made: assigning one raises
    ``AttributeError`` (make a new recorder instead). A recorder can be pickled (its
    settings; a spawn worker gets a fresh one for the same directory). After ``fork()``
    the child's recorders start without the parent's pending records.
    """

    directory: str = attrs.field(
        converter=_absolute, validator=check_directory, on_setattr=_fixed
    )
    resume_partial_runs: bool = attrs.field(
        default=False, kw_only=True, validator=check_flag, on_setattr=_fixed
    )
    completed_runs: int | None = attrs.field(
        default=None, kw_only=True, validator=check_completed_runs, on_setattr=_fixed
    )
    policy: str = attrs.field(
        default="sequential", kw_only=True, validator=check_policy, on_setattr=_fixed
    )
    strict: bool = attrs.field(
        default=False, kw_only=True, validator=check_flag, on_setattr=_fixed
    )
    lock_timeout: float = attrs.field(
        default=60.0, kw_only=True, validator=check_timeout, on_setattr=_fixed
    )
    expected_runs: int | None = attrs.field(
        default=None, kw_only=True, validator=check_expected_runs, on_setattr=_fixed
    )
    software: bool = attrs.field(
        default=True, kw_only=True, validator=check_flag, on_setattr=_fixed
    )
    attempts: bool = attrs.field(
        default=True, kw_only=True, validator=check_flag, on_setattr=_fixed
    )
    heartbeat: float | None = attrs.field(
        default=None, kw_only=True, validator=check_heartbeat, on_setattr=_fixed
    )
    _saver: Saver = attrs.field(init=False, repr=False)
    _mistakes: LikelyMistakes = attrs.field(init=False, repr=False)
    _markers: AttemptMarkers = attrs.field(init=False, repr=False)
    #: whether runs get a software_id: ``software``, unless the environment says no
    _with_software: bool = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        check_resume(self.resume_partial_runs, self.completed_runs)
        env = recorder_environment(
            self.software, self.attempts, self.heartbeat, self.strict, self._warn
        )
        self._with_software = env.software
        from stagetimer._record.attempt_markers import AttemptMarkers
        from stagetimer._record.likely_mistakes import LikelyMistakes
        from stagetimer._record.saver import Saver, SaverSettings

        self._saver = Saver(SaverSettings(
            self.directory, self.policy, self.strict, self.lock_timeout,
            self.expected_runs, self.completed_runs,
        ))
        self._mistakes = LikelyMistakes(self.policy, self._warn)
        self._markers = AttemptMarkers(
            self.directory, env.attempts, env.heartbeat, self._saver.pending, self._warn
        )
        instances.add(self)

    def __reduce__(self) -> tuple[Callable[[dict[str, Any]], Recorder], tuple[dict[str, Any]]]:
        # Every argument of __init__ (named by its field's alias): a new recorder alike.
        settings = {
            f.alias or f.name: getattr(self, f.name) for f in attrs.fields(Recorder) if f.init
        }
        return _restore, (settings,)

    @property
    def timings_path(self) -> str:
        return self._saver.settings.timings_path

    @property
    def hardware_path(self) -> str:
        return self._saver.settings.hardware_path

    @property
    def pending(self) -> int:
        """How many finished records are waiting to be saved."""
        return len(self._saver.pending)

    def __enter__(self) -> Recorder:
        enter(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        leave(self)
        self.close()

    def record(
        self,
        name: str,
        seconds: float,
        *,
        run_idx: int | None = None,
        label: str | None = None,
        started_at: float | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        """Save one run of stage ``name`` now, applying the replacement rules.

        The arguments are checked as ``record_timing`` checks them (``InvalidRecordError``,
        nothing written); ``started_at`` is None or a Unix time (``time.time()``).
        ``STAGETIMER_DISABLE=1``: checked, and nothing is recorded.
        Called while this thread is already saving (from a signal handler), the run is
        queued and saved before that save returns.
        """
        record_run(self, name, seconds, run_idx, label, started_at, metadata)

    def _hand_over(
        self,
        finished: FinishedArgs,
        resources: dict[str, Any] | None = None,
        attempt: Started | None = None,
        policy: str | None = None,
        parent: dict[str, str] | None = None,
    ) -> Pending:
        """Register a checked record as pending (then ``_save_handed``): from its
        ``append`` on, no interrupt loses it. ``resources``: what a ``stage`` used
        (``resources.py``); ``attempt``: its started marker (``attempt.py``), removed
        once the run is saved; ``policy``: the rule it is saved by, if not this
        recorder's (a callback's parts of a run: ``"upsert"``); ``parent``: the stage
        open around a run measured without a stage of its own (its attempt's else)."""
        if finished[2] is None:
            self._mistakes.recorded_unindexed(finished[0], finished[3])
        if attempt is not None:
            self._markers.handed_over(attempt)
        # Registered first (two atomic operations): from here on an interrupt cannot
        # lose it; it is saved by this call, by another thread's save, or at exit.
        pending = self._saver.hand_over(
            finished, resources, attempt, policy, parent, self._with_software
        )
        with_pending.add(self)
        return pending

    def _save_handed(self, pending: Pending) -> None:
        """Save a record ``_hand_over`` registered (queued when this thread is already
        saving: a signal handler inside a save)."""
        try:
            if reentered():
                defer(self)
                return
            section(functools.partial(self._save_now, pending))
        except BaseException as exc:
            if not isinstance(exc, Exception):
                self._make_safe()
            raise

    def close(self) -> None:
        """Save pending records; what still fails stays in the rescue file, for ``recover``."""
        if reentered():
            return  # a signal handler inside a save: that save stores everything pending
        section(self._close_now)

    # -- from a save's outcome to a warning or an error ----------------------

    def _save_now(self, pending: Pending) -> None:
        """A stage's own save: its caller gets a refusal (and, if strict, a failure)."""
        saver = self._saver
        with hold(saver.lock):
            outcome = saver.save(waiting=pending)
            self._track()
            outcome.answer(self._mistakes, self._warn)

    def _flush(self) -> None:
        """Save what signal handlers queued; a failure warns and rescues, never raises."""
        saver = self._saver
        with hold(saver.lock):
            if saver.pending:
                self._report(saver.save())
                self._track()

    def _close_now(self) -> None:
        saver = self._saver
        with hold(saver.lock):
            if not saver.pending:
                saver.remove_markers()  # those an interrupt left noted
                self._track()
                return
            outcome = saver.save()
            if outcome.kept:
                # Given up: the records live on in the rescue file, which this recorder
                # no longer rewrites.
                saver.give_up()
            outcome.report_at_close(self._mistakes, self._warn)
            self._track()

    def _report(self, outcome: Outcome) -> None:
        """Warn about an outcome nobody waits for; a strict recorder raises a refusal."""
        outcome.report(self._mistakes, self._warn)

    def _track(self) -> None:
        """Kept alive for the save at exit exactly while records are pending (or the
        markers of saved ones are still to be removed)."""
        if self._saver.pending or self._saver.unmark:
            with_pending.add(self)
        else:
            with_pending.discard(self)

    def _make_safe(self) -> None:
        """After an interrupt: settle the write it cut short, rescue what is still pending."""
        self._saver.make_safe()
        self._track()

    def _reset_in_child(self) -> None:
        """After fork: the parent's pending records, rescue file and locks are not ours."""
        self._saver = self._saver.fresh()
        self._markers.pending = self._saver.pending

    def _warn(self, message: str) -> None:
        """One ``StageTimerWarning`` about this directory, attributed to the first caller
        outside stagetimer's recording layer, and never fatal to the stage."""
        level, frame = 1, current_frame()
        while frame is not None and frame.f_code.co_filename.startswith(_SKIPPED):
            level, frame = level + 1, frame.f_back
        try:
            warnings.warn(f"{self.directory}: {message}", StageTimerWarning, stacklevel=level)
        except (ValueError, OSError) as exc:
            if isinstance(exc, Warning):
                raise  # the user's filter turned the warning into an error
            # warnings writes to a closed sys.stderr (ValueError) or one whose reader
            # left; the record itself is in its rescue file: a lost warning must not fail
            # the stage.


def record_run(
    recorder: Recorder | None,
    name: str,
    seconds: float,
    run_idx: int | None,
    label: str | None,
    started_at: float | None,
    metadata: Mapping[str, Any] | None,
    policy: str | None = None,
    parent: dict[str, str] | None = None,
) -> None:
    """Check one finished run and save it into ``recorder`` (``resolve_recorder``); the
    one path of ``Recorder.record`` and ``record_timing``. Nothing is recorded, and no
    recorder needed, while ``STAGETIMER_DISABLE`` is set; the arguments are checked even
    then. ``policy``: the rule the run is saved by, if not the recorder's; ``parent``: the
    stage open around it (``stage.open_parent``), where it was measured inside one."""
    check_record(name, run_idx, label)
    # Checked and copied in one pass: what the caller changes later is not recorded.
    copied = None if metadata is None else (copy_metadata(check_metadata_mapping(metadata)) or None)
    checked = check_seconds(seconds)
    check_started_at(started_at)
    if recording_disabled():
        return
    target = resolve_recorder(recorder)
    finished = (name, checked, run_idx, label, started_at, copied)
    target._save_handed(target._hand_over(finished, policy=policy, parent=parent))


def check_metadata_mapping(metadata: object) -> Mapping[str, Any]:
    """``Recorder.record(metadata=...)`` is None or a mapping (``record_timing`` takes
    ``**metadata``, always a dict)."""
    if not isinstance(metadata, Mapping):
        raise InvalidRecordError(
            f"metadata {short_repr(metadata)} is not valid: expected None or a mapping of "
            "str keys to JSON values",
            metadata,
        )
    return metadata


def check_started_at(started_at: object) -> None:
    """A start time is None or a Unix time ``time.gmtime`` can convert on every platform."""
    if started_at is not None and (
        isinstance(started_at, bool)
        or not isinstance(started_at, (int, float))
        or not 0 <= started_at <= _LATEST_START
    ):
        raise InvalidRecordError(
            f"started_at {short_repr(started_at)} is not valid: expected None or a Unix time "
            "(time.time()) from 0 to the end of the year 9999",
            started_at,
        )


def resolve_recorder(recorder: Recorder | None) -> Recorder:
    """``recorder``, else the active one, else one for ``STAGETIMER_DIR``."""
    if recorder is not None:
        if not isinstance(recorder, Recorder):
            raise InvalidRecordError(
                f"recorder {recorder!r} is not valid: expected a stagetimer.Recorder", recorder
            )
        return recorder
    entered = stack.get()
    if entered:
        return entered[-1]
    return environment_recorder(Recorder)
