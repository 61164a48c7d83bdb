"""Differential tests of the software probe's and ``_escape``'s fast paths.

Each fast path is compared, on random input from fixed seeds and on the boundary cases
its first test decides, with a plain reference: ``importlib.metadata`` reading the same
environment, plain ``git`` commands run here on real repositories, or a definition
written here:

- packages: the scan of ``.dist-info`` / ``.egg-info`` directories (``top_level.txt``,
  else ``RECORD``; the first install of a distribution wins, its name compared as PEP 503
  compares names, header names in any case, odd ``sys.path`` entries) against
  ``importlib.metadata`` in a child with random site directories; ``record_top_level``'s
  one split per line against a CSV reader;
- ``_which`` against ``shutil.which`` (empty entries, an empty ``PATH``, no ``PATH``);
- git: the commit, dirty state and diff hash against ``git rev-parse`` and ``git diff
  HEAD`` run here (random edits, a detached HEAD, a submodule, a path with spaces, a user
  configuration that changes porcelain output);
- accelerators: cuDNN's encoded versions and the driver file's pattern against a
  plain reading;
- differences: ``software_differences`` against a plain field-by-field comparison;
- ids: ``software_id`` depends on the content only;
- escapes: ``escape_text``'s ``isprintable`` first test against a character-by-character
  reference over every class of code point (C0/C1 controls, bidi overrides, zero-width
  characters, lone surrogates, combining marks).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import random
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from helpers.git_repo import GIT_ENV, git, make_repo

from stagetimer._escape import escape_text
from stagetimer._system.git import which as _which
from stagetimer.hardware import Difference
from stagetimer.software import (
    Software,
    capture_software,
    software_description,
    software_differences,
    software_id,
)
from stagetimer.software._accelerators import _DRIVER, _version_text
from stagetimer.software._packages import normalized_name, record_top_level

# -- packages: against importlib.metadata reading the same directories ------------------

PACKAGES_CHILD = """
import importlib, json, sys
spec = json.loads(sys.argv[1])
sys.path[0:0] = spec["path"]
for name in spec["imports"]:
    importlib.import_module(name)
for name in spec["empty"]:  # a module replaced by an empty mapping (false as a bool)
    sys.modules[name] = type("Settings", (dict,), {})()
