"""Recorder: owns one artifact directory and saves each finished stage into its sidecars.

The recorder is the facade: its settings, ``with rec:``, ``record``, ``close``,
``pending`` and pickling. Saving is its ``Saver``'s (``saver.py``), whose every attempt
ends in one named outcome; the recorder turns an outcome into a warning or an error
(``reporting.py``).
How a process's life is handled (see docs/guarantees.md):

- A record whose save failed stays pending and is, before the stage returns, in the
  recorder's rescue file (``rescue_file.py``), which each later save rewrites or removes.
- A save runs as this thread's section (``reentry.py``): a stage recorded from a signal
  handler inside a save is queued, never waits, and is saved before that save returns.
- ``fork()``: the child's recorders drop the parent's pending records; each module hands
  the reset of its own state (locks, caches) to ``_system/process_state.py``, which runs
  them in a written order.

Beside it: ``active.py`` (which recorder a stage without one records into),
``_system/process_state.py`` (the save at exit, the reset after fork),
``attempt_markers.py`` (the started marker of each stage's attempt), ``reporting.py`` (an
outcome's warnings) and ``warning.py`` (how a warning reaches the user).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any

import attrs

from stagetimer._errors import InvalidRecordError
from stagetimer._record.active import enter, environment_recorder, leave, stack
from stagetimer._record.arguments import check_metadata_mapping, check_started_at
from stagetimer._record.reentry import defer, hold, reentered, section
from stagetimer._record.warning import warn_user
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
from stagetimer._system.process_state import recorders as instances
from stagetimer._system.process_state import with_pending

if TYPE_CHECKING:
    from stagetimer._record.attempt import Started
    from stagetimer._record.attempt_markers import AttemptMarkers
    from stagetimer._record.likely_mistakes import LikelyMistakes
    from stagetimer._record.pending import Pending
    from stagetimer._record.saver import Outcome, Saver

# The save path (saver.py and the modules it needs: pending, likely_mistakes,
# rescue_file, the sidecar readers and writers; reporting.py, which reads its outcomes;
# attempt_markers.py, which writes the markers)
# is imported by the first recorder, not by ``import stagetimer``: its classes cost
# milliseconds to build (benchmarks/run.py, "import stagetimer"). Hence the imports
# inside the methods below.

__all__ = ["Recorder", "record_run", "resolve_recorder"]

# The save path's modules, bound once by the first recorder (``_bind_save_path``) and
# used through these names afterwards: at interpreter shutdown ``sys.modules`` is emptied
# before the finalisers of module globals run, so an import statement inside a method
# fails there ("ImportError: sys.meta_path is None"), and a ``__del__`` that records a
# stage would lose its record.
_pending_module: ModuleType
_saver_module: ModuleType
_reporting_module: ModuleType
_markers_module: ModuleType


def _bind_save_path() -> None:
    global _pending_module, _saver_module, _reporting_module, _markers_module
    if "_markers_module" not in globals():
        from stagetimer._record import attempt_markers, pending, reporting, saver

        _pending_module, _saver_module, _reporting_module = pending, saver, reporting
        _markers_module = attempt_markers


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
        from stagetimer._record.likely_mistakes import LikelyMistakes

        _bind_save_path()
        self._saver = self._new_saver()
        self._mistakes = LikelyMistakes(self.policy, self._warn)
        self._markers = _markers_module.AttemptMarkers(
            self.directory, env.attempts, env.heartbeat, self._saver.pending, self._warn
        )
        instances.add(self)

    def _new_saver(self) -> Saver:
        return _saver_module.Saver(  # type: ignore[no-any-return]
            _saver_module.SaverSettings(
                self.directory, self.policy, self.strict, self.lock_timeout,
                self.expected_runs, self.completed_runs,
            )
        )

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

    def _record_checked(
        self,
        name: str,
        seconds: float,
        run_idx: int | None,
        label: str | None,
        started_at: float | None,
        metadata: dict[str, Any] | None,
        policy: str | None = None,
        parent: dict[str, str] | None = None,
    ) -> None:
        """``record`` for arguments its caller checked (``record_timing``)."""
        self._save_handed(self._hand_over(
            name, seconds, run_idx, label, started_at, metadata, policy=policy, parent=parent
        ))

    def _hand_over(
        self,
        name: str,
        seconds: float,
        run_idx: int | None,
        label: str | None,
        started_at: float | None,
        metadata: dict[str, Any] | None,
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
        p = _pending_module
        if run_idx is None:
            self._mistakes.recorded_unindexed(name, label)
        iso = None if started_at is None else p.utc_iso(started_at)
        attempt_id = None
        if attempt is not None:
            attempt_id, parent = attempt.id, attempt.marker.get("parent")
            self._markers.handed_over(attempt)
        pending: Pending = p.Pending(
            p.Finished(
                name, seconds, run_idx, label, iso, metadata, resources, attempt_id, parent
            ),
            with_software=self._with_software,
            attempt=attempt,
            policy=policy,
        )
        # Registered first (two atomic operations): from here on an interrupt cannot
        # lose it; it is saved by this call, by another thread's save, or at exit.
        self._saver.pending.append(pending)
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

    # -- from an attempt's outcome to a warning or an error ------------------

    def _save_now(self, pending: Pending) -> None:
        """A stage's own save: its caller gets a refusal (and, if strict, a failure)."""
        saver = self._saver
        with hold(saver.lock):
            outcome = saver.save(waiting=pending)
            self._track()
            if isinstance(outcome, _saver_module.HandedBack):
                raise outcome.error
            if isinstance(outcome, _saver_module.Refused):
                _reporting_module.report_refused(outcome, self._mistakes, self._warn)
                raise outcome.error
            self._report(outcome)

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
            if isinstance(outcome, _saver_module.KeptPending):
                # Given up: the records live on in the rescue file, which this recorder
                # no longer rewrites.
                saver.give_up()
                self._warn(
                    f"{outcome.count} record(s) could not be saved at close: "
                    f"{outcome.error}; {outcome.where}"
                )
            else:
                self._report(outcome)
            self._track()

    def _report(self, outcome: Outcome) -> None:
        """Warn about an outcome nobody waits for; a strict recorder raises a refusal."""
        _reporting_module.report(outcome, self._mistakes, self._warn)

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
        self._saver = self._new_saver()
        self._markers.pending = self._saver.pending

    def _warn(self, message: str) -> None:
        """One ``StageTimerWarning`` about this directory (``warning.py``)."""
        warn_user(self.directory, message)


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
    resolve_recorder(recorder)._record_checked(
        name, checked, run_idx, label, started_at, copied, policy, parent
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
