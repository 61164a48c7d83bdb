"""capture_software as a whole: the packages a process imported, the accelerator libraries
it loaded, never importing or probing on its own, and software_differences."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from stagetimer.hardware import Difference
from stagetimer.software import (
    Software,
    capture_software,
    format_software_differences,
    software_description,
    software_differences,
    software_id,
)
from stagetimer.software._accelerators import loaded_accelerators
from stagetimer.software._packages import provides


def run_child(code: str, *args: str, cwd: Path | None = None) -> Any:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True,
        timeout=120, check=False, cwd=cwd,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


DESCRIBE = """
import json, sys
for name in sys.argv[1:]:
    __import__(name)
from stagetimer.software import capture_software, software_description, software_id
sw = capture_software()
print(json.dumps({"id": software_id(sw), "description": software_description(sw)}))
"""


def test_a_child_importing_one_more_distribution_differs_by_that_package(tmp_path: Path) -> None:
    base = run_child(DESCRIBE, "json", cwd=tmp_path)
    new = run_child(DESCRIBE, "six", cwd=tmp_path)

    from importlib.metadata import version

    differences = software_differences(base["description"], new["description"])

    assert [Difference("packages.six", None, version("six"))] == differences
    assert f"six not loaded → {version('six')}" == format_software_differences(differences)
    assert base["id"] != new["id"]


def test_the_same_program_twice_has_one_software_id(tmp_path: Path) -> None:
    first = run_child(DESCRIBE, "six", cwd=tmp_path)
    second = run_child(DESCRIBE, "six", cwd=tmp_path)

    assert first == second


def test_packages_are_those_imported_with_their_installed_versions() -> None:
    from importlib.metadata import version

    pytest.importorskip("attrs")  # imported by stagetimer itself
    packages = capture_software(timeout=1.0).packages

    assert ("attrs", version("attrs")) in packages.items()
    assert not {"json", "os", "sys", "collections"} & set(packages)  # no standard library


CAPTURE_IMPORTS_NOTHING = """
import json, sys
import stagetimer
before = set(sys.modules)
from stagetimer.software import capture_software
capture_software()
new = sorted(set(sys.modules) - before)
third_party = [m for m in new if m.split(".")[0] not in sys.stdlib_module_names
               and not m.startswith("stagetimer")]
print(json.dumps({"third_party": third_party, "pynvml": "pynvml" in sys.modules,
                  "torch": "torch" in sys.modules}))
"""


def test_capturing_imports_no_module_beyond_the_standard_library(tmp_path: Path) -> None:
    # attrs and the rest of stagetimer's own imports are there before: the capture itself
    # adds only standard-library modules (subprocess, importlib.metadata) and its own.
    result = run_child(CAPTURE_IMPORTS_NOTHING, cwd=tmp_path)

    assert {"third_party": [], "pynvml": False, "torch": False} == result


STAGE_THEN_SAVE = """
import json, sys
from stagetimer import Recorder, load_hardware, stage
if sys.argv[2] == "program-imports-pynvml":
    import pynvml
with stage("train", recorder=Recorder(sys.argv[1])):  # its counters import pynvml
    pass
[software] = load_hardware(sys.argv[1]).software.values()
print(json.dumps({"pynvml loaded": "pynvml" in sys.modules,
                  "nvidia-ml-py": "nvidia-ml-py" in software.packages,
                  "driver looked up": "accelerators.nvidia_driver" in software.sources}))
"""


@pytest.mark.parametrize("program", ["program-imports-pynvml", "cpu-only"])
def test_stagetimer_s_own_import_of_pynvml_is_not_the_program_s(
    tmp_path: Path, program: str
) -> None:
    # The energy counters import pynvml at the first stage; the software description,
    # made at the first save, must still say what the program itself loaded.
    pytest.importorskip("pynvml")

    result = run_child(STAGE_THEN_SAVE, str(tmp_path / "art"), program, cwd=tmp_path)

    own = program == "program-imports-pynvml"
    assert {
        "pynvml loaded": True,
        "nvidia-ml-py": own,
        "driver looked up": own,
    } == result


IMPORT_DOES_NOT_CAPTURE = """
import json, sys
import attrs  # on 3.10 its ``platform`` import brings ``subprocess``: not stagetimer's doing
already = "subprocess" in sys.modules
import stagetimer
from stagetimer import Recorder
rec = Recorder(sys.argv[1])
print(json.dumps({"software": "stagetimer.software" in sys.modules,
                  "subprocess": "subprocess" in sys.modules and not already}))
"""


def test_import_and_a_new_recorder_capture_nothing(tmp_path: Path) -> None:
    result = run_child(IMPORT_DOES_NOT_CAPTURE, str(tmp_path / "a"), cwd=tmp_path)

    assert {"software": False, "subprocess": False} == result


def test_the_live_description_is_captured_once_and_cached() -> None:
    first = capture_software()
    assert capture_software() is first


def test_a_description_round_trips_through_its_json_with_its_id() -> None:
    software = capture_software()
    stored = json.loads(json.dumps(software_description(software)))

    assert software_id(stored) == software_id(software)
    assert software_id(software).startswith("sw-") and len(software_id(software)) == 19


# -- accelerators: what the loaded libraries say ------------------------------------------


class _FakeTorchVersion:
    cuda = "12.4"
    hip = None


class _FakeCudnn:
    """``torch.backends.cudnn``: ``version()`` is cudnn.h's CUDNN_VERSION as an int."""

    def __init__(self, value: int) -> None:
        self.value = value

    def version(self) -> int:
        return self.value


