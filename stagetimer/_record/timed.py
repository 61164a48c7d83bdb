"""``@timed_stage``: each call of a function (each whole iteration of a generator) is
one run of a stage, and ``.auto_resume`` records its continuation."""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import AsyncGenerator, Callable, Generator, Mapping
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar, overload

from stagetimer._errors import InvalidRecordError
from stagetimer._record.recorder import Recorder
from stagetimer._record.stage import Stage, checked_stage
from stagetimer._store.validate import check_record, copy_metadata
from stagetimer.stages import auto_resume

__all__ = ["BoundTimedFunction", "TimedFunction", "timed_stage"]

P = ParamSpec("P")
Q = ParamSpec("Q")
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)
S = TypeVar("S")
RunIdx = int | str | Callable[[Mapping[str, Any]], "int | None"] | None


class BoundTimedFunction(Protocol[P, R_co]):
    """A ``@timed_stage`` method looked up on an instance: called as the method is."""

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R_co: ...


class TimedFunction(Protocol[P, R_co]):
    """What ``@timed_stage`` makes of a function: the same call, timed, and its
    ``.auto_resume`` form (for type checkers; at run time it is a plain function).

    ``auto_resume`` is reached through the function itself, or for a method through its
    class (``Trainer.save.auto_resume(trainer, ...)``): a bound method does not bind it.
    """

    __name__: str
    __qualname__: str

    @property
    def __wrapped__(self) -> Callable[P, R_co]: ...

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R_co: ...

    def auto_resume(self, *args: P.args, **kwargs: P.kwargs) -> R_co:
        """The same call, recorded as stage ``<name>_auto_resume`` (only for a stage that
        may have one, see ``stages.auto_resume``; else ``InvalidRecordError``)."""
        ...

    @overload
    def __get__(self, obj: None, owner: type[Any] | None = None) -> TimedFunction[P, R_co]: ...
    @overload
    def __get__(
        self: TimedFunction[Concatenate[S, Q], R],
        obj: S,
        owner: type[Any] | None = None,
    ) -> BoundTimedFunction[Q, R]: ...


_Timer = Callable[[tuple[Any, ...], dict[str, Any]], "Stage | None"]
#: A run index found per call: a parameter's name, or a callable of the bound arguments.
_Finder = str | Callable[[Mapping[str, Any]], "int | None"]


