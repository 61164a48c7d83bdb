"""@timed_stage: generator functions timed over their whole iteration, the run index found
from an explicit binding, and the ``.auto_resume`` form of every decorated function.

Durations come from a fake ``perf_counter`` that the test advances, so each expected
duration is exact (no timing is measured)."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from stagetimer import InvalidRecordError, Recorder, load_timings, timed_stage
from stagetimer._record import stage as stage_module


class Clock:
    """A perf_counter the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(stage_module, "perf_counter", fake)
    return fake


def runs(art: Path) -> dict[str, list[tuple[int | None, float]]]:
    return {
        name: [(r.run_idx, r.seconds) for r in timing.runs]
        for name, timing in load_timings(art).stages.items()
    }


def indices(art: Path) -> dict[str, list[int | None]]:
    return {name: [i for i, _ in recorded] for name, recorded in runs(art).items()}


# -- generator functions ---------------------------------------------------------------------


def counting(rec: Recorder, clock: Clock) -> Any:
    @timed_stage("nashconv", run_idx="run_idx", recorder=rec)
    def evaluate(run_idx: int, items: int = 3) -> Iterator[int]:
        for k in range(items):
            clock.now += 1.0  # each item costs one second
            yield k

    return evaluate


def test_generator_is_timed_from_first_next_to_exhaustion_not_at_creation(
    rec: Recorder, art: Path, clock: Clock
) -> None:
    evaluate = counting(rec, clock)
    gen = evaluate(0)
    clock.now += 100.0  # between creation and the first next: not part of the run

    assert [0, 1, 2] == list(gen)
    assert {"nashconv": [(0, 3.0)]} == runs(art)


def test_generator_created_but_never_iterated_records_nothing(
    rec: Recorder, art: Path, clock: Clock
) -> None:
    counting(rec, clock)(0).close()

    assert not (art / "timings.json").exists()


def test_generator_closed_early_records_up_to_the_close(
    rec: Recorder, art: Path, clock: Clock
) -> None:
    gen = counting(rec, clock)(1)
    assert 0 == next(gen)
    clock.now += 0.5
    gen.close()

    assert {"nashconv": [(1, 1.5)]} == runs(art)


def test_breaking_out_of_the_for_loop_records_the_iteration_up_to_the_break(
    rec: Recorder, art: Path, clock: Clock
) -> None:
    for _ in counting(rec, clock)(2):
        clock.now += 0.5  # the consumer's time between items is part of the iteration
        break  # CPython closes the generator as its last reference goes

    assert {"nashconv": [(2, 1.5)]} == runs(art)


def test_generator_raising_records_nothing_and_propagates_the_same_exception(
    rec: Recorder, art: Path
) -> None:
    error = KeyError("lost")

    @timed_stage("nashconv", recorder=rec)
    def evaluate() -> Iterator[int]:
        yield 1
        raise error

    gen = evaluate()
    next(gen)
    with pytest.raises(KeyError) as raised:
        next(gen)
    assert error is raised.value
    assert not (art / "timings.json").exists()


def test_generator_send_throw_and_return_value_pass_through(rec: Recorder, art: Path) -> None:
    @timed_stage("nashconv", recorder=rec)
    def echo() -> Generator[int, str, list[str]]:
        received: list[str] = []
        while len(received) < 3:
            try:
                received.append((yield len(received)))
            except ValueError as exc:
                received.append(f"caught {exc}")
        return received

    gen = echo()
    assert 0 == next(gen)
    assert 1 == gen.send("a")
    assert 2 == gen.throw(ValueError("b"))
    with pytest.raises(StopIteration) as stop:
        gen.send("c")

    assert ["a", "caught b", "c"] == stop.value.value
    assert ["nashconv"] == list(runs(art))


def test_decorated_generator_functions_stay_generator_functions() -> None:
    @timed_stage
    def plain() -> Iterator[int]:
        yield 1

    @timed_stage
    async def agen() -> AsyncIterator[int]:
        yield 1

    assert (True, True) == (inspect.isgeneratorfunction(plain), inspect.isasyncgenfunction(agen))


