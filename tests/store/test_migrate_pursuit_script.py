"""``examples/scripts/migrate_pursuit_export_paths.sh``, run from inside ``exports/``, copies
the older Pursuit layout ``gridworlds/pursuit/{scenario}/algorithms/{algo}`` to
``gridworlds/pursuit/{scenario}/{algo}``, where the loader reads it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from stagetimer import Recorder, load_timings, record_timing

SCRIPT = (
    Path(__file__).resolve().parents[2] / "examples" / "scripts"
    / "migrate_pursuit_export_paths.sh"
)


def old_layout(exports: Path) -> None:
    for scenario, algo in (("classic_3", "ippo"), ("classic_3", "iql_cer"), ("open_5", "ippo")):
        rec = Recorder(exports / "gridworlds" / "pursuit" / scenario / "algorithms" / algo)
        record_timing(f"{algo}_train", 1.5, run_idx=0, recorder=rec)


def run_script(exports: Path, *args: str, path: str | None = None
               ) -> subprocess.CompletedProcess[str]:
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": path if path is not None else f"{bin_dir}:/usr/bin:/bin",
           "PYTHON": sys.executable}
    return subprocess.run(["sh", str(SCRIPT), *args], cwd=exports, env=env,
                          capture_output=True, text=True, timeout=60)


def test_script_moves_pursuit_exports_to_the_flat_layout(tmp_path: Path) -> None:
    exports = tmp_path / "exports"
    old_layout(exports)
    pursuit = exports / "gridworlds" / "pursuit"
    assert not (pursuit / "classic_3" / "ippo").exists()  # only the old layout exists

    result = run_script(exports)

    assert 0 == result.returncode, result.stderr
    for scenario, algo in (("classic_3", "ippo"), ("classic_3", "iql_cer"), ("open_5", "ippo")):
        assert [f"{algo}_train"] == list(load_timings(pursuit / scenario / algo).stages)
        assert (pursuit / scenario / "algorithms" / algo / "timings.json").exists()


def test_script_passes_dry_run_through(tmp_path: Path) -> None:
    exports = tmp_path / "exports"
    old_layout(exports)

    result = run_script(exports, "--dry-run")

    assert 0 == result.returncode, result.stderr
    assert "dry run, nothing written: would copy 3" == result.stdout.splitlines()[-1]
    assert not (exports / "gridworlds" / "pursuit" / "classic_3" / "ippo").exists()


def test_script_falls_back_to_python_m_stagetimer(tmp_path: Path) -> None:
    exports = tmp_path / "exports"
    old_layout(exports)

    result = run_script(exports, path="/usr/bin:/bin")

    assert 0 == result.returncode, result.stderr
    assert (exports / "gridworlds" / "pursuit" / "open_5" / "ippo" / "timings.json").exists()


def test_script_outside_exports_says_where_to_run_it(tmp_path: Path) -> None:
    result = run_script(tmp_path)

    assert 1 == result.returncode
    assert "run this from inside exports/" in result.stderr
