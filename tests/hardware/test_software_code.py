"""The code a run ran: commit, dirty state and diff of real git work trees, and a git that
is missing, hangs or fails."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.git_repo import git, make_repo

from stagetimer.software import CodeInfo, capture_software

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

def code_of(path: Path, timeout: float = 10.0) -> tuple[CodeInfo | None, str]:
    software = capture_software(entry=str(path), timeout=timeout)
    return software.code, software.sources["code"]


def test_a_clean_work_tree_gives_its_commit_and_not_dirty(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")

    code, where = code_of(repo)

    assert CodeInfo(git(repo, "rev-parse", "HEAD"), False, None) == code
    assert "git rev-parse HEAD" in where


def test_the_entry_file_names_its_work_tree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"src/exp/train.py": "x = 1\n"})

    code, _ = code_of(repo / "src" / "exp" / "train.py")

    assert code is not None and code.commit == git(repo, "rev-parse", "HEAD")


def test_an_edit_of_a_tracked_file_is_dirty_with_the_hash_of_its_diff(tmp_path: Path) -> None:
    import hashlib

    repo = make_repo(tmp_path / "repo")
    (repo / "train.py").write_text("print('changed')\n")

    code, _ = code_of(repo)

    diff = subprocess.run(
        ["git", "diff-index", "-p", "HEAD", "--binary", "--full-index"],
        cwd=repo, capture_output=True, check=True,
    ).stdout
    assert (True, hashlib.sha256(diff).hexdigest()) == (code.dirty, code.diff_sha256)  # type: ignore[union-attr]


def test_two_different_edits_of_one_commit_have_different_hashes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "train.py").write_text("print('one')\n")
    first, _ = code_of(repo)
    (repo / "train.py").write_text("print('two')\n")
    second, _ = code_of(repo)

    assert first is not None and second is not None
    assert (first.commit, first.dirty) == (second.commit, second.dirty)
    assert first.diff_sha256 != second.diff_sha256


def test_a_staged_edit_is_dirty_and_an_untracked_file_is_not(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "notes.txt").write_text("untracked\n")
    untracked, _ = code_of(repo)
    (repo / "train.py").write_text("print('staged')\n")
    git(repo, "add", "train.py")
    staged, _ = code_of(repo)

    assert (False, True) == (untracked.dirty, staged.dirty)  # type: ignore[union-attr]


def test_the_hash_does_not_depend_on_the_user_s_diff_configuration(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.py": "a = 1\n", "b.py": "b = 2\n"})
    (repo / "a.py").write_text("a = 10\n")
    plain, _ = code_of(repo)
    for key, value in (("diff.noprefix", "true"), ("diff.algorithm", "histogram"),
                       ("diff.context", "10"), ("color.diff", "always"),
                       ("diff.mnemonicPrefix", "true")):
        git(repo, "config", key, value)
    configured, _ = code_of(repo)

    assert plain == configured


def test_a_detached_head_gives_the_commit_checked_out(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    first = git(repo, "rev-parse", "HEAD")
    (repo / "train.py").write_text("print('second')\n")
    git(repo, "commit", "-q", "-am", "second")
    git(repo, "checkout", "-q", "--detach", first)

    code, _ = code_of(repo)

    assert CodeInfo(first, False, None) == code


def test_a_linked_worktree_gives_its_own_commit_and_edits(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    main_commit = git(repo, "rev-parse", "HEAD")
    git(repo, "worktree", "add", "-q", "-b", "feature", str(tmp_path / "feature"))
    feature = tmp_path / "feature"
    (feature / "train.py").write_text("print('feature')\n")
    git(feature, "commit", "-q", "-am", "feature")
    (feature / "train.py").write_text("print('feature, edited')\n")

    code, _ = code_of(feature)
    main_code, _ = code_of(repo)

    assert code is not None and code.commit == git(feature, "rev-parse", "HEAD")
    assert (True, CodeInfo(main_commit, False, None)) == (code.dirty, main_code)


def test_a_submodule_s_own_work_tree_and_the_superproject_s_view_of_it(tmp_path: Path) -> None:
    library = make_repo(tmp_path / "library", {"lib.py": "x = 1\n"})
    outer = make_repo(tmp_path / "outer")
    git(outer, "submodule", "add", "-q", str(library), "lib")
    git(outer, "commit", "-q", "-m", "add the library")
    clean, _ = code_of(outer)
    (outer / "lib" / "lib.py").write_text("x = 2\n")  # an edit inside the submodule

    inside, _ = code_of(outer / "lib" / "lib.py")
    outside, _ = code_of(outer)

    assert clean is not None and not clean.dirty
    # Entry point in the submodule: the submodule's commit, dirty.
    assert (inside.commit, inside.dirty) == (git(outer / "lib", "rev-parse", "HEAD"), True)  # type: ignore[union-attr]
    # Entry point in the superproject: its commit, dirty through the submodule's edit.
    assert (outside.commit, outside.dirty) == (git(outer, "rev-parse", "HEAD"), True)  # type: ignore[union-attr]


def test_outside_a_work_tree_code_is_none_with_the_reason(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()

    code, where = code_of(plain)

    assert (None, True) == (code, where.startswith("not in a git work tree"))


def test_a_repository_without_a_commit_says_so(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")

    code, where = code_of(empty)

    assert (None, True) == (code, "no commit yet" in where)


def test_capturing_never_writes_to_the_repository(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    # Same content, new mtime: a plain `git status` would refresh and rewrite the index.
    later = time.time() + 5
    os.utime(repo / "train.py", (later, later))
    index = repo / ".git" / "index"
    before = (index.stat().st_mtime_ns, index.read_bytes())

    code, _ = code_of(repo)

    assert (False, before) == (code.dirty, (index.stat().st_mtime_ns, index.read_bytes()))  # type: ignore[union-attr]
    assert not (repo / ".git" / "index.lock").exists()


# -- a git that is missing, hangs or fails -------------------------------------------------


def fake_git(directory: Path, body: str) -> Path:
    """A ``git`` executable on a PATH of its own, running the shell ``body``."""
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / "git"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return directory


def test_a_git_that_hangs_gives_none_within_the_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo")
    # It also starts a child that keeps the output pipe open: ending git alone would
    # leave the pipe open and a reader waiting.
    bin_dir = fake_git(tmp_path / "bin", "sleep 60 &\nsleep 60")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")

    started = time.monotonic()
    code, where = code_of(repo, timeout=0.5)
    took = time.monotonic() - started

    assert (None, "git did not answer within 0.5 s") == (code, where.split(";")[0])
    assert took < 5, took


def test_a_git_that_fails_gives_none_and_its_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo")
    bin_dir = fake_git(tmp_path / "bin", "echo 'fatal: index file corrupt' >&2\nexit 128")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")

    code, where = code_of(repo)

    assert code is None
    assert where.startswith("git rev-parse HEAD failed (exit 128): fatal: index file corrupt")


def test_a_git_that_prints_nonsense_gives_no_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo")
    bin_dir = fake_git(tmp_path / "bin", "echo 'not a commit'")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")

    code, where = code_of(repo)

    assert (None, True) == (code, "not a commit" in where)


def test_without_git_on_the_path_code_is_none_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo")
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))

    code, where = code_of(repo)

    assert (None, True) == (code, where.startswith("git is not installed"))


def test_no_path_of_the_work_tree_is_in_the_description(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "train.py").write_text("edited\n")

    software = capture_software(entry=str(repo))

    import json

    assert str(tmp_path) not in json.dumps(software.sources)


SCRIPT = """
import json, sys
from stagetimer.software import capture_software, software_id
sw = capture_software()
print(json.dumps({"id": software_id(sw), "commit": sw.code and sw.code.commit,
                  "where": sw.sources["code"]}))
