"""``stagetimer migrate`` never writes outside ``--root``, even through a symlink it finds there.

A destination directory may hold a ``timings.json.lock`` that is a symlink (left by
someone, or planted) to a path outside the root; opening it to lock must not create
or change that path.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.cli import Ran, run_cli

from stagetimer import Recorder, record_timing

OLD = "pursuit/{scenario}/algorithms/{algo}"
NEW = "pursuit/{scenario}/{algo}"
LOCKS = ("timings.json.lock", "timings_hardware.json.lock")


def migrate(root: Path) -> Ran:
    return run_cli("migrate", "--root", str(root), "--from", OLD, "--to", NEW)


def snapshot(directory: Path) -> dict[str, tuple[bytes | None, int]]:
    """Every path under ``directory`` with its bytes and mtime."""
    return {
        str(p.relative_to(directory)): (
            p.read_bytes() if p.is_file() and not p.is_symlink() else None,
            p.lstat().st_mtime_ns,
        )
        for p in sorted(directory.rglob("*"))
    }


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(root, destination directory, a directory outside the root); the source exists."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    outside.mkdir()
    source = root / "pursuit" / "classic_3" / "algorithms" / "ippo"
    record_timing("ippo_train", 1.0, run_idx=0, recorder=Recorder(source))
    destination = root / "pursuit" / "classic_3" / "ippo"
    destination.mkdir(parents=True)
    return root, destination, outside


@pytest.mark.parametrize(
    "linked", [(LOCKS[0],), (LOCKS[1],), LOCKS], ids=["timings", "hardware", "both"]
)
def test_symlinked_lock_file_creates_nothing_outside_the_root(
    layout: tuple[Path, Path, Path], linked: tuple[str, ...]
) -> None:
    root, destination, outside = layout
    for name in linked:
        (destination / name).symlink_to(outside / f"planted-{name}")

    result = migrate(root)

    assert [] == sorted(p.name for p in outside.iterdir()), result.stdout + result.stderr


def test_symlinked_lock_file_leaves_an_existing_file_outside_the_root_unchanged(
    layout: tuple[Path, Path, Path],
) -> None:
    root, destination, outside = layout
    victim = outside / "important.txt"
    victim.write_bytes(b"keep me\n")
    for name in LOCKS:
        (destination / name).symlink_to(victim)
    before = snapshot(outside)

    migrate(root)

    assert before == snapshot(outside)


def test_symlinked_lock_file_is_reported_not_silently_skipped(
    layout: tuple[Path, Path, Path],
) -> None:
    root, destination, outside = layout
    (destination / LOCKS[0]).symlink_to(outside / "planted.lock")

    result = migrate(root)

    assert 1 == result.returncode
    assert "symbolic link" in result.stderr


def test_symlinked_lock_file_inside_the_root_also_is_not_followed(
    layout: tuple[Path, Path, Path],
) -> None:
    # Whatever the target, a lock file that is a symlink is refused (O_NOFOLLOW): the
    # rule cannot depend on where the link points, which may change under the reader.
    root, destination, _ = layout
    target = root / "elsewhere.lock"
    (destination / LOCKS[0]).symlink_to(target)

    migrate(root)

    assert not target.exists()