from stagetimer.software._packages import imported_packages
# entries the import system passes over (it reads str entries only): never an error
sys.path.extend([b"/usr", None, 5])
ours = imported_packages()[0]
del sys.path[-3:]
import importlib.metadata as metadata
providers = metadata.packages_distributions()
imported = {name.partition(".")[0] for name, module in sys.modules.items() if module is not None}
imported -= {*sys.stdlib_module_names, *sys.builtin_module_names, "__main__", "pynvml"}
wanted = {d for name in imported for d in providers.get(name, ())}
theirs = {metadata.metadata(d)["Name"]: metadata.version(d) for d in wanted}
print(json.dumps([ours, theirs]))
"""


def _spelling(rng: random.Random, words: list[str]) -> str:
    """One of the spellings PEP 503 takes for the same name: Foo_Bar, foo-bar, foo.bar..."""
    name = rng.choice("-_.").join(words)
    return name.upper() if rng.random() < 0.2 else name.title() if rng.random() < 0.3 else name


def _install(rng: random.Random, site: Path, name: str, version: str, module: str) -> None:
    """A distribution ``name`` at ``version`` in ``site`` providing ``module``, laid out
    as one of the installers writes it."""
    package = rng.random() < 0.6
    if package:
        (site / module).mkdir(parents=True, exist_ok=True)
        (site / module / "__init__.py").write_text(f"VERSION = {version!r}\n")
        files = [f"{module}/__init__.py"]
    else:
        site.mkdir(parents=True, exist_ok=True)
        (site / f"{module}.py").write_text(f"VERSION = {version!r}\n")
        files = [f"{module}.py"]
    escaped = normalized_name(name).replace("-", "_")
    egg = rng.random() < 0.2
    meta = site / (f"{escaped}-{version}-py3.egg-info" if egg else f"{escaped}-{version}.dist-info")
    meta.mkdir()
    # Field names are case-insensitive (email headers): "name: x" is the Name.
    key, value = rng.choice([("Name", "Version"), ("name", "version"), ("NAME", "Version")])
    headers = f"Metadata-Version: 2.1\n{key}: {name}\n{value}: {version}\nSummary: x\n\nName: no\n"
    (meta / ("PKG-INFO" if egg else "METADATA")).write_text(headers)
    layout = rng.choice(["top_level", "blank_top_level", "record"])
    if egg or layout == "top_level":
        (meta / "top_level.txt").write_text(f"{module}\n")
    if layout == "blank_top_level" and not egg:
        (meta / "top_level.txt").write_text("\n")
    record = [*files, f"{meta.name}/METADATA", "../../bin/tool", f"{module}-extra.data/x"]
    rng.shuffle(record)
    (meta / ("SOURCES.txt" if egg else "RECORD")).write_text(
        "".join(f"{path},sha256=abc,1\n" for path in record)
    )


@pytest.mark.skipif(
    sys.version_info < (3, 11),
    reason="before 3.11 importlib.metadata.packages_distributions() reads top_level.txt only",
)
@pytest.mark.parametrize("seed", range(3))
def test_the_packages_are_those_importlib_metadata_reads(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    sites = [tmp_path / f"site {i}" for i in range(3)]  # a path with a space
    imports: list[str] = []
    for i in range(12):
        words, module = [f"fp{seed}", rng.choice(["tool", "kit", "core"]), str(i)], f"fp{seed}m{i}"
        installs = rng.sample(sites, rng.choice([1, 1, 2, 3]))  # the same one twice: shadowed
        for site in installs:
            _install(rng, site, _spelling(rng, words), f"{rng.randrange(1, 9)}.{i}", module)
        if rng.random() < 0.7:
            imports.append(module)
    spec = {"path": [str(s) for s in sites], "imports": imports, "empty": [f"fp{seed}m0"]}

    done = subprocess.run(
        [sys.executable, "-c", PACKAGES_CHILD, json.dumps(spec)], cwd=tmp_path,
        capture_output=True, text=True, timeout=60, check=True,
    )
    ours, theirs = json.loads(done.stdout)

    assert theirs == ours


def test_normalized_names_are_pep_503_s() -> None:
    rng = random.Random(7)
    for _ in range(2000):
        name = "".join(rng.choice("aB9-_.") for _ in range(rng.randrange(1, 12)))
        plain, after_separator = "", False
        for char in name.lower():  # PEP 503: re.sub(r"[-_.]+", "-", name).lower(), by hand
            separator = char in "-_."
            plain += "" if separator and after_separator else "-" if separator else char
            after_separator = separator
        assert plain == normalized_name(name), name


def _record_reference(record: str) -> set[str]:
    """Top-level modules of a RECORD read with the csv module, row by row: a directory, or
    a file whose name is a module's name and a suffix Python imports (``x.y.py`` is no
    top-level module; an extension's suffix holds its ABI tag)."""
    names: set[str] = set()
    for row in csv.reader(io.StringIO(record)):
        if not row:
            continue
        parts = row[0].split("/")
        if len(parts) > 1:
            top = parts[0]
            if top and not top.startswith(".") and top != "__pycache__":
                names.add(top)
        elif parts[0].endswith(".py") and "." not in parts[0][:-3]:
            names.add(parts[0][:-3])
        elif parts[0].endswith((".so", ".pyd")):
            names.add(parts[0].partition(".")[0])
    return names - {""}


def test_record_top_level_is_a_csv_reading() -> None:
    rng = random.Random(11)
    pieces = ["numpy", "six", "odd,name", "a b", "_cffi", "é", "__pycache__", ".libs", "..",
              "pkg-1.0.dist-info", "pkg-1.0.data", "x.y"]
    suffixes = [".py", ".so", ".cpython-311-x86_64-linux-gnu.so", ".pyd", ".pyi", ".txt", ""]
    for _ in range(300):
        rows = []
        for _ in range(rng.randrange(0, 12)):
            depth = rng.randrange(1, 4)
            path = "/".join(rng.choice(pieces) for _ in range(depth)) + rng.choice(suffixes)
            rows.append([path, rng.choice(["", "sha256=ab_-c"]), rng.choice(["", "12"])])
        out = io.StringIO()
        csv.writer(out, lineterminator=rng.choice(["\n", "\r\n"])).writerows(rows)
        # the names an import can ask for: none holds a dot
        ours = {name for name in record_top_level(out.getvalue()) if "." not in name}
        theirs = {name for name in _record_reference(out.getvalue()) if "." not in name}
        assert theirs == ours, rows


