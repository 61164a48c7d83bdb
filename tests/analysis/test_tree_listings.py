"""A watcher's walk through kept listings: the same directories as a fresh walk, after any
change to the tree, with directories listed again only where they changed."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from stagetimer import Recorder, record_timing
from stagetimer._analysis.tree import Listings, find_artifact_dirs


def _settled() -> Listings:
    """Listings that trust a directory's times at once (the default waits until they are
    2 s old, past any file system's timestamp granularity: see the last test)."""
    return Listings(margin_ns=0)


def _walk(root: Path, listings: Listings | None) -> tuple[list[object], list[str], list[str]]:
    rescued: list[str] = []
    attempted: list[str] = []
    found, _ = find_artifact_dirs([str(root)], rescued, attempted, listings=listings)
    return [tuple(f) for f in found], rescued, attempted


def _suite(root: Path, count: int = 6) -> None:
    for i in range(count):
        record_timing("train", 1.0, run_idx=0,
                      recorder=Recorder(root / f"g{i % 2}" / f"d{i}", attempts=False))


def test_an_unchanged_tree_is_walked_by_stat_alone(tmp_path: Path) -> None:
    _suite(tmp_path)
    listings = _settled()
    first = _walk(tmp_path, listings)
    listings.forget_unwalked()
    assert listings.listed == 1 + 2 + 6
    again = _walk(tmp_path, listings)
    listings.forget_unwalked()
    assert listings.listed == 0
    assert again == first == _walk(tmp_path, None)


CHANGES = {
    "a new artifact directory deep down": lambda root: record_timing(
        "train", 1.0, run_idx=0, recorder=Recorder(root / "g1" / "d9" / "new", attempts=False)),
    "a directory removed": lambda root: shutil.rmtree(root / "g0" / "d2"),
    "a sidecar removed": lambda root: os.remove(root / "g1" / "d3" / "timings.json"),
    "a rescue file left": lambda root: (root / "g0" / "d4" / "timings.rescue-1.json").write_text(
        "[]"),
    "a markers' folder made": lambda root: os.mkdir(root / "g1" / "d5" / "timings.attempts"),
    "a directory renamed": lambda root: os.rename(root / "g0", root / "h0"),
    "a link to a directory": lambda root: os.symlink(root / "g0" / "d0", root / "g1" / "ln"),
}


@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES.keys())
def test_a_changed_tree_is_walked_as_a_fresh_walk_sees_it(tmp_path: Path, change) -> None:  # type: ignore[no-untyped-def]
    _suite(tmp_path)
    listings = _settled()
    _walk(tmp_path, listings)
    listings.forget_unwalked()

    change(tmp_path)

    assert _walk(tmp_path, listings) == _walk(tmp_path, None)
    listings.forget_unwalked()
    assert 0 < listings.listed < 1 + 2 + 6  # what changed (and below a rename), not all


def test_a_link_that_comes_to_point_to_a_directory_is_followed(tmp_path: Path) -> None:
    root = tmp_path / "suite"
    _suite(root)
    target = tmp_path / "elsewhere"
    target.write_text("a file for now")
    os.symlink(target, root / "g0" / "ln")
    listings = _settled()
    _walk(root, listings)
    listings.forget_unwalked()

    os.remove(target)  # the link's own directory does not change
    record_timing("train", 1.0, run_idx=0, recorder=Recorder(target, attempts=False))

    walked = _walk(root, listings)
    assert walked == _walk(root, None)
    assert any(str(Path("g0") / "ln") == f[2] for f in walked[0])  # type: ignore[index]


def test_a_directory_changed_within_the_margin_is_listed_again(tmp_path: Path) -> None:
    # Listed while its time is recent, a directory may change again within the same
    # timestamp tick: its listing is trusted once it is older than the margin only.
    _suite(tmp_path, 2)
    listings = Listings()
    _walk(tmp_path, listings)
    listings.forget_unwalked()
    _walk(tmp_path, listings)
    listings.forget_unwalked()
    assert listings.listed == 1 + 2 + 2  # all fresh: all listed again
    stamp = os.stat(tmp_path / "g0" / "d0")
    # a change that leaves the time as it was (a coarse clock): seen, since the listing
    # was taken within the margin
    record_timing("train", 1.0, run_idx=0,
                  recorder=Recorder(tmp_path / "g0" / "d0" / "inner", attempts=False))
    os.utime(tmp_path / "g0" / "d0", ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert _walk(tmp_path, listings) == _walk(tmp_path, None)
