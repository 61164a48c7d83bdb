"""The errors: one root, each also its builtin, each surviving ``pickle`` with its message
and attributes, so that a worker's error reaches the parent of a process pool intact."""

from __future__ import annotations

import importlib
import inspect
import pickle
import pkgutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

import stagetimer
from stagetimer import Recorder, StageTimerError
from stagetimer import _errors as errors


def _every_module_imported() -> None:
    """An error class defined anywhere in the package is a subclass only once imported."""
    for module in pkgutil.walk_packages(stagetimer.__path__, "stagetimer."):
        if module.name == "stagetimer.__main__":
            continue
        try:
            importlib.import_module(module.name)
        except ModuleNotFoundError as exc:
            # A framework's callback imports its framework, an optional extra; any other
            # module, and a missing module of stagetimer's own, must import.
            optional = module.name.startswith("stagetimer.integrations.")
            if not optional or (exc.name or "").split(".")[0] == "stagetimer":
                raise


def _descendants(cls: type[BaseException]) -> list[type[BaseException]]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *_descendants(sub)]
    return found


_every_module_imported()
ERRORS = sorted(set(_descendants(StageTimerError)), key=lambda c: c.__name__)

#: a value for each constructor parameter an error class may have, by its name
SAMPLES: dict[str, Any] = {
    "message": "run_idx -5 is not valid: expected an int >= 0",
    "value": {"run_idx": -5, "nested": [1.5, None]},
    "path": "/exports/pursuit/classic_3/ippo/timings.json",
    "problem": "does not parse as JSON (Expecting value: line 1 column 1)",
    "found": 9,
    "supported": 1,
    "timeout": 0.25,
    "cut_short": True,
    "reason": "held by process 4711 (python3) of user alice",
    "blocked": False,
}

#: the builtin each error also is, so that code that knows only Python catches it
BUILTINS = {
    "ExportError": RuntimeError,
    "UnsupportedVersionError": RuntimeError,
    "InvalidRecordError": ValueError,
    "InvalidSettingError": ValueError,
    "InvalidTypeError": TypeError,
    "TemplateError": ValueError,
    "SidecarCorruptError": ValueError,
    "SchemaVersionError": ValueError,
    "NoActiveRecorderError": RuntimeError,
    "LockTimeoutError": TimeoutError,
    "MissingExtraError": ImportError,
    "PlotUnavailableError": ImportError,
}


def _example(cls: type[BaseException]) -> BaseException:
    own = next((c for c in cls.__mro__ if "__init__" in vars(c)), BaseException)
    if not issubclass(own, StageTimerError):  # a builtin's __init__: the message alone
        return cls(SAMPLES["message"])
    params = list(inspect.signature(own.__init__).parameters.values())[1:]  # after self
    unknown = [p.name for p in params if p.name not in SAMPLES]
    assert not unknown, f"{cls.__name__}: add a sample for {unknown} to SAMPLES"
    positional = [SAMPLES[p.name] for p in params if p.kind is not p.KEYWORD_ONLY]
    keywords = {p.name: SAMPLES[p.name] for p in params if p.kind is p.KEYWORD_ONLY}
    return cls(*positional, **keywords)


def test_every_error_is_found_by_the_walk() -> None:
    assert set(BUILTINS) == {cls.__name__ for cls in ERRORS}


@pytest.mark.parametrize("cls", ERRORS, ids=lambda c: c.__name__)
def test_each_error_derives_from_its_builtin(cls: type[BaseException]) -> None:
    builtin = BUILTINS[cls.__name__]
    assert (True, True) == (issubclass(cls, StageTimerError), issubclass(cls, builtin))


@pytest.mark.parametrize("cls", ERRORS, ids=lambda c: c.__name__)
def test_each_error_survives_pickle_with_its_message_and_attributes(
    cls: type[BaseException],
) -> None:
    error = _example(cls)

    back = pickle.loads(pickle.dumps(error))

    assert (type(error), str(error), error.args, vars(error)) == (
        type(back), str(back), back.args, vars(back)
    )


def test_each_error_class_is_drawn_in_the_module_docstring() -> None:
    doc = errors.__doc__ or ""
    assert [] == [cls.__name__ for cls in ERRORS if f"── {cls.__name__} " not in doc]


def test_an_attribute_that_does_not_pickle_travels_as_its_repr() -> None:
    lock = threading.Lock()
    error = errors.InvalidRecordError("seconds <unlocked lock> is not valid", lock)

    back = pickle.loads(pickle.dumps(error))

    assert (str(error), repr(lock)[:30]) == (str(back), back.value[:30])


def test_bad_recorder_settings_are_a_stagetimer_value_error(tmp_path: Path) -> None:
    with pytest.raises(errors.InvalidSettingError, match="policy 'fastest'") as caught:
        Recorder(tmp_path, policy="fastest")

    assert (True, "fastest") == (isinstance(caught.value, ValueError), caught.value.value)