def test_git_is_found_on_the_path_as_shutil_which_finds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bins = [tmp_path / name for name in ("bin a", "bin b", "empty")]
    for where in bins[:2]:
        where.mkdir()
    (bins[0] / "tool").write_text("#!/bin/sh\n")  # not executable
    (bins[1] / "tool").write_text("#!/bin/sh\n")
    (bins[1] / "tool").chmod(0o755)
    (bins[0] / "dir").mkdir()
    (tmp_path / "tool").write_text("#!/bin/sh\n")
    (tmp_path / "tool").chmod(0o755)
    monkeypatch.chdir(tmp_path)
    rng = random.Random(37)
    entries = [*map(str, bins), "", ".", "bin b", "/nonexistent", str(tmp_path)]
    values = ["", ":", "::", None] + [
        ":".join(rng.choice(entries) for _ in range(rng.randrange(1, 5))) for _ in range(200)
    ]
    for value in values:
        if value is None:
            monkeypatch.delenv("PATH")
        else:
            monkeypatch.setenv("PATH", value)
        for name in ("tool", "dir", "missing"):
            found = shutil.which(name)
            # absolute: git runs in the work tree, where a relative path names another file
            assert (os.path.abspath(found) if found else None) == _which(name), (value, name)


# -- git: against plain git commands -------------------------------------------------------

DIFF_OPTIONS = ("--no-ext-diff", "--no-textconv", "--no-color", "--binary", "--full-index",
                "--no-renames", "--src-prefix=a/", "--dst-prefix=b/", "--unified=3",
                "--diff-algorithm=myers", "--indent-heuristic", "--submodule=short")


def _plain(repo: Path) -> tuple[str, bool, str | None]:
    """The commit, the dirty state and the diff's hash from porcelain git, no user config."""
    commit = git(repo, "rev-parse", "HEAD")
    env = {**os.environ, **GIT_ENV, "LC_ALL": "C"}
    patch = subprocess.run(
        ["git", "-c", "core.quotePath=true", "diff", "HEAD", *DIFF_OPTIONS, "--"], cwd=repo,
        env=env, capture_output=True, check=True, timeout=60,
    ).stdout
    return commit, bool(patch), hashlib.sha256(patch).hexdigest() if patch else None


def _captured(repo: Path) -> tuple[str, bool, str | None]:
    code = capture_software(entry=str(repo), timeout=30).code
    assert code is not None
    assert code.commit is not None and code.dirty is not None
    return code.commit, code.dirty, code.diff_sha256


def _random_edit(rng: random.Random, repo: Path, names: list[str]) -> None:
    name = rng.choice(names)
    path = repo / name
    action = rng.choice(["append", "touch", "rewrite_same", "delete", "stage", "chmod", "crlf",
                         "binary", "intent_to_add", "symlink", "assume_unchanged"])
    if action == "append":
        path.write_text(path.read_text() + f"line {rng.random()}\n")
    elif action == "touch":
        os.utime(path, (1e9 + rng.random(), 1e9 + rng.random()))
    elif action == "rewrite_same":
        path.write_bytes(path.read_bytes())
    elif action == "delete":
        path.unlink()
        names.remove(name)
    elif action == "stage":
        before = path.read_bytes()
        path.write_text("staged\n")
        git(repo, "add", name)
        if rng.random() < 0.5:  # then undone in the work tree: as it was again
            path.write_bytes(before)
    elif action == "chmod":
        path.chmod(0o755)
    elif action == "binary":
        path.write_bytes(bytes(rng.randrange(256) for _ in range(300)))
        names.remove(name)  # no more text edits
    elif action == "intent_to_add":
        new = repo / f"new {rng.randrange(1000)}.py"
        new.write_text("x = 1\n")
        git(repo, "add", "-N", new.name)
    elif action == "symlink":
        path.unlink()
        path.symlink_to("elsewhere")
        names.remove(name)
    elif action == "assume_unchanged":
        git(repo, "update-index", "--assume-unchanged", name)
        path.write_text(path.read_text() + "hidden\n")
    else:
        path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))


def _start_files(rng: random.Random) -> dict[str, str]:
    names = ["train.py", "dir with space/é.py", "data/\tweird.txt", "b.py"]
    return {
        name: "".join(f"def f{i}():\n    return {i}\n\n" for i in range(rng.randrange(1, 30)))
        for name in names
    }