def async_counting(rec: Recorder, clock: Clock) -> Any:
    @timed_stage("nashconv", run_idx="run_idx", recorder=rec)
    async def evaluate(run_idx: int) -> AsyncIterator[int]:
        for k in range(3):
            await asyncio.sleep(0)
            clock.now += 1.0
            yield k

    return evaluate


def test_async_generator_is_timed_from_first_next_to_exhaustion(
    rec: Recorder, art: Path, clock: Clock
) -> None:
    evaluate = async_counting(rec, clock)

    async def consume() -> list[int]:
        agen = evaluate(2)
        clock.now += 100.0
        return [k async for k in agen]

    assert [0, 1, 2] == asyncio.run(consume())
    assert {"nashconv": [(2, 3.0)]} == runs(art)


def test_async_generator_closed_early_records_up_to_the_close(
    rec: Recorder, art: Path, clock: Clock
) -> None:
    evaluate = async_counting(rec, clock)

    async def consume() -> None:
        agen = evaluate(0)
        await agen.__anext__()
        clock.now += 0.5
        await agen.aclose()

    asyncio.run(consume())
    assert {"nashconv": [(0, 1.5)]} == runs(art)


def test_async_generator_raising_records_nothing(rec: Recorder, art: Path) -> None:
    @timed_stage("nashconv", recorder=rec)
    async def evaluate() -> AsyncIterator[int]:
        yield 1
        raise KeyError("lost")

    async def consume() -> list[int]:
        return [k async for k in evaluate()]

    with pytest.raises(KeyError):
        asyncio.run(consume())
    assert not (art / "timings.json").exists()


def test_async_generator_asend_and_athrow_pass_through(rec: Recorder, art: Path) -> None:
    received: list[Any] = []

    @timed_stage("nashconv", recorder=rec)
    async def echo() -> AsyncGenerator[int, str]:
        while len(received) < 3:
            try:
                received.append((yield len(received)))
            except ValueError as exc:
                received.append(f"caught {exc}")

    async def drive() -> list[int]:
        agen = echo()
        seen = [await agen.__anext__(), await agen.asend("a"), await agen.athrow(ValueError("b"))]
        with pytest.raises(StopAsyncIteration):
            await agen.asend("c")
        return seen

    assert [0, 1, 2] == asyncio.run(drive())
    assert ["a", "caught b", "c"] == received
    assert ["nashconv"] == list(runs(art))


# -- finding the run index -------------------------------------------------------------------


def test_type_error_from_the_run_idx_callable_propagates_before_the_function_runs(
    rec: Recorder, art: Path
) -> None:
    ran = []

    def broken(arguments: Any) -> int:
        raise TypeError("my run_idx callable is broken")

    @timed_stage("checkpoint_save", run_idx=broken, recorder=rec)
    def save(seed: int) -> None:
        ran.append(seed)

    with pytest.raises(TypeError, match="my run_idx callable is broken"):
        save(3)
    assert ([], False) == (ran, (art / "timings.json").exists())


def test_any_error_from_the_run_idx_callable_propagates_before_the_function_runs(
    rec: Recorder,
) -> None:
    ran = []

    @timed_stage("checkpoint_save", run_idx=lambda a: a["config"]["seed"], recorder=rec)
    def save(config: dict[str, int]) -> None:
        ran.append(config)

    with pytest.raises(KeyError, match="seed"):
        save({})
    assert [] == ran


def test_a_call_that_does_not_bind_raises_the_functions_own_type_error_untimed(
    rec: Recorder, art: Path
) -> None:
    @timed_stage("checkpoint_save", run_idx=lambda a: a["seed"], recorder=rec)
    def save(seed: int) -> None:
        pass

    with pytest.raises(TypeError, match="unexpected keyword argument 'sede'"):
        save(sede=1)  # type: ignore[call-arg]
    assert not (art / "timings.json").exists()


