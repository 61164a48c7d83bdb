"""``stagetimer migrate``: copy sidecars from an old layout to the canonical one, once."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from helpers.cli import Ran, run_cli

from stagetimer import Recorder, load_hardware, load_timings, record_timing
from stagetimer._store.migrate import migrate as run_migrate
from stagetimer.hardware import CpuInfo, Hardware, description, hardware_id

OLD = "pursuit/{scenario}/algorithms/{algo}"
NEW = "pursuit/{scenario}/{algo}"


def migrate(root: Path, *extra: str, source: str = OLD, destination: str = NEW
            ) -> Ran:
    return run_cli("migrate", "--root", str(root), "--from", source, "--to", destination,
                   *extra)


def snapshot(root: Path) -> dict[str, tuple[bytes | None, int]]:
    """Every path under ``root`` with its bytes and mtime: to prove nothing was written."""
    return {
        str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None,
                                   p.lstat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
    }


def old_export(root: Path, scenario: str, algo: str, seconds: list[float]) -> Path:
    directory = root / "pursuit" / scenario / "algorithms" / algo
    rec = Recorder(directory)
    for i, s in enumerate(seconds):
        record_timing(f"{algo}_train", s, run_idx=i, recorder=rec)
    record_timing("alpharank", 9.0, recorder=rec)
    return directory


def test_copies_both_sidecars_byte_for_byte_and_keeps_the_source(tmp_path: Path) -> None:
    source = old_export(tmp_path, "classic_3", "ippo", [1.0, 2.0])
    before = {n: (source / n).read_bytes() for n in ("timings.json", "timings_hardware.json")}

    result = migrate(tmp_path)

    assert 0 == result.returncode, result.stderr
    target = tmp_path / "pursuit" / "classic_3" / "ippo"
    for name, content in before.items():
        assert content == (target / name).read_bytes()
        assert content == (source / name).read_bytes()
    assert "copied pursuit/classic_3/algorithms/ippo -> pursuit/classic_3/ippo" in result.stdout


def test_every_match_is_copied_to_its_own_destination(tmp_path: Path) -> None:
    old_export(tmp_path, "classic_3", "ippo", [1.0])
    old_export(tmp_path, "classic_3", "iql", [2.0])
    old_export(tmp_path, "open_5", "ippo", [3.0])

    migrate(tmp_path)

    found = {
        str(p.parent.relative_to(tmp_path)): load_timings(p.parent).stages[
            p.parent.name + "_train"
        ].total_seconds
        for p in (tmp_path / "pursuit").glob("*/*/timings.json")
        if p.parent.parent.name != "algorithms"
    }
    assert {"pursuit/classic_3/ippo": 1.0, "pursuit/classic_3/iql": 2.0,
            "pursuit/open_5/ippo": 3.0} == found


def test_existing_destination_keeps_its_stages_and_gains_the_missing_ones(tmp_path: Path) -> None:
    old_export(tmp_path, "classic_3", "ippo", [1.0, 2.0])
    target = tmp_path / "pursuit" / "classic_3" / "ippo"
    record_timing("alpharank", 0.5, recorder=Recorder(target))
    record_timing("satisfaction", 0.25, run_idx=0, recorder=Recorder(target))

    result = migrate(tmp_path)

    assert 0 == result.returncode, result.stderr
    stages = load_timings(target).stages
    assert ["alpharank", "satisfaction", "ippo_train"] == list(stages)
    assert 0.5 == stages["alpharank"].total_seconds  # its own, not the source's 9.0
    assert [1.0, 2.0] == [r.seconds for r in stages["ippo_train"].runs]
    assert "merged pursuit/classic_3/algorithms/ippo -> pursuit/classic_3/ippo" in result.stdout


def test_hardware_entries_are_united(tmp_path: Path) -> None:
    source = old_export(tmp_path, "classic_3", "ippo", [1.0])
    target = tmp_path / "pursuit" / "classic_3" / "ippo"
    target.mkdir(parents=True)
    other = Hardware(host="other", cpu=CpuInfo(affinity=(0,), logical_cpus=1))
    (target / "timings_hardware.json").write_text(json.dumps(
        {"schema_version": 1, "hardware": {hardware_id(other): description(other)}}))

    migrate(tmp_path)

    expected = set(load_hardware(source).hardware) | {hardware_id(other)}
    assert expected == set(load_hardware(target).hardware)


def test_what_it_says_counts_software_entries_too(tmp_path: Path) -> None:
    source = old_export(tmp_path, "classic_3", "ippo", [1.0])
    copied = migrate(tmp_path)
    # the same source into a destination whose hardware sidecar lacks the software
    target = tmp_path / "pursuit" / "classic_4" / "ippo"
    target.mkdir(parents=True)
    stored = json.loads((source / "timings_hardware.json").read_text())
    del stored["software"]
    (target / "timings_hardware.json").write_text(json.dumps(stored))
    shutil.copytree(source, tmp_path / "pursuit" / "classic_4" / "algorithms" / "ippo")

    merged = migrate(tmp_path)

    assert "timings_hardware.json: 1 hardware entry, 1 software entry)" in copied.stdout
    assert "timings_hardware.json: added 1 software entry)" in merged.stdout


def test_names_from_the_tree_are_printed_escaped(tmp_path: Path) -> None:
    old_export(tmp_path, "cls\x1b[2J", "ippo", [1.0])

    result = migrate(tmp_path)

    assert 0 == result.returncode, result.stderr
    assert "\x1b" not in result.stdout
    assert "copied pursuit/cls\\x1b[2J/algorithms/ippo" in result.stdout


def test_every_hardware_id_in_the_merged_timings_resolves(tmp_path: Path) -> None:
    old_export(tmp_path, "classic_3", "ippo", [1.0])
    target = tmp_path / "pursuit" / "classic_3" / "ippo"
    target.mkdir(parents=True)
    (target / "timings.json").write_text(json.dumps(
        {"alpharank": {"total_seconds": 1.0, "runs": [{"seconds": 1.0}]}}))

    migrate(tmp_path)

    ids = {r.hardware_id for s in load_timings(target).stages.values() for r in s.runs}
    assert ids - {None} <= set(load_hardware(target).hardware)
    assert ids - {None}


def test_legacy_top_level_values_follow_the_copied_runs_into_a_merge(tmp_path: Path) -> None:
    source = tmp_path / "pursuit" / "classic_3" / "algorithms" / "ippo"
    source.mkdir(parents=True)
    (source / "timings.json").write_text(json.dumps({
        "system_ram_gb": 64,
        "ippo_train": {"total_seconds": 1.0, "runs": [{"seconds": 1.0, "run_idx": 0}]},
    }))
    target = tmp_path / "pursuit" / "classic_3" / "ippo"
    record_timing("alpharank", 0.5, recorder=Recorder(target))

    migrate(tmp_path)

    timings = load_timings(target)
    assert {} == timings.legacy_metadata
    assert {"system_ram_gb": 64} == timings.stages["ippo_train"].runs[0].legacy_metadata
    assert {} == timings.stages["alpharank"].runs[0].legacy_metadata


def test_running_it_again_changes_nothing_and_says_so(tmp_path: Path) -> None:
    old_export(tmp_path, "classic_3", "ippo", [1.0])
    old_export(tmp_path, "open_5", "iql", [1.0])
    assert 0 == migrate(tmp_path).returncode
    before = snapshot(tmp_path)

    again = migrate(tmp_path)

    assert 0 == again.returncode
    assert before == snapshot(tmp_path)
    assert again.stdout.splitlines()[-1].startswith("nothing changed: all 2 destination(s)")


def test_dry_run_says_what_it_would_do_and_writes_nothing(tmp_path: Path) -> None:
    old_export(tmp_path, "classic_3", "ippo", [1.0])
    for lock in tmp_path.rglob("*.lock"):
        lock.unlink()
    before = snapshot(tmp_path)

    result = migrate(tmp_path, "--dry-run")

    assert 0 == result.returncode, result.stderr
    assert before == snapshot(tmp_path)
    assert result.stdout.startswith(
        "would copy pursuit/classic_3/algorithms/ippo -> pursuit/classic_3/ippo"
    )
    assert result.stdout.splitlines()[-1] == "dry run, nothing written: would copy 1"


def test_a_placeholder_matches_exactly_one_path_component(tmp_path: Path) -> None:
    nested = old_export(tmp_path / "pursuit" / "deep", "x", "ippo", [1.0])
    assert nested.exists()  # pursuit/deep/pursuit/x/algorithms/ippo: {scenario} is one name

    result = migrate(tmp_path)

    assert 0 == result.returncode
    assert "nothing to migrate" in result.stdout
    assert not (tmp_path / "pursuit" / "deep" / "ippo").exists()


def test_a_symlink_pointing_out_of_root_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    outside = old_export(tmp_path / "elsewhere", "classic_3", "ippo", [1.0])
    (root / "pursuit" / "classic_3" / "algorithms").mkdir(parents=True)
    (root / "pursuit" / "classic_3" / "algorithms" / "ippo").symlink_to(outside)
    old_export(root, "classic_3", "iql", [2.0])

    result = migrate(root)

    assert 1 == result.returncode
    [line] = result.stderr.splitlines()
    assert line.startswith("stagetimer migrate: refused pursuit/classic_3/algorithms/ippo")
    assert "outside --root" in line
    assert not (root / "pursuit" / "classic_3" / "ippo").exists()
    assert (root / "pursuit" / "classic_3" / "iql" / "timings.json").exists()


def test_a_destination_symlinked_out_of_root_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    old_export(root, "classic_3", "ippo", [1.0])
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (root / "pursuit" / "classic_3" / "ippo").symlink_to(outside)

    result = migrate(root)

    assert 1 == result.returncode
    assert "refused" in result.stderr and "outside --root" in result.stderr
    assert [] == list(outside.iterdir())


def test_a_symlink_inside_root_is_followed(tmp_path: Path) -> None:
    real = old_export(tmp_path, "classic_3", "real_ippo", [1.0])
    (real.parent / "ippo").symlink_to(real)

    result = migrate(tmp_path)

    assert 0 == result.returncode, result.stderr
    assert (tmp_path / "pursuit" / "classic_3" / "ippo" / "timings.json").is_file()


def test_a_corrupt_source_fails_alone(tmp_path: Path) -> None:
    bad = old_export(tmp_path, "classic_3", "ippo", [1.0])
    (bad / "timings.json").write_text("{oops")
    old_export(tmp_path, "classic_3", "iql", [1.0])

    result = migrate(tmp_path)

    assert 1 == result.returncode
    [line] = result.stderr.splitlines()
    assert f"{bad / 'timings.json'}: does not parse as JSON" in line
    assert not (tmp_path / "pursuit" / "classic_3" / "ippo").exists()
    assert (tmp_path / "pursuit" / "classic_3" / "iql" / "timings.json").exists()


def test_a_corrupt_destination_is_left_untouched(tmp_path: Path) -> None:
    old_export(tmp_path, "classic_3", "ippo", [1.0])
    target = tmp_path / "pursuit" / "classic_3" / "ippo"
    target.mkdir(parents=True)
    (target / "timings.json").write_text("[1, 2")

    result = migrate(tmp_path)

    assert 1 == result.returncode
    assert "[1, 2" == (target / "timings.json").read_text()


@pytest.mark.parametrize(
    ("source", "destination", "message"),
    [
        ("pursuit/{scenario}/algorithms/{algo}", "pursuit/{algo}",
         "{scenario} appears in --from but not in --to"),
        ("pursuit/{algo}", "pursuit/{scenario}/{algo}",
         "{scenario} appears in --to but not in --from"),
        ("../pursuit/{algo}", "pursuit/{algo}/new", "'..'"),
        ("pursuit/{algo}", "pursuit/../../{algo}", "'..'"),
        ("/abs/{algo}", "pursuit/{algo}", "must be relative to --root"),
        ("pursuit/{1algo}", "pursuit/x/{1algo}", "not a valid placeholder"),
        ("pursuit/{algo", "pursuit/x/{algo}", "unbalanced brace"),
        ("pursuit/algo}", "pursuit/x", "unbalanced brace"),
        ("pursuit/a{b{algo}", "pursuit/x/{algo}", "unbalanced brace"),
        ("pursuit/{algo}/{algo}", "x/{algo}", "uses {algo} twice"),
        ("pursuit/{algo}", "pursuit/{algo}/", "the same template"),
        ("", "pursuit", "--from is empty"),
    ],
)
def test_bad_templates_are_usage_errors(
    tmp_path: Path, source: str, destination: str, message: str
) -> None:
    result = migrate(tmp_path, source=source, destination=destination)

    assert 2 == result.returncode
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert [] == list(tmp_path.iterdir())


def test_a_missing_root_exits_1(tmp_path: Path) -> None:
    result = migrate(tmp_path / "nowhere")

    assert 1 == result.returncode
    assert [f"stagetimer migrate: --root {tmp_path / 'nowhere'}: no such directory"] == (
        result.stderr.splitlines()
    )


def test_literal_text_around_a_placeholder_is_matched(tmp_path: Path) -> None:
    rec = Recorder(tmp_path / "old" / "run-ippo")
    record_timing("ippo_train", 1.0, run_idx=0, recorder=rec)

    result = migrate(tmp_path, source="old/run-{algo}", destination="new/{algo}")

    assert 0 == result.returncode, result.stderr
    assert os.path.isfile(tmp_path / "new" / "ippo" / "timings.json")


def legacy_export(root: Path, scenario: str, algo: str) -> Path:
    """A directory written before the hardware sidecar existed: timings.json only."""
    directory = root / "pursuit" / scenario / "algorithms" / algo
    directory.mkdir(parents=True)
    (directory / "timings.json").write_text(json.dumps(
        {"system_ram_gb": 64, f"{algo}_train": {"total_seconds": 1.0, "runs": [{"seconds": 1.0}]}}
    ))
    return directory


def sidecar_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("timings"))


def test_a_source_without_hardware_sidecar_leaves_no_hardware_lock(tmp_path: Path) -> None:
    legacy_export(tmp_path, "classic_3", "ippo")

    outcomes = run_migrate(str(tmp_path), OLD, NEW)

    assert ["copied"] == [o.action for o in outcomes]
    assert ["timings.json", "timings.json.lock"] == sidecar_files(
        tmp_path / "pursuit" / "classic_3" / "ippo"
    )


def test_a_merge_that_adds_no_hardware_entry_takes_no_hardware_lock(tmp_path: Path) -> None:
    legacy_export(tmp_path, "classic_3", "ippo")
    target = tmp_path / "pursuit" / "classic_3" / "ippo"
    target.mkdir(parents=True)
    (target / "timings.json").write_text(json.dumps(
        {"alpharank": {"total_seconds": 2.0, "runs": [{"seconds": 2.0}]}}
    ))

    outcomes = run_migrate(str(tmp_path), OLD, NEW)

    assert ["merged"] == [o.action for o in outcomes]
    assert ["timings.json", "timings.json.lock"] == sidecar_files(target)
