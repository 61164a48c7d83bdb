"""``load_tree`` / ``scan_tree``: the one walk the report, table, records and compare share.

Links are followed without looping, a directory reached twice is listed once, the
order is the report's, errors are named, and the one loader keeps every stored value
of any content it accepts.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stagetimer import Recorder, SidecarCorruptError, load_hardware, load_timings, record_timing
from stagetimer._analysis.raw import HardwareCache
from stagetimer._analysis.tree import Artifact, load_tree, scan_tree
from stagetimer._format import RUN_FIELDS
from stagetimer._store.load import as_float
from stagetimer._store.rules import add_seconds


def make(directory: Path, stage: str = "ippo_train", seconds: float = 1.0) -> Path:
    record_timing(stage, seconds, run_idx=0, recorder=Recorder(directory))
    return directory


def relpaths(artifacts: list[Artifact]) -> list[str]:
    return [a.relpath for a in artifacts]


def test_artifacts_are_listed_in_sorted_relative_order_under_each_path(tmp_path: Path) -> None:
    for rel in ("b/x", "a-b/y", "a/z", "a/y/deep"):
        make(tmp_path / "exp" / rel)

    artifacts = load_tree(tmp_path / "exp")

    assert ["a/y/deep", "a/z", "a-b/y", "b/x"] == relpaths(artifacts)
    assert [str(tmp_path / "exp" / "a" / "y" / "deep")] == [artifacts[0].path]
    assert {str(tmp_path / "exp")} == {a.root for a in artifacts}


def test_the_root_itself_has_relpath_dot(tmp_path: Path) -> None:
    make(tmp_path)

    assert ["."] == relpaths(load_tree(tmp_path))


def test_a_timings_file_path_reads_its_directory(tmp_path: Path) -> None:
    make(tmp_path / "d")

    [artifact] = load_tree(tmp_path / "d" / "timings.json")

    assert (str(tmp_path / "d"), ".") == (artifact.path, artifact.relpath)


def test_a_symlinked_artifact_directory_is_included(tmp_path: Path) -> None:
    make(tmp_path / "elsewhere" / "ippo")
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "ippo").symlink_to(tmp_path / "elsewhere" / "ippo")

    artifacts = load_tree(tmp_path / "suite")

    assert ["ippo"] == relpaths(artifacts)
    assert ["ippo_train"] == list(artifacts[0].timings.stages)


def test_a_directory_given_twice_is_listed_once(tmp_path: Path) -> None:
    make(tmp_path / "d")

    assert 1 == len(load_tree(tmp_path / "d", tmp_path / "d"))


def test_overlapping_paths_list_each_directory_once_under_the_first(tmp_path: Path) -> None:
    make(tmp_path / "exp" / "pursuit" / "ippo")
    make(tmp_path / "exp" / "coins" / "ippo")

    artifacts, problems = scan_tree([tmp_path / "exp", tmp_path / "exp" / "pursuit"])

    assert [] == problems
    assert ["coins/ippo", "pursuit/ippo"] == relpaths(artifacts)


def test_a_link_back_up_the_tree_terminates(tmp_path: Path) -> None:
    make(tmp_path / "exp" / "a")
    (tmp_path / "exp" / "a" / "loop").symlink_to(tmp_path / "exp")
    (tmp_path / "exp" / "self").symlink_to(".")
    script = (
        "import sys; from stagetimer._analysis.tree import scan_tree; "
        "a, p = scan_tree([sys.argv[1]]); print([x.relpath for x in a], len(p))"
    )

    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "exp")],
                          capture_output=True, text=True, timeout=60)

    assert 0 == done.returncode, done.stderr
    assert "['a'] 0" == done.stdout.strip()


def test_a_missing_path_raises_file_not_found_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "nope"

    with pytest.raises(FileNotFoundError) as caught:
        load_tree(missing)

    assert str(missing) == caught.value.filename


def test_a_path_without_any_timings_raises_file_not_found(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()

    with pytest.raises(FileNotFoundError, match=r"no timings\.json at or under this path"):
        load_tree(tmp_path / "empty")


def test_a_corrupt_sidecar_raises_sidecar_corrupt_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "timings.json").write_text("{")

    with pytest.raises(SidecarCorruptError) as caught:
        load_tree(tmp_path)

    assert str(tmp_path / "bad" / "timings.json") == caught.value.path


def test_scan_keeps_the_good_directories_beside_a_bad_one(tmp_path: Path) -> None:
    make(tmp_path / "a_good")
    (tmp_path / "b_bad").mkdir()
    (tmp_path / "b_bad" / "timings.json").write_text("[")

    artifacts, problems = scan_tree([tmp_path])

    assert ["a_good"] == relpaths(artifacts)
    assert [str(tmp_path / "b_bad" / "timings.json")] == [p.path for p in problems]


def test_reading_a_tree_writes_nothing(tmp_path: Path) -> None:
    make(tmp_path / "d")
    for lock in tmp_path.rglob("*.lock"):
        lock.unlink()
    before = sorted((str(p), p.stat().st_mtime_ns) for p in tmp_path.rglob("*"))

    load_tree(tmp_path)

    assert before == sorted((str(p), p.stat().st_mtime_ns) for p in tmp_path.rglob("*"))


def test_hardware_is_read_as_load_hardware_reads_it(tmp_path: Path) -> None:
    make(tmp_path / "a")
    make(tmp_path / "b")

    artifacts = load_tree(tmp_path)

    assert [load_hardware(a.path) for a in artifacts] == [a.hardware for a in artifacts]
    assert artifacts[0].hardware.hardware is not artifacts[1].hardware.hardware


def test_the_hardware_cache_never_serves_other_content(tmp_path: Path) -> None:
    make(tmp_path / "a")
    cache = HardwareCache()
    first = cache.read(str(tmp_path / "a"))
    sidecar = tmp_path / "a" / "timings_hardware.json"
    data = json.loads(sidecar.read_text())
    data["hardware"] = {}
    sidecar.write_text(json.dumps(data))

    assert (1, {}) == (len(first.hardware), cache.read(str(tmp_path / "a")).hardware)


_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 10**20), st.floats(allow_nan=True),
    st.text(max_size=4),
)
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=2) | st.dictionaries(
    st.text(max_size=3), inner, max_size=2), max_leaves=4)
_run_keys = st.sampled_from(
    ["seconds", "hardware_id", "run_idx", "label", "started_at", "steps", "system_ram_gb", "job"]
)
_runs = st.dictionaries(_run_keys, _values, max_size=6)
_stages = st.dictionaries(
    st.text(min_size=1, max_size=3),
    st.fixed_dictionaries(
        {"runs": st.lists(_runs | _values, max_size=3)},
        optional={"total_seconds": _values, "expected_runs": _values},
    ) | _values,
    max_size=3,
)


def _stored_run(run: Any) -> dict[str, Any]:
    """A loaded run as the object it was read from (null fields are absent)."""
    fields = {k: v for k, v in attrs.asdict(run, recurse=False).items()
              if k not in ("metadata", "legacy_metadata") and v is not None}
    return {**fields, **run.metadata, **run.legacy_metadata}


@settings(max_examples=300, deadline=None)
@given(content=_stages)
def test_the_loader_keeps_every_stored_value_of_any_content_it_accepts(
    tmp_path_factory: pytest.TempPathFactory, content: dict[str, Any]
) -> None:
    directory = tmp_path_factory.mktemp("loader")
    (directory / "timings.json").write_text(json.dumps(content))
    try:
        timings = load_timings(directory)
    except SidecarCorruptError:
        return  # what is refused is the shape tests' business
    stages = {k: v for k, v in content.items() if isinstance(v, dict) and "runs" in v}

    assert list(stages) == list(timings.stages)
    for name, stage in stages.items():
        loaded = timings.stages[name]
        stored_runs = [
            {k: v for k, v in r.items() if v is not None or k not in RUN_FIELDS}
            for r in stage["runs"]
        ]
        expected_total = stage.get("total_seconds", add_seconds(0.0, stage["runs"]))
        # As JSON text: a NaN equals itself there.
        assert json.dumps(
            [{**r, "seconds": as_float(r["seconds"])} for r in stored_runs], sort_keys=True
        ) == json.dumps([_stored_run(r) for r in loaded.runs], sort_keys=True)
        assert as_float(expected_total) == loaded.total_seconds or (
            loaded.total_seconds != loaded.total_seconds  # NaN stored: NaN loaded
        )


def test_the_loader_reads_a_written_file_with_labels_and_metadata(tmp_path: Path) -> None:
    rec = Recorder(tmp_path)
    record_timing("ippo_train", 1.5, run_idx=0, label="warm", recorder=rec, steps=10, lr=0.1)
    record_timing("ippo_train", 2, run_idx=1, recorder=rec, tags=["a", {"b": None}])

    [first, second] = load_timings(tmp_path).stages["ippo_train"].runs

    assert (1.5, 0, "warm", {"steps": 10, "lr": 0.1}) == (
        first.seconds, first.run_idx, first.label, first.metadata
    )
    assert (2.0, 1, None, {"tags": ["a", {"b": None}]}) == (
        second.seconds, second.run_idx, second.label, second.metadata
    )


def test_artifact_timings_are_what_load_timings_gives(tmp_path: Path) -> None:
    rec = Recorder(tmp_path / "d")
    record_timing("ippo_train", 1.5, run_idx=0, label="warm", recorder=rec, steps=10)
    (tmp_path / "legacy").mkdir()
    (tmp_path / "legacy" / "timings.json").write_text(  # no total_seconds: the loader sums
        '{"ippo_train": {"runs": [{"seconds": 3.0, "system_ram_gb": 32}]}, "gpu_ram_gb": 24}'
    )

    artifacts = load_tree(tmp_path)

    assert [load_timings(a.path) for a in artifacts] == [a.timings for a in artifacts]
