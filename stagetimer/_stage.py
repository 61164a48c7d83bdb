"""The ways to time a stage: ``stage`` (with / async with), ``@timed_stage``, ``record_timing``."""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable, Mapping
from time import perf_counter
from typing import Any, TypeVar, overload

from stagetimer._errors import InvalidRecordError
from stagetimer._recorder import Recorder, recording_disabled, resolve_recorder
from stagetimer._validate import check_record, check_seconds

__all__ = ["record_timing", "stage", "timed_stage"]

# Stage names that passed check_name (a name is checked once per process, not per stage).
_checked_names: set[str] = set()

F = TypeVar("F", bound=Callable[..., Any])
RunIdx = int | str | Callable[[Mapping[str, Any]], "int | None"] | None


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
    check_record(name, run_idx, label, metadata)
    check_seconds(seconds)
    if recording_disabled():
        return
    resolve_recorder(recorder).record(
        name, float(seconds), run_idx=run_idx, label=label, metadata=metadata
    )


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
    the duration (``time.perf_counter``) after exit. Also ``async with stage(...)``.
    """
    # A function building the object, not a class: on CPython 3.11 calling a class with
    # keyword arguments packs them into a dict and unpacks them again for __init__,
    # about a fifth of the cost of a whole codetiming.Timer block (see benchmarks/).
    timing = Stage()
    timing.name = name
    timing.run_idx = run_idx
    timing.label = label
    timing.metadata = metadata
    timing.seconds = None
    timing._recorder = recorder
    return timing


class Stage:
    """One timed block, made by :func:`stage`: its arguments, and ``.seconds`` after exit."""

    __slots__ = (
        "_recorder", "_t0", "_target", "_wall0", "label", "metadata", "name", "run_idx", "seconds"
    )
    name: str
    run_idx: int | None
    label: str | None
    metadata: dict[str, Any]
    seconds: float | None
    _recorder: Recorder | None
    _target: Recorder | None
    _t0: float
    _wall0: float

    def __enter__(self) -> Stage:
        name, run_idx = self.name, self.run_idx
        # Fast path for a name already checked and a plain run index; anything else gets
        # the full checks. A disabled stage must cost no more than a bare timer.
        if (
            type(name) is not str
            or name not in _checked_names
            or (run_idx is not None and (type(run_idx) is not int or run_idx < 0))
            or self.label is not None
            or self.metadata
        ):
            check_record(name, run_idx, self.label, self.metadata)
            if len(_checked_names) < 4096:
                _checked_names.add(name)
        if recording_disabled():
            self._target = None
        else:
            self._target = resolve_recorder(self._recorder)
            self._wall0 = time.time()
        self._t0 = perf_counter()
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self.seconds = seconds = perf_counter() - self._t0
        if exc_type is None and self._target is not None:
            self._target.record(
                self.name,
                seconds,
                run_idx=self.run_idx,
                label=self.label,
                started_at=self._wall0,
                metadata=self.metadata,
            )

    async def __aenter__(self) -> Stage:
        return self.__enter__()

    async def __aexit__(self, exc_type: object, exc: object, tb: object) -> None:
        self.__exit__(exc_type, exc, tb)


def _run_idx_getter(
    func: Callable[..., Any], run_idx: RunIdx
) -> Callable[[tuple[Any, ...], dict[str, Any]], Any]:
    """How to find the run index of one call of ``func``."""
    if run_idx is None or (isinstance(run_idx, int) and not isinstance(run_idx, bool)):
        return lambda args, kwargs: run_idx
    if not isinstance(run_idx, str) and not callable(run_idx):
        raise InvalidRecordError(
            f"run_idx {run_idx!r} is not valid: expected an int, the name of a parameter "
            f"of {func.__qualname__} or a callable",
            run_idx,
        )
    signature = inspect.signature(func)
    if isinstance(run_idx, str) and run_idx not in signature.parameters:
        raise InvalidRecordError(
            f"run_idx {run_idx!r} is not a parameter of {func.__qualname__}{signature}",
            run_idx,
        )

    def get(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        if isinstance(run_idx, str):
            return bound.arguments[run_idx]
        return run_idx(bound.arguments)

    return get


def _decorate(
    func: F,
    name: str,
    run_idx: RunIdx,
    label: str | None,
    recorder: Recorder | None,
    metadata: dict[str, Any],
) -> F:
    check_record(name, None, label, metadata)
    get_run_idx = _run_idx_getter(func, run_idx)

    def timer(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Stage | None:
        try:
            idx = get_run_idx(args, kwargs)
        except TypeError:
            return None  # a call that does not bind: let the function raise its own TypeError
        return stage(name, run_idx=idx, label=label, recorder=recorder, **metadata)

    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            timing = timer(args, kwargs)
            if timing is None:
                return await func(*args, **kwargs)
            async with timing:
                return await func(*args, **kwargs)

        return async_wrapper  # type: ignore[return-value]

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        timing = timer(args, kwargs)
        if timing is None:
            return func(*args, **kwargs)
        with timing:
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


@overload
def timed_stage(name: F, /) -> F: ...
@overload
def timed_stage(
    name: str | None = None,
    /,
    *,
    run_idx: RunIdx = None,
    label: str | None = None,
    recorder: Recorder | None = None,
    **metadata: Any,
) -> Callable[[F], F]: ...
def timed_stage(
    name: str | Callable[..., Any] | None = None,
    /,
    *,
    run_idx: RunIdx = None,
    label: str | None = None,
    recorder: Recorder | None = None,
    **metadata: Any,
) -> Any:
    """Decorate a function (plain or ``async def``) so each call is one run of a stage.

    Bare ``@timed_stage`` uses the function's ``__name__``. ``run_idx`` is an int,
    the name of a parameter of the function (its bound value, defaults included)
    or a callable receiving the bound arguments as a mapping.

    >>> @timed_stage("checkpoint_save", run_idx="run_idx")
    ... def save_checkpoint(model, run_idx): ...
    """
    if callable(name):
        return _decorate(name, name.__name__, None, None, None, {})

    def decorator(func: F) -> F:
        stage_name = func.__name__ if name is None else name
        return _decorate(func, stage_name, run_idx, label, recorder, metadata)

    return decorator
