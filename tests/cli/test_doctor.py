"""``stagetimer.doctor`` and ``stagetimer doctor`` on real mounts and directories.

A bindfs (FUSE) mount, a tmpfs, the root file system, a read-only tmpfs and a directory
its group cannot write; stale claims, rescue files and corrupt sidecars; which protocol
saves use (flock only, or with the claim) and why. The doctor only reads: every test
that can checks that nothing changed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from helpers.bindfs import BindfsUnavailable, bindfs_mounts, unavailable
from helpers.reliability import is_root, remount, tmpfs

import stagetimer
from stagetimer import DirectoryReport, Recorder, doctor, record_timing
from stagetimer._cli import main

needs_root = pytest.mark.skipif(not is_root(), reason="mounting needs root")


def _snapshot(directory: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_mtime_ns, p.stat().st_size) for p in directory.iterdir()}


def _kinds(report: DirectoryReport) -> dict[str, str]:
    return {f.kind: f.severity for f in report.findings}


def test_doctor_and_directory_report_are_public_and_lazy() -> None:
    code = "import sys, stagetimer; print('stagetimer._analysis.doctor' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=tempfile.gettempdir(), timeout=60)
    assert done.stdout.strip() == "False"
    assert stagetimer.doctor is doctor
    assert "doctor" in stagetimer.__all__ and "DirectoryReport" in stagetimer.__all__


@needs_root
@pytest.mark.root
def test_a_bindfs_mount_is_fuse_with_unknown_cross_client_locks(tmp_path: Path) -> None:
    if unavailable():
        pytest.skip(str(unavailable()))
    try:
        with bindfs_mounts(tmp_path, 1) as (backing, (client,)):
            record_timing("train", 1.0, recorder=Recorder(client / "exp", strict=True))
            before = _snapshot(backing / "exp")
            report = doctor(client / "exp")
            assert _snapshot(backing / "exp") == before
    except BindfsUnavailable as error:
        pytest.skip(str(error))
    assert (report.fs_type, report.mount_point, report.mount_source) == (
        "fuse", str(client), str(backing)
    )
    assert report.locks_across_clients == "unknown"
    assert "FUSE" in report.locks_reason
    assert "claim" in report.protocol


@needs_root
@pytest.mark.root
def test_a_tmpfs_is_local_and_its_options_are_shown(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "t", size="1m") as mounted:
        report = doctor(mounted)
    assert (report.fs_type, report.mount_point, report.locks_across_clients) == (
        "tmpfs", str(tmp_path / "t"), "yes"
    )
    assert "size=1024k" in report.mount_options
    assert report.free_bytes is not None and 0 < report.free_bytes <= 1024 * 1024
    assert "low_space" in _kinds(report)  # 1 MiB free: a slow warning


def test_the_root_file_system() -> None:
    report = doctor("/")
    assert report.mount_point == "/"
    assert report.fs_type is not None
    assert report.locks_across_clients in {"yes", "unknown"}


@needs_root
@pytest.mark.root
def test_a_read_only_mount_stops_saves(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "ro") as mounted:
        (mounted / "exp").mkdir()
        remount(mounted, read_only=True)
        report = doctor(mounted / "exp")
        remount(mounted, read_only=False)
    assert _kinds(report)["read_only"] == "stop"
    assert not report.ok


def test_a_directory_its_group_cannot_write_is_named(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    report = doctor(shared)
    assert _kinds(report)["group_cannot_write"] == "note"
    assert "chmod g+ws" in next(f.message for f in report.findings
                                if f.kind == "group_cannot_write")
    shared.chmod(0o2775)
    assert "group_cannot_write" not in _kinds(doctor(shared))


def test_stale_claims_rescue_files_and_corrupt_sidecars_are_found_and_left_alone(
    art: Path,
) -> None:
    record_timing("train", 1.0, recorder=Recorder(art, strict=True))
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import math, sys; from stagetimer._store.locking import claims; "
         f"claims.take({str(art / 'timings_hardware.json')!r}, math.inf, math.inf); "
         "print('held', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=tempfile.gettempdir(),
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        assert "claim_held" in _kinds(doctor(art))
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    (art / "timings.rescue-host-1-x.json").write_text("{}")
    (art / "timings.json").write_text("{")
    before = _snapshot(art)
    report = doctor(art)
    assert _snapshot(art) == before
    kinds = _kinds(report)
    assert (kinds["stale_claim"], kinds["rescue_files"], kinds["corrupt_sidecar"]) == (
        "note", "note", "stop"
    )


def test_the_command_prints_text_and_json_and_exits_1_for_a_missing_dir_or_bad_sidecar(
    art: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record_timing("train", 1.0, recorder=Recorder(art, strict=True))
    assert main(["doctor", str(art)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{art}\n  file system:")
    assert "locks exclude other clients:" in out
    assert main(["doctor", "--json", str(art), str(art / "missing")]) == 1
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert [d["exists"] for d in data["directories"]] == [True, False]
    # Free space moves with every other writer of the disk: compared apart from the rest.
    printed, direct = data["directories"][0], doctor(art).to_dict()
    assert printed.pop("free_bytes") > 0 and direct.pop("free_bytes") > 0
    assert printed == direct
    assert captured.err == f"stagetimer doctor: {art / 'missing'}: no such directory\n"
    (art / "timings_hardware.json").write_text("[]")
    assert main(["doctor", str(art)]) == 1
    assert "saves never overwrite it" in capsys.readouterr().out


def test_json_of_a_directory_named_in_bytes_that_are_not_utf8_is_encodable(
    tmp_path: Path,
) -> None:
    from helpers.cli import run_cli  # a UTF-8 stream that refuses what it cannot encode

    odd = tmp_path / os.fsdecode(b"caf\xe9\x1b[2J")
    odd.mkdir()

    result = run_cli("doctor", "--json", odd)

    assert (0, "") == (result.returncode, result.stderr)
    assert [str(odd)] == [d["path"] for d in json.loads(result.stdout)["directories"]]
    assert "\x1b" not in result.stdout  # no raw terminal control


def test_a_directory_not_yet_made_says_where_the_first_save_creates_it(tmp_path: Path) -> None:
    report = doctor(tmp_path / "a" / "b")
    assert not report.exists
    assert f"creates it under {tmp_path}" in report.findings[0].message
    assert not (tmp_path / "a").exists()


@pytest.mark.skipif(is_root(), reason="root may write anywhere")
def test_a_directory_this_user_cannot_write_stops_saves(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    assert _kinds(doctor(locked))["not_writable"] == "stop"
    os.chmod(locked, 0o755)


def _saves_use(capsys: pytest.CaptureFixture[str], directory: Path) -> str:
    main(["doctor", str(directory)])
    lines = capsys.readouterr().out.splitlines()
    return next(line for line in lines if line.startswith("  saves use:"))


@needs_root
@pytest.mark.root
def test_on_a_tmpfs_saves_use_the_flock_only_and_with_always_the_claim_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("STAGETIMER_CLAIM", raising=False)
    with tmpfs(tmp_path / "t") as mounted:
        auto = doctor(mounted)
        auto_line = _saves_use(capsys, mounted)
        monkeypatch.setenv("STAGETIMER_CLAIM", "always")
        always = doctor(mounted)
        always_line = _saves_use(capsys, mounted)
    assert (auto.protocol, auto.protocol_reason) == (
        "flock only",
        "local file system (tmpfs), no other way in on this host; "
        "STAGETIMER_CLAIM=always to take the claim too",
    )
    assert auto_line == f"  saves use:     flock only: {auto.protocol_reason}"
    assert (always.protocol, always.protocol_reason) == (
        "flock + claim file (O_EXCL, checked before rename)",
        "STAGETIMER_CLAIM=always (auto would take the flock only: local file system "
        "(tmpfs), no other way in on this host)",
    )
    assert always_line == (
        f"  saves use:     flock + claim file (O_EXCL, checked before rename): "
        f"{always.protocol_reason}"
    )


@needs_root
@pytest.mark.root
def test_through_a_bindfs_view_and_on_its_source_saves_take_the_claim(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("STAGETIMER_CLAIM", raising=False)
    if unavailable():
        pytest.skip(str(unavailable()))
    try:
        with bindfs_mounts(tmp_path, 1) as (backing, (client,)):
            through, source = doctor(client), doctor(backing)
    except BindfsUnavailable as error:
        pytest.skip(str(error))
    claimed = "flock + claim file (O_EXCL, checked before rename)"
    assert (through.protocol, through.protocol_reason) == (
        claimed, "exact across clients (fuse)"
    )
    assert source.protocol == claimed
    assert source.protocol_reason == (
        f"exact across clients: this {source.fs_type} directory is also reached through "
        f"the FUSE mount {client} (fuse of {backing}), whose flock is its own"
    )


def test_a_bad_claim_setting_stops_saves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STAGETIMER_CLAIM", "sometimes")
    report = doctor(tmp_path)
    (finding,) = [f for f in report.findings if f.kind == "bad_setting"]
    assert finding.severity == "stop"
    assert "STAGETIMER_CLAIM='sometimes' is not valid" in finding.message
    assert not report.ok


def test_another_host_s_claim_where_saves_take_none_says_to_set_always(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("STAGETIMER_CLAIM", raising=False)
    # What a writer on another host leaves while it saves (its boot id is not ours).
    (tmp_path / "timings.json.claim").write_text(json.dumps({
        "host": "node7", "boot_id": "00000000-0000-0000-0000-000000000000", "pidns": 1,
        "pid": 4242, "start": 1, "token": "4242-ab", "at": 0,
    }))
    report = doctor(tmp_path)
    if report.protocol != "flock only":
        pytest.skip(f"saves take the claim here: {report.protocol_reason}")
    (finding,) = [f for f in report.findings if f.kind == "foreign_claim"]
    assert "pid 4242 on node7" in finding.message
    assert "set STAGETIMER_CLAIM=always for every writer" in finding.message


@pytest.mark.parametrize("kind", ["directory", "fifo", "socket"])
def test_a_non_file_at_a_claims_name_is_named_with_how_to_clear_it_and_stops_saves_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    import socket

    monkeypatch.setenv("STAGETIMER_CLAIM", "always")
    art = tmp_path / "art"
    art.mkdir()
    claim = art / "timings.json.claim"
    if kind == "directory":
        claim.mkdir()
    elif kind == "fifo":
        os.mkfifo(claim)
    else:
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(claim))
        server.close()
    before = _snapshot(art)

    report = doctor(art)
    # Before: no finding for a directory (it read as no claim) nor for a socket; a FIFO
    # was "held by pid None".
    (blocked,) = [f for f in report.findings if f.kind == "blocked_claim"]
    assert blocked.severity == "stop" and "rm" in blocked.message and str(claim) in blocked.message
    assert before == _snapshot(art)

    rec = Recorder(art, lock_timeout=30)
    with pytest.warns(stagetimer.StageTimerWarning, match="not a claim any writer makes"):
        record_timing("train", 1.0, recorder=rec)  # at once, not after 30 s
    assert rec.pending == 1 and claim.exists()


@pytest.mark.parametrize("what", ["file", "fifo", "devnull", "dangling link"])
def test_a_path_that_is_no_directory_is_called_what_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], what: str
) -> None:
    path = tmp_path / what
    if what == "file":
        path.write_text("x")
    elif what == "fifo":
        os.mkfifo(path)
    elif what == "devnull":
        path = Path(os.devnull)
    else:
        path.symlink_to(tmp_path / "nowhere")

    status = main(["doctor", str(path)])
    err = capsys.readouterr().err

    expected = {"file": "is a regular file, not a directory",
                "fifo": "is a FIFO (named pipe), not a directory",
                "devnull": "is a character device, not a directory",
                "dangling link": "no such directory"}[what]
    # Before: "no such directory" for each.
    assert status == 1 and expected in err


def test_a_bad_stale_time_fails_every_save_alike_and_doctor_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STAGETIMER_CLAIM_STALE_SECONDS", "thirty")
    monkeypatch.delenv("STAGETIMER_CLAIM", raising=False)
    art = tmp_path / "art"
    rec = Recorder(art)  # a local disk: saves take no claim
    # Before: ignored here (and on a shared file system every save failed unexplained).
    with pytest.warns(stagetimer.StageTimerWarning, match="STAGETIMER_CLAIM_STALE_SECONDS="):
        record_timing("train", 1.0, recorder=rec)
    assert rec.pending == 1
    (bad,) = [f for f in doctor(art).findings if f.kind == "bad_setting"]
    assert bad.severity == "stop" and "'thirty'" in bad.message


def test_compare_help_prints_one_percent_sign(capsys: pytest.CaptureFixture[str]) -> None:
    main(["compare", "--help"])
    out = capsys.readouterr().out
    assert "%%" not in out and "95 % interval" in " ".join(out.split())