def test_type_error_inside_the_function_propagates_and_records_nothing(
    rec: Recorder, art: Path
) -> None:
    @timed_stage("checkpoint_save", run_idx="seed", recorder=rec)
    def save(seed: int) -> None:
        raise TypeError("inside")

    with pytest.raises(TypeError, match="inside"):
        save(1)
    assert not (art / "timings.json").exists()


# -- .auto_resume ----------------------------------------------------------------------------


def test_auto_resume_runs_the_function_recorded_as_the_companion_stage(
    rec: Recorder, art: Path
) -> None:
    @timed_stage("checkpoint_save", run_idx="run_idx", recorder=rec)
    def save(path: str, run_idx: int) -> str:
        return f"{path}/{run_idx}"

    resumed = save.auto_resume("ck", run_idx=0)

    assert "ck/0" == resumed
    assert {"checkpoint_save_auto_resume": [0]} == indices(art)


def test_bare_decorated_function_has_auto_resume(rec: Recorder, art: Path) -> None:
    with rec:

        @timed_stage
        def nashconv(policy: float) -> float:
            return policy

        nashconv.auto_resume(0.5)

    assert ["nashconv_auto_resume"] == list(runs(art))


def test_auto_resume_uses_the_same_run_idx_rule(rec: Recorder, art: Path) -> None:
    @timed_stage("nashconv", run_idx=lambda a: a["seed"] - 10, recorder=rec)
    def nashconv(seed: int) -> None:
        pass

    for seed in (10, 11):
        nashconv.auto_resume(seed)

    assert {"nashconv_auto_resume": [0, 1]} == indices(art)


def test_auto_resume_of_an_async_function(rec: Recorder, art: Path) -> None:
    @timed_stage("nashconv", run_idx="run_idx", recorder=rec)
    async def nashconv(run_idx: int) -> int:
        await asyncio.sleep(0)
        return run_idx

    assert 4 == asyncio.run(nashconv.auto_resume(4))
    assert {"nashconv_auto_resume": [4]} == indices(art)


def test_auto_resume_of_a_generator_function(rec: Recorder, art: Path, clock: Clock) -> None:
    evaluate = counting(rec, clock)

    assert [0, 1] == list(evaluate.auto_resume(0, items=2))
    assert {"nashconv_auto_resume": [(0, 2.0)]} == runs(art)


def test_auto_resume_of_a_method_through_its_class(rec: Recorder, art: Path) -> None:
    class Trainer:
        @timed_stage("checkpoint_save", run_idx="run_idx", recorder=rec)
        def save(self, run_idx: int) -> int:
            return run_idx

    trainer = Trainer()
    trainer.save(1)
    Trainer.save.auto_resume(trainer, 1)

    assert {"checkpoint_save": [1], "checkpoint_save_auto_resume": [1]} == indices(art)


def test_a_call_checks_only_its_run_idx_label_and_metadata_were_checked_at_decoration(
    rec: Recorder, art: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    metadata = {"env": {"nested": [1, {"deep": 2}]}}

    @timed_stage("ippo_train", run_idx="seed", label="a", recorder=rec, **metadata)
    def train(seed: int) -> None:
        pass

    metadata["env"]["nested"].append(3)  # after decoration: not recorded
    train(0)  # the name is checked once per process
    checks: list[object] = []
    copies: list[object] = []
    real_check = stage_module.check_record
    monkeypatch.setattr(stage_module, "copy_metadata", copies.append)
    monkeypatch.setattr(
        stage_module, "check_record", lambda *a: checks.append(a) or real_check(*a)
    )
    monkeypatch.setenv("STAGETIMER_DISABLE", "1")
    train(1)
    train(2)
    assert ([], []) == (checks, copies)
    with pytest.raises(InvalidRecordError, match="run_idx -1"):
        train(-1)  # a computed run index is still checked at each call
    monkeypatch.delenv("STAGETIMER_DISABLE")
    train(1)

    runs = load_timings(art).stages["ippo_train"].runs
    assert [(0, "a"), (1, "a")] == [(r.run_idx, r.label) for r in runs]
    assert [r.metadata for r in runs] == 2 * [{"env": {"nested": [1, {"deep": 2}]}}]