class _FakeNccl:
    """``torch.cuda.nccl``: ``version()`` is a tuple (major, minor, patch)."""

    def version(self) -> tuple[int, int, int]:
        return (2, 21, 5)


def _fake_torch(monkeypatch: pytest.MonkeyPatch, cudnn: int = 90100) -> None:
    # torch itself brings gigabytes of CUDA libraries; these mirror the attributes torch
    # exposes (torch.version.cuda, torch.backends.cudnn.version(), torch.cuda.nccl.version()).
    import types

    torch = types.ModuleType("torch")
    torch.version = _FakeTorchVersion()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "torch.backends.cudnn", _FakeCudnn(cudnn))
    monkeypatch.setitem(sys.modules, "torch.cuda.nccl", _FakeNccl())


NVRM = {
    "proprietary": "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 "
                   "22:23:56 UTC 2024\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n",
    "open": "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  560.35.03  Release "
            "Build  (dvs-builder@U16-I3-B03-4-3)  Fri Aug 16 21:42:42 UTC 2024\n",
}


@pytest.mark.parametrize(("kind", "driver"), [("proprietary", "550.54.15"),
                                              ("open", "560.35.03")])
def test_torch_s_loaded_libraries_and_the_kernel_module_s_driver(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, kind: str, driver: str
) -> None:
    _fake_torch(monkeypatch)
    monkeypatch.delitem(sys.modules, "pynvml", raising=False)
    (tmp_path / "proc" / "driver" / "nvidia").mkdir(parents=True)
    (tmp_path / "proc" / "driver" / "nvidia" / "version").write_text(NVRM[kind])

    found, sources = loaded_accelerators(str(tmp_path))

    assert {"cuda": "12.4", "cudnn": "9.1.0", "nccl": "2.21.5", "nvidia_driver": driver} == found
    assert "the loaded kernel module" in sources["accelerators.nvidia_driver"]