"""


def test_a_script_describes_the_work_tree_holding_it_from_any_directory(tmp_path: Path) -> None:
    import json

    repo = make_repo(tmp_path / "repo", {"run.py": SCRIPT})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    out = subprocess.run(
        [sys.executable, str(repo / "run.py")], cwd=elsewhere, capture_output=True, text=True,
        check=True, timeout=120,
    ).stdout
    result = json.loads(out)

    assert (git(repo, "rev-parse", "HEAD"), True) == (
        result["commit"], result["where"].endswith("directory: __main__.__file__")
    )


CLI = """
import json
from stagetimer.software import capture_software

def main():
    sw = capture_software()
    print(json.dumps({"commit": sw.code and sw.code.commit, "where": sw.sources["code"]}))
    return 0
"""


def _launcher(bin_dir: Path, spec: str) -> Path:
    """The console script pip installs for the entry point ``spec`` (``name = mod:func``),
    made by the code pip itself runs for it (its vendored distlib ``ScriptMaker``)."""
    from pip._vendor.distlib.scripts import ScriptMaker

    maker = ScriptMaker(None, str(bin_dir))
    maker.executable = sys.executable
    maker.variants = {""}
    [made] = maker.make(spec)
    return Path(made)


def test_a_console_script_describes_the_work_tree_of_the_module_it_runs(
    tmp_path: Path,
) -> None:
    import json

    repo = make_repo(tmp_path / "repo", {"mypkg/__init__.py": "", "mypkg/cli.py": CLI})
    launcher = _launcher(tmp_path / "venv-bin", "mytrain = mypkg.cli:main")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo), *sys.path])}

    out = subprocess.run(
        [str(launcher)], cwd=elsewhere, env=env, capture_output=True, text=True, check=True,
        timeout=120,
    ).stdout
    result = json.loads(out)

    assert git(repo, "rev-parse", "HEAD") == result["commit"]
    assert result["where"].endswith("the module the console script mytrain runs")


def test_a_script_importing_its_main_from_a_package_is_still_described_by_its_own_tree(
    tmp_path: Path,
) -> None:
    # A program's own script may begin with #! and import its entry point too; only a
    # launcher's own line makes it one.
    import json

    library = make_repo(tmp_path / "library", {"mypkg/__init__.py": "", "mypkg/cli.py": CLI})
    script = "#!/usr/bin/env python\nimport sys\nfrom mypkg.cli import main\nsys.exit(main())\n"
    repo = make_repo(tmp_path / "repo", {"run.py": script})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(library), *sys.path])}

    out = subprocess.run(
        [sys.executable, str(repo / "run.py")], cwd=tmp_path, env=env, capture_output=True,
        text=True, check=True, timeout=120,
    ).stdout
    result = json.loads(out)

    assert (git(repo, "rev-parse", "HEAD"), True) == (
        result["commit"], result["where"].endswith("directory: __main__.__file__")
    )


def test_a_program_run_from_a_fifo_is_captured_without_waiting_on_it(tmp_path: Path) -> None:
    # python FIFO: __main__.__file__ names a named pipe. Opening it again to see whether
    # it is a console-script launcher would wait for a writer that never comes.
    import json
    import threading

    repo = make_repo(tmp_path / "repo")
    fifo = tmp_path / "program"
    os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "w") as f:  # returns once python opens the FIFO to read
            f.write(SCRIPT)

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    done = subprocess.run(
        [sys.executable, str(fifo)], cwd=repo, capture_output=True, text=True, timeout=60,
        check=False,
    )
    feeder.join(10)

    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (None, True) == (result["commit"], result["where"].endswith("__main__.__file__"))


def test_python_c_describes_the_working_directory(tmp_path: Path) -> None:
    import json

    repo = make_repo(tmp_path / "repo")

    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=repo, capture_output=True, text=True,
        check=True, timeout=120,
    ).stdout

    assert git(repo, "rev-parse", "HEAD") == json.loads(out)["commit"]


def test_an_interrupted_capture_ends_its_git_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from stagetimer.software import _packages

    repo = make_repo(tmp_path / "repo")
    pids = tmp_path / "pids"
    bin_dir = fake_git(tmp_path / "bin", f"echo $$ >> {pids}\nexec sleep 60")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")

    def interrupted() -> None:
        deadline = time.monotonic() + 10
        while (not pids.exists() or len(pids.read_text().split()) < 2) and (
            time.monotonic() < deadline
        ):
            time.sleep(0.01)
        raise KeyboardInterrupt  # as a signal handler's exception would arrive

    monkeypatch.setattr(_packages, "imported_packages", interrupted)
    with pytest.raises(KeyboardInterrupt):
        capture_software(entry=str(repo))

    started = [int(pid) for pid in pids.read_text().split()]
    alive = []
    for pid in started:
        try:
            os.kill(pid, 0)
            alive.append(pid)
        except ProcessLookupError:
            pass
    assert (2, []) == (len(started), alive)


@pytest.mark.slow
def test_a_repository_of_100000_files_past_the_time_limit_gives_none_in_bounded_time(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "big"
    for i in range(100_000):
        directory = repo / f"d{i // 1000:03d}"
        if i % 1000 == 0:
            directory.mkdir(parents=True)
        (directory / f"f{i:06d}.txt").write_text(f"{i}\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "100,000 files")
    for i in range(0, 100_000, 7):  # touched: stat data changed, git must read them again
        os.utime(repo / f"d{i // 1000:03d}" / f"f{i:06d}.txt", (1, 1))

    started = time.monotonic()
    code, where = code_of(repo, timeout=0.05)
    took = time.monotonic() - started

    assert (None, "git did not answer within 0.05 s") == (code, where.split(";")[0])
    assert took < 2, took