@pytest.mark.parametrize("seed", range(6))
def test_the_code_is_what_plain_git_says(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    files = _start_files(rng)
    repo = make_repo(tmp_path / "the repo", files)
    names = list(files)
    for step in range(5):
        if step == 3 and seed % 2:  # a detached HEAD
            git(repo, "commit", "-q", "-am", "more", "--allow-empty")
            git(repo, "checkout", "-q", "--detach", "HEAD~1")
        for _ in range(rng.randrange(0, 4)):
            if names:
                _random_edit(rng, repo, names)
        ours = _captured(repo)
        assert _plain(repo) == ours, (seed, step)


def test_a_submodule_s_states_are_what_plain_git_says(tmp_path: Path) -> None:
    inner = make_repo(tmp_path / "inner lib", {"lib.py": "x = 1\n"})
    outer = make_repo(tmp_path / "outer", {"main.py": "y = 2\n"})
    git(outer, "submodule", "add", "-q", str(inner), "lib")
    git(outer, "commit", "-q", "-m", "submodule")
    states = []
    for change in ("none", "edit inside", "new commit inside"):
        if change == "edit inside":
            (outer / "lib" / "lib.py").write_text("x = 2\n")
        if change == "new commit inside":
            git(outer / "lib", "commit", "-q", "-am", "inner")
        states.append((_captured(outer), _plain(outer)))
    assert [plain for _, plain in states] == [ours for ours, _ in states]


def test_the_hash_does_not_depend_on_quoting_heuristics_or_the_user_s_attributes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo", {
        "é.py": "".join(f"def f{i}():\n    return {i}\n\n" for i in range(20)),
    })
    text = (repo / "é.py").read_text()
    (repo / "é.py").write_text(text.replace("return 5\n", "return 5\n\ndef g():\n    pass\n"))
    plain = _plain(repo)
    home = tmp_path / "home"
    (home / ".config" / "git").mkdir(parents=True)
    (home / ".config" / "git" / "attributes").write_text("*.py diff=python\n")
    (home / ".gitconfig").write_text(
        "[core]\n\tquotePath = false\n[diff]\n\tindentHeuristic = false\n"
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)

    assert plain == _captured(repo)


# -- accelerators ---------------------------------------------------------------------------


def test_cudnn_and_nccl_versions_read_as_their_headers_define_them() -> None:
    rng = random.Random(3)
    for _ in range(3000):
        major = rng.randrange(1, 13)
        minor, patch = rng.randrange(0, 10), rng.randrange(0, 100)
        # cudnn.h: CUDNN_VERSION = MAJOR * 1000 + MINOR * 100 + PATCH before 9,
        # MAJOR * 10000 + MINOR * 100 + PATCH from 9 on.
        value = major * (10000 if major >= 9 else 1000) + minor * 100 + patch
        assert f"{major}.{minor}.{patch}" == _version_text(value), value
        nccl = tuple(rng.randrange(0, 40) for _ in range(rng.randrange(1, 4)))
        assert ".".join(map(str, nccl)) == _version_text(nccl)
    assert (None, None, None) == (_version_text(True), _version_text("2.1"), _version_text(None))


def test_the_driver_version_is_the_kernel_module_s() -> None:
    rng = random.Random(5)
    for _ in range(500):
        version = ".".join(str(rng.randrange(0, 600)) for _ in range(rng.randrange(2, 4)))
        kind = rng.choice(["NVIDIA UNIX x86_64 Kernel Module", "NVIDIA UNIX Open Kernel Module "
                           "for x86_64", "NVIDIA UNIX Open Kernel Module for aarch64"])
        text = f"NVRM version: {kind}  {version}  Tue Mar  5 22:08:29 UTC 2024\nGCC version:\n"
        found = _DRIVER.search(text)
        assert found is not None and version == found.group(1), text


# -- differences and ids ----------------------------------------------------------------------


def _random_description(rng: random.Random) -> dict[str, Any]:
    def maybe(*values: Any) -> Any:
        return rng.choice(values)

    description: dict[str, Any] = {}
    if rng.random() < 0.9:
        description["python"] = maybe("CPython 3.11.7", "CPython 3.12.1", None)
    if rng.random() < 0.9:
        description["code"] = maybe(
            None, {}, {"commit": maybe("a" * 40, "b" * 40, None), "dirty": maybe(True, False, None),
                       "diff_sha256": maybe(None, "c" * 64, "d" * 64)},
        )
    for group, names in (("packages", ["torch", "numpy", "Foo_Bar"]),
                         ("accelerators", ["cuda", "cudnn"])):
        if rng.random() < 0.9:
            chosen = [name for name in names if rng.random() < 0.6]
            description[group] = {name: maybe("1.0", "2.0", "1.0 ") for name in chosen}
    description["sources"] = {"python": str(rng.random())}
    return description