def _stage_maker(
    func: Callable[..., Any],
    name: str,
    run_idx: RunIdx,
    label: str | None,
    recorder: Recorder | None,
    metadata: dict[str, Any],
) -> _Timer:
    """How to build the :class:`Stage` of one call of ``func``; None for a call that does not
    bind (the function then raises its own ``TypeError``, untimed). ``label`` and
    ``metadata`` were checked and copied at decoration (``_decorate``)."""
    if run_idx is None or (isinstance(run_idx, int) and not isinstance(run_idx, bool)):
        # A constant index needs no binding: a call that does not bind raises inside the
        # stage, which records nothing.
        return lambda args, kwargs: checked_stage(name, run_idx, label, recorder, metadata)
    signature, find = _finder(func, run_idx)

    def make(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Stage | None:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            return None  # only a call that does not bind runs untimed
        bound.apply_defaults()
        # Outside the try: whatever the user's callable raises propagates, before the
        # function runs.
        idx = bound.arguments[find] if isinstance(find, str) else find(bound.arguments)
        return checked_stage(name, idx, label, recorder, metadata)

    return make


def _finder(func: Callable[..., Any], run_idx: RunIdx) -> tuple[inspect.Signature, _Finder]:
    """``func``'s signature and ``run_idx``, checked to be the name of one of its parameters
    or a callable."""
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
    return signature, run_idx


def _time_generator(timing: Stage, gen: Generator[Any, Any, Any]) -> Generator[Any, Any, Any]:
    """Delegate to ``gen`` (``yield from`` passes on send, throw and close), timing from the
    first ``next`` to exhaustion or close; an exception out of ``gen`` records nothing."""
    timing.__enter__()
    try:
        result = yield from gen
    except GeneratorExit:
        timing.__exit__(None, None, None)  # closed by the consumer: the iteration ended here
        raise
    except BaseException as exc:
        timing.__exit__(type(exc), exc, exc.__traceback__)
        raise
    timing.__exit__(None, None, None)
    return result


def _wrap(func: Callable[..., Any], make: _Timer) -> Callable[..., Any]:
    """``func`` timed as one run per call (per whole iteration for a generator function)."""
    # Over 60 lines on purpose: one wrapper per kind of function, side by side, the async
    # generator's asend/athrow/aclose written out by hand (no ``yield from`` for them).
    # Generator wrappers are generator functions themselves (inspect and frameworks such as
    # pytest fixtures still see one); like any generator's body, theirs starts at the first
    # next, which is when the call is bound and its run index found.
    if inspect.isasyncgenfunction(func):

        @functools.wraps(func)
        async def async_gen_wrapper(*args: Any, **kwargs: Any) -> AsyncGenerator[Any, Any]:
            # No ``yield from`` for async generators: asend, athrow and aclose by hand.
            timing = make(args, kwargs)
            agen = func(*args, **kwargs)
            if timing is not None:
                timing.__enter__()
            ended = False  # exhausted or closed by the consumer: record
            try:
                try:
                    value = await agen.__anext__()
                except StopAsyncIteration:
                    ended = True
                    return
                while True:
                    try:
                        sent = yield value
                    except GeneratorExit:
                        await agen.aclose()
                        ended = True
                        raise
                    except BaseException as exc:  # athrow() on this wrapper
                        try:
                            value = await agen.athrow(exc)
                        except StopAsyncIteration:
                            ended = True
                            return
                    else:
                        try:
                            value = await agen.asend(sent)
                        except StopAsyncIteration:
                            ended = True
                            return
            finally:
                if timing is not None:
                    if ended:
                        timing.__exit__(None, None, None)
                    else:  # what ends it (its marker names the type)
                        error = sys.exc_info()[1] or BaseException()
                        timing.__exit__(type(error), error, error.__traceback__)

        return async_gen_wrapper

    if inspect.isgeneratorfunction(func):

        @functools.wraps(func)
        def gen_wrapper(*args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
            timing = make(args, kwargs)
            gen = func(*args, **kwargs)
            if timing is None:
                return (yield from gen)
            return (yield from _time_generator(timing, gen))

        return gen_wrapper

    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            timing = make(args, kwargs)
            if timing is None:
                return await func(*args, **kwargs)
            async with timing:
                return await func(*args, **kwargs)

        return async_wrapper

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        timing = make(args, kwargs)
        if timing is None:
            return func(*args, **kwargs)
        with timing:
            return func(*args, **kwargs)

    return wrapper


def _decorate(
    func: Callable[P, R],
    name: str,
    run_idx: RunIdx,
    label: str | None,
    recorder: Recorder | None,
    metadata: dict[str, Any],
) -> TimedFunction[P, R]:
    check_record(name, None, label)
    metadata = copy_metadata(metadata)
    wrapper = _wrap(func, _stage_maker(func, name, run_idx, label, recorder, metadata))
    try:
        resumed = auto_resume(name)  # the catalogue's rule: which stages may continue
    except InvalidRecordError as exc:
        again = _refusing(func, str(exc), name)
    else:
        again = _wrap(func, _stage_maker(func, resumed, run_idx, label, recorder, metadata))
        again.__doc__ = f"Call {func.__qualname__}, recorded as stage {resumed!r}."
    again.__qualname__ = f"{func.__qualname__}.auto_resume"
    wrapper.auto_resume = again  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]


def _refusing(func: Callable[..., Any], message: str, name: str) -> Callable[..., Any]:
    """``.auto_resume`` of a stage that has no continuation: refuses every call, before
    ``func`` runs, as ``stages.auto_resume(name)`` refuses the name."""

    @functools.wraps(func)
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise InvalidRecordError(message, name)

    refuse.__doc__ = f"Refused: {message}."
    return refuse


@overload
def timed_stage(name: Callable[P, R], /) -> TimedFunction[P, R]: ...
@overload
def timed_stage(
    name: str | None = None,
    /,
    *,
    run_idx: RunIdx = None,
    label: str | None = None,
    recorder: Recorder | None = None,
    **metadata: Any,
) -> Callable[[Callable[P, R]], TimedFunction[P, R]]: ...
def timed_stage(
    name: str | Callable[..., Any] | None = None,
    /,
    *,
    run_idx: RunIdx = None,
    label: str | None = None,
    recorder: Recorder | None = None,
    **metadata: Any,
) -> Any:
    """Decorate a function so each call is one run of a stage.

    Bare ``@timed_stage`` uses the function's ``__name__``. ``run_idx`` is an int,
    the name of a parameter of the function (its bound value, defaults included)
    or a callable receiving the bound arguments as a mapping; whatever that callable
    raises propagates before the function runs. A call whose arguments do not bind
    to the function's signature runs untimed and raises the function's own
    ``TypeError``.

    Plain and ``async def`` functions are timed per call. Generator functions (plain
    and async) are timed over the whole iteration: from the first ``next`` (when
    their body starts, and the arguments are bound) to exhaustion or ``close()``
    (called by you, or when the generator is collected, e.g. after a ``break`` out of
    the ``for`` loop that held the only reference); the time between items, spent by
    the consumer, is part of it. An exception out of the generator records nothing,
    as for ``with stage``; a generator never iterated records nothing.

    Every decorated function has ``.auto_resume(*args, **kwargs)``: the same call,
    recorded as stage ``<name>_auto_resume`` with the same ``run_idx`` rule, for a stage
    that may have such a continuation (a training stage, ``checkpoint_save``, ``nashconv``:
    ``stages.auto_resume``); for any other stage it raises ``InvalidRecordError``, with
    ``stages.auto_resume``'s message, before the function runs. For a method, call it
    through the class: ``Trainer.save.auto_resume(self, ...)``.

    >>> @timed_stage("checkpoint_save", run_idx="run_idx")
    ... def save_checkpoint(model, run_idx): ...
    >>> save_checkpoint(model, 0)               # stage "checkpoint_save"
    >>> save_checkpoint.auto_resume(model, 0)   # stage "checkpoint_save_auto_resume"
    """
    if callable(name):
        return _decorate(name, name.__name__, None, None, None, {})

    def decorator(func: Callable[P, R]) -> TimedFunction[P, R]:
        stage_name = func.__name__ if name is None else name
        return _decorate(func, stage_name, run_idx, label, recorder, metadata)

    return decorator
