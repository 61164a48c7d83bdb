"""The project documents itself: its code, tests, docs and examples cite the project's own
docs/ files or the kernel, Slurm and NVML sources, never a design file that is not in the
repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SEARCHED = ("stagetimer", "tests", "docs", "examples")
TEXT_SUFFIXES = {".py", ".md", ".sh", ".sbatch", ".txt", ".toml", ".cfg", ".ini", ".json", ""}

# Built from pieces, so that this file does not cite what it looks for.
_CONTRACT = "SP" + "EC"
_NOTES = "no" + "tes"
_SHARED = "sha" + "red"
_NOTE_NAMES = ("hardware" + "-facts", "slurm" + "-single-node", "slurm" + "-multi-node")
CITATIONS = re.compile(
    "|".join(
        (
            rf"\b{_CONTRACT}\b",  # the team's contract, alone or as a file name
            rf"{_SHARED}/{_NOTES}\b",  # the folder of its notes
            rf"\b{_NOTES}/[\w.-]+\.md\b",  # one of the notes
            rf"\b(?:{'|'.join(_NOTE_NAMES)})\.md\b",  # a note by its name
        )
    )
)


def project_files() -> list[Path]:
    files = []
    for top in SEARCHED:
        for path in sorted((ROOT / top).rglob("*")):
            if "__pycache__" in path.parts or not path.is_file():
                continue
            if path.suffix in TEXT_SUFFIXES:
                files.append(path)
    return files


def citations(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8", errors="replace")
    return [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for number, line in enumerate(text.splitlines(), 1)
        if CITATIONS.search(line)
    ]


@pytest.mark.parametrize(
    "line",
    [
        "(" + _CONTRACT + " section 4)",
        _CONTRACT + ".md",
        "see ../" + _SHARED + "/" + _NOTES + "/x.md",
        "Facts: ``" + _NOTES + "/" + _NOTE_NAMES[1] + ".md``",
        "(" + _NOTE_NAMES[0] + ".md, NVML table)",
    ],
)
def test_the_pattern_finds_each_form_of_citation(line: str) -> None:
    assert CITATIONS.search(line)


@pytest.mark.parametrize(
    "line",
    ["importlib.util.spec_from_file_location", "SPECIAL", "docs/format.md", "release notes"],
)
def test_the_pattern_leaves_ordinary_words_alone(line: str) -> None:
    assert CITATIONS.search(line) is None


def test_the_search_covers_code_tests_docs_and_examples() -> None:
    tops = {path.relative_to(ROOT).parts[0] for path in project_files()}

    assert set(SEARCHED) == tops


def test_nothing_in_the_project_cites_the_design_contract_or_its_notes() -> None:
    found = [hit for path in project_files() for hit in citations(path)]

    assert [] == found


LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize(
    "page", ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]
)
def test_every_relative_link_of_the_docs_resolves(page: str) -> None:
    path = ROOT / page
    targets = [t for t in LINK.findall(path.read_text(encoding="utf-8")) if "://" not in t]

    assert [] == [t for t in targets if not (path.parent / t).exists()]