def _plain_differences(base: dict[str, Any], new: dict[str, Any]) -> list[Difference]:
    found = []
    base_code, new_code = base.get("code") or {}, new.get("code") or {}
    for name in ("commit", "dirty", "diff_sha256"):
        if base_code.get(name) != new_code.get(name):
            found.append(Difference(f"code.{name}", base_code.get(name), new_code.get(name)))
    if base.get("python") != new.get("python"):
        found.append(Difference("python", base.get("python"), new.get("python")))
    for group in ("packages", "accelerators"):
        left, right = base.get(group) or {}, new.get(group) or {}
        for name in sorted({*left, *right}):
            if left.get(name) != right.get(name):
                found.append(Difference(f"{group}.{name}", left.get(name), right.get(name)))
    return found


def test_the_differences_are_a_field_by_field_comparison() -> None:
    rng = random.Random(13)
    for _ in range(2000):
        base, new = _random_description(rng), _random_description(rng)
        assert _plain_differences(base, new) == software_differences(base, new)
        assert [] == software_differences(base, json.loads(json.dumps(base)))


def test_the_software_id_depends_on_the_content_only(tmp_path: Path) -> None:
    rng = random.Random(17)
    seen: dict[str, str] = {}
    for _ in range(1000):
        description = _random_description(rng)
        canonical = json.dumps(description, sort_keys=True)
        shuffled = dict(rng.sample(list(description.items()), len(description)))
        ids = {software_id(description), software_id(shuffled),
               software_id(json.loads(canonical))}
        assert 1 == len(ids), description
        identifier = ids.pop()
        assert seen.setdefault(identifier, canonical) == canonical  # no two contents, one id
    # A capture with code (a repository of its own: the test's own checkout may have none,
    # or hold the environment), as an object, its description, that read back from JSON,
    # and an object whose parts are those plain mappings: one content, one id.
    live = capture_software(entry=str(make_repo(tmp_path / "repo", {"main.py": "x = 1\n"})))
    assert live.code is not None
    stored = json.loads(json.dumps(software_description(live)))
    copy = Software(**stored)
    assert copy.code == stored["code"] != live.code  # a mapping, not the CodeInfo
    assert len({software_id(live), software_id(software_description(live)),
                software_id(stored), software_id(copy)}) == 1


# -- escape_text: against a character-by-character reference ---------------------------------


def _reference_escape(text: str) -> str:
    out = []
    for char in text:
        category = unicodedata.category(char)
        # Printable: not a control, format, surrogate, private, unassigned or separator,
        # except the space itself (str.isprintable's definition, by category).
        if char == " " or category[0] not in "CZ":
            out.append(char)
        else:
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
    return "".join(out)


CLASSES = {
    "c0": [chr(c) for c in range(0x20)] + ["\x7f"],
    "c1": [chr(c) for c in range(0x80, 0xA0)],
    "bidi": [chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F,
                              0x061C)],
    "zero_width": ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u180e"],
    "surrogates": ["\ud800", "\udbff", "\udc00", "\udcff", "\udfff"],
    "combining": ["\u0301", "\u0308", "\u20dd", "\ufe0f", "\U000e0100"],
    "separators": ["\u00a0", "\u1680", "\u2028", "\u2029", "\u3000", "\u2003"],
    "ascii": [chr(c) for c in range(0x20, 0x7F)],
    "wide": ["é", "丁", "\U0001f600", "\U00010000", "\U000e0001", "\U0010ffff", "\ue000"],
}


def test_every_code_point_escapes_as_the_reference_says() -> None:
    for start in range(0, 0x110000, 0x1000):
        block = "".join(map(chr, range(start, start + 0x1000)))
        assert _reference_escape(block) == escape_text(block), hex(start)


def test_escape_text_mixes_every_class_as_the_reference_does() -> None:
    rng = random.Random(19)
    pool = [char for chars in CLASSES.values() for char in chars]
    for _ in range(5000):
        classes = rng.sample(list(CLASSES), rng.randrange(1, 4))
        text = "".join(rng.choice(CLASSES[rng.choice(classes)] if rng.random() < 0.8 else pool)
                       for _ in range(rng.randrange(0, 12)))
        escaped = escape_text(text)
        assert _reference_escape(text) == escaped, ascii(text)
        assert escaped == escape_text(escaped)  # already escaped text stays as it is
        assert escaped.isprintable()