def test_cudnn_before_9_encodes_its_version_in_thousands(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _fake_torch(monkeypatch, cudnn=8902)

    found, _ = loaded_accelerators(str(tmp_path))

    assert "8.9.2" == found["cudnn"]


def test_without_a_driver_the_reason_is_given(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _fake_torch(monkeypatch)
    monkeypatch.delitem(sys.modules, "pynvml", raising=False)

    found, sources = loaded_accelerators(str(tmp_path))

    assert "nvidia_driver" not in found
    assert "does not exist" in sources["accelerators.nvidia_driver"]


def test_an_initialised_nvml_of_the_program_gives_the_driver(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import types

    pynvml = types.ModuleType("pynvml")
    pynvml.nvmlSystemGetDriverVersion = lambda: "550.54.15"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pynvml", pynvml)
    monkeypatch.delitem(sys.modules, "torch", raising=False)

    found, sources = loaded_accelerators(str(tmp_path))

    assert ({"nvidia_driver": "550.54.15"}, "pynvml.nvmlSystemGetDriverVersion()") == (
        found, sources["accelerators.nvidia_driver"]
    )


def test_an_uninitialised_nvml_is_not_initialised_for_this(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import types

    calls: list[str] = []

    class NVMLError_Uninitialized(Exception):  # pynvml's own class name
        pass

    def uninitialised() -> str:
        raise NVMLError_Uninitialized("Uninitialized")

    pynvml = types.ModuleType("pynvml")
    pynvml.nvmlSystemGetDriverVersion = uninitialised  # type: ignore[attr-defined]
    pynvml.nvmlInit = lambda: calls.append("nvmlInit")  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pynvml", pynvml)
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    (tmp_path / "proc" / "driver" / "nvidia").mkdir(parents=True)
    (tmp_path / "proc" / "driver" / "nvidia" / "version").write_text(NVRM["proprietary"])

    found, _ = loaded_accelerators(str(tmp_path))

    assert ({"nvidia_driver": "550.54.15"}, []) == (found, calls)


def test_without_an_accelerator_library_nothing_is_recorded(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.delitem(sys.modules, "pynvml", raising=False)
    (tmp_path / "proc" / "driver" / "nvidia").mkdir(parents=True)
    (tmp_path / "proc" / "driver" / "nvidia" / "version").write_text(NVRM["proprietary"])

    found, sources = loaded_accelerators(str(tmp_path))

    assert ({}, True) == (found, "no accelerator library loaded" in sources["accelerators"])


# -- which distribution provides a module -------------------------------------------------

RECORD = (
    "numpy/__init__.py,sha256=x,1\n"
    "numpy-2.1.0.dist-info/RECORD,,\n"
    "six.py,sha256=y,2\n"
    "_cffi_backend.cpython-311-x86_64-linux-gnu.so,sha256=z,3\n"
    "../../bin/f2py,sha256=w,4\n"
    '"odd,name/__init__.py",sha256=v,5\n'
)


@pytest.mark.parametrize(
    ("name", "expected"),
    [("numpy", True), ("six", True), ("_cffi_backend", True), ("odd,name", True),
     ("f2py", False), ("numpy-2", False), ("num", False), ("bin", False)],
)
def test_a_record_provides_its_top_level_modules_only(name: str, expected: bool) -> None:
    assert expected == provides(None, RECORD, {name})


def test_top_level_txt_wins_over_the_record() -> None:
    assert (True, False) == (
        provides("yaml\n_yaml\n", RECORD, {"yaml"}), provides("yaml\n", RECORD, {"numpy"})
    )


# -- software_differences ------------------------------------------------------------------

BASE: dict[str, Any] = {
    "python": "CPython 3.11.7",
    "code": {"commit": "1a2b3c4" + "0" * 33, "dirty": False, "diff_sha256": None},
    "packages": {"torch": "2.4.1", "numpy": "2.1.0"},
    "accelerators": {"cuda": "12.1"},
    "sources": {"code": "git"},
}


def _with(**changes: Any) -> dict[str, Any]:
    return {**BASE, **changes}


def test_identical_descriptions_have_no_difference() -> None:
    assert [] == software_differences(BASE, _with(sources={"code": "elsewhere"}))


def test_the_commit_line_compare_prints() -> None:
    new = _with(
        code={"commit": "5d6e7f8" + "0" * 33, "dirty": True, "diff_sha256": "ab" * 32},
        packages={"torch": "2.5.0", "numpy": "2.1.0"},
    )

    words = format_software_differences(software_differences(BASE, new))

    assert "commit 1a2b3c4 → 5d6e7f8 (uncommitted changes); torch 2.4.1 → 2.5.0" == words


def test_other_edits_on_one_commit_are_named_as_such() -> None:
    one = _with(code={"commit": BASE["code"]["commit"], "dirty": True, "diff_sha256": "a" * 64})
    two = _with(code={"commit": BASE["code"]["commit"], "dirty": True, "diff_sha256": "b" * 64})

    found = software_differences(one, two)

    assert ["code.diff_sha256"] == [d.field for d in found]
    assert (
        "other uncommitted changes on the same commit",
        "other uncommitted changes on commit 1a2b3c4",
    ) == (format_software_differences(found), format_software_differences(found, one, two))


def test_packages_removed_python_and_accelerators_are_named() -> None:
    new = _with(python="CPython 3.12.1", packages={"torch": "2.4.1"}, accelerators={"cuda": "12.4"})

    found = software_differences(BASE, new)

    assert [
        Difference("python", "CPython 3.11.7", "CPython 3.12.1"),
        Difference("packages.numpy", "2.1.0", None),
        Difference("accelerators.cuda", "12.1", "12.4"),
    ] == found
    assert (
        "Python CPython 3.11.7 → CPython 3.12.1; numpy 2.1.0 → not loaded; cuda 12.1 → 12.4"
        == format_software_differences(found)
    )


def test_a_software_object_and_its_stored_dict_compare_alike() -> None:
    software = capture_software()

    assert [] == software_differences(software, software_description(software))
    with pytest.raises(TypeError, match="expected a Software"):
        software_differences(software, 42)  # type: ignore[arg-type]


def test_an_older_description_without_code_is_unknown_not_an_error() -> None:
    found = software_differences({"python": "CPython 3.11.7"}, BASE)

    assert {"code.commit", "code.dirty", "packages.torch"} <= {d.field for d in found}
    assert isinstance(Software(), Software)


AGREES_WITH_IMPORTLIB_METADATA = """
import importlib, json, sys
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except ImportError:
        pass
from stagetimer.software._packages import imported_packages, imported_top_level
ours = imported_packages()[0]
import importlib.metadata as metadata
providers = metadata.packages_distributions()
wanted = {d for name in imported_top_level() for d in providers.get(name, ())}
theirs = {metadata.metadata(d)["Name"]: metadata.version(d) for d in wanted}
print(json.dumps([ours, theirs]))
"""


@pytest.mark.skipif(
    sys.version_info < (3, 11),
    reason="before 3.11 importlib.metadata.packages_distributions() reads top_level.txt "
    "only, so it misses the wheels without one that this capture finds from RECORD",
)
def test_the_packages_are_those_importlib_metadata_names(tmp_path: Path) -> None:
    # Whatever of these the environment has: wheels with and without top_level.txt,
    # extension modules, an editable install (stagetimer itself).
    ours, theirs = run_child(
        AGREES_WITH_IMPORTLIB_METADATA, "numpy", "scipy", "matplotlib", "pandas", "six",
        "dateutil", "yaml", "_cffi_backend", "hypothesis", "stagetimer", cwd=tmp_path,
    )

    assert theirs == ours