def test_recover_of_a_non_path_is_a_stagetimer_type_error() -> None:
    with pytest.raises(errors.InvalidTypeError, match=r"expected a str or os\.PathLike"):
        stagetimer.recover(42)  # type: ignore[arg-type]


def test_a_bad_migrate_template_is_a_stagetimer_value_error(tmp_path: Path) -> None:
    from stagetimer._store.migrate import migrate

    with pytest.raises(errors.TemplateError, match="relative to --root"):
        migrate(str(tmp_path), "/abs/{algo}", "new/{algo}")


def test_plotting_without_matplotlib_is_a_stagetimer_import_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from stagetimer._render.report_plot import load_pyplot

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib: ImportError

    with pytest.raises(ImportError, match="pip install 'stagetimer\\[plot\\]'") as caught:
        load_pyplot()

    assert isinstance(caught.value, errors.PlotUnavailableError)


def _public_misuse(tmp_path: Path) -> list[tuple[str, object]]:
    """Each public function's bad argument, as a user would pass it."""
    from stagetimer.hardware import hardware_differences

    return [
        ("Recorder resume_partial_runs without completed_runs",
         lambda: Recorder(tmp_path, resume_partial_runs=True)),
        ("Recorder completed_runs alone", lambda: Recorder(tmp_path, completed_runs=3)),
        ("compare threshold of the wrong type",
         lambda: stagetimer.compare(tmp_path, tmp_path, threshold="2%")),  # type: ignore[arg-type]
        ("compare negative threshold",
         lambda: stagetimer.compare(tmp_path, tmp_path, threshold=-1)),
        ("load_tree without a path", lambda: stagetimer.load_tree()),
        ("hardware_differences of a number", lambda: hardware_differences(1, 2)),  # type: ignore[arg-type]
        ("stages.auto_resume of a stage without continuations",
         lambda: stagetimer.stages.auto_resume("alpharank")),
    ]


@pytest.mark.parametrize("index", range(7))
def test_public_functions_raise_only_stagetimer_errors_for_bad_arguments(
    tmp_path: Path, index: int
) -> None:
    what, call = _public_misuse(tmp_path)[index]

    with pytest.raises(StageTimerError) as caught:
        call()  # type: ignore[operator]

    assert isinstance(caught.value, (ValueError, TypeError)), what


def test_to_frame_without_pandas_is_a_stagetimer_import_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas: ImportError

    with pytest.raises(errors.MissingExtraError, match="pip install 'stagetimer\\[pandas\\]'"):
        stagetimer.to_frame(tmp_path)


def _run_script(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    """``source`` as a script file (spawned workers import its functions by path)."""
    script = tmp_path / "pool_script.py"
    script.write_text(textwrap.dedent(source))
    return subprocess.run([sys.executable, str(script), str(tmp_path / "art")],
                          capture_output=True, text=True, timeout=90)


def test_a_process_pool_worker_lock_timeout_reaches_the_parent(tmp_path: Path) -> None:
    done = _run_script(tmp_path, """
        import concurrent.futures, fcntl, os, sys
        from stagetimer import LockTimeoutError, Recorder, record_timing

        def save(directory):
            rec = Recorder(directory, lock_timeout=0.2, strict=True)
            record_timing("ippo_train", 1.0, run_idx=0, recorder=rec)

        if __name__ == "__main__":
            directory = sys.argv[1]
            os.makedirs(directory)
            held = os.open(os.path.join(directory, "timings.json.lock"), os.O_RDWR | os.O_CREAT)
            fcntl.flock(held, fcntl.LOCK_EX)  # another writer holds the lock
            with concurrent.futures.ProcessPoolExecutor(1) as pool:
                try:
                    pool.submit(save, directory).result(timeout=60)
                except Exception as exc:
                    print(type(exc).__name__, isinstance(exc, TimeoutError), exc.path)
    """)

    expected = f"LockTimeoutError True {tmp_path / 'art' / 'timings.json.lock'}"
    assert expected == done.stdout.strip(), done.stderr


def test_a_spawn_pool_worker_without_a_recorder_returns_the_error(tmp_path: Path) -> None:
    done = _run_script(tmp_path, """
        import multiprocessing
        from stagetimer import NoActiveRecorderError, record_timing

        def save(run_idx):
            record_timing("ippo_train", 1.0, run_idx=run_idx)  # no recorder in this worker

        if __name__ == "__main__":
            with multiprocessing.get_context("spawn").Pool(2) as pool:
                try:
                    pool.map(save, range(4))
                except NoActiveRecorderError as exc:
                    said = "STAGETIMER_DIR" in str(exc)
                    print(type(exc).__name__, isinstance(exc, RuntimeError), said)
    """)

    assert "NoActiveRecorderError True True" == done.stdout.strip(), done.stderr
