"""The project documents itself: its code, tests, docs and examples cite the project's own
docs/ files or the kernel, Slurm and NVML sources, never a design file that is not in the
repository."""

from __future__ import annotations

import os
import re
import subprocess
import sys
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


# -- the pages' code, their length and the first command ----------------------------------

PAGES = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^(`{3,})(\S*)")
#: The line that marks the next fenced block as an illustration, with the reason.
NOT_RUNNABLE = re.compile(r"^<!-- not runnable: (\S.*?) -->$")
README_WORD_LIMIT = 1_800


def fenced_blocks(page: str) -> list[tuple[int, str, str, str | None]]:
    """Each fenced block of a page: (line, language, code, the not-runnable reason)."""
    blocks = []
    lines = (ROOT / page).read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        previous = next((line for line in reversed(lines[:i]) if line.strip()), "")
        marked = NOT_RUNNABLE.match(previous.strip())
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith(opening[1]))
        code = "\n".join(lines[i + 1 : end]) + "\n"
        blocks.append((i + 1, opening[2], code, marked[1] if marked else None))
        i = end + 1
    return blocks


PYTHON_BLOCKS = [
    pytest.param(code, id=f"{page}:{line}")
    for page in PAGES
    for line, language, code, reason in fenced_blocks(page)
    if language == "python" and reason is None
]


def test_the_pages_hold_python_blocks_that_run() -> None:
    # README alone shows the loop, a pool, a job array and a distributed launch
    assert 4 <= len([p for p in PYTHON_BLOCKS if p.id.startswith("README.md:")])


def test_the_block_parser_sees_marks_languages_and_ends(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- not runnable: needs a GPU -->\n```python\nimport torch\n```\n\n"
        "````python\n```\nx = 1\n````\n```sh\nls\n```\n",
        encoding="utf-8",
    )

    found = fenced_blocks(str(page))  # an absolute path: ROOT / it is itself

    assert [(2, "python", "import torch\n", "needs a GPU"), (6, "python", "```\nx = 1\n", None),
            (10, "sh", "ls\n", None)] == found


@pytest.mark.parametrize("code", PYTHON_BLOCKS)
def test_every_python_block_of_the_docs_runs(code: str, tmp_path: Path) -> None:
    """Each block runs as a script of its own in an empty directory (a file, so that a
    spawn pool can import its functions); blocks that cannot are marked, with why."""
    (tmp_path / "block.py").write_text(code, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("STAGETIMER_")}

    result = subprocess.run([sys.executable, "block.py"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120)

    assert 0 == result.returncode, result.stderr
    assert "Warning" not in result.stderr, result.stderr


def test_every_not_runnable_mark_sits_on_a_python_block() -> None:
    marks = [(page, line, language) for page in PAGES
             for line, language, _, reason in fenced_blocks(page) if reason is not None]

    assert [] == [m for m in marks if m[2] != "python"]


def test_the_readme_is_a_page_a_newcomer_reads() -> None:
    words = len((ROOT / "README.md").read_text(encoding="utf-8").split())

    assert words <= README_WORD_LIMIT


def first_command() -> str:
    """The README's first shell block: the command a newcomer runs first."""
    return next(code for _, language, code, _ in fenced_blocks("README.md")
                if language == "sh").strip()


def per_user_or_in_clone(path: str) -> bool:
    """A path under the clone (relative, not leaving it) or under the user's home."""
    if re.match(r"(~|\$HOME\b|\$\{HOME\})(/|$)", path):
        return True
    if path.startswith("/") or "$" in path:
        return False
    resolved = (ROOT / path).resolve()
    return resolved == ROOT or ROOT in resolved.parents


@pytest.mark.parametrize(
    ("path", "expected"),
    [("examples/out", True), ("out", True), ("~/stagetimer-demo", True),
     ("$HOME/demo", True), ("/tmp/stagetimer-demo", False), ("../demo", False),
     ("$TMPDIR/demo", False), ("examples/../../demo", False)],
)
def test_the_path_rule_tells_a_shared_folder_from_a_users_own(path: str, expected: bool) -> None:
    assert expected == per_user_or_in_clone(path)


def test_the_first_command_writes_under_the_clone_and_reports_what_it_wrote() -> None:
    command = first_command()
    written = re.findall(r"--(?:out|exports)[ =](\S+)", command)
    reported = re.findall(r"stagetimer report (\S+)", command)

    assert (1, 1) == (len(written), len(reported)), command
    assert written == reported
    assert per_user_or_in_clone(written[0]), written[0]
    out = ROOT / written[0]
    assert out.resolve() != ROOT
    ignored = subprocess.run(["git", "check-ignore", "-q", str(out / "x" / "timings.json")],
                             cwd=ROOT, capture_output=True)
    assert 0 == ignored.returncode, f"{written[0]} is not ignored by git"


# -- the API reference names the whole public surface --------------------------------------


def api_page() -> str:
    return (ROOT / "docs" / "api.md").read_text(encoding="utf-8")


def test_the_api_reference_names_every_public_name() -> None:
    import stagetimer
    from stagetimer import stages

    page = api_page()

    names = [*stagetimer.__all__, *stages.__all__]

    assert [] == [n for n in names if f"`{n}" not in page and f"`@{n}" not in page]


def test_the_api_reference_names_every_recorder_parameter() -> None:
    import inspect

    from stagetimer import Recorder

    page = api_page()
    parameters = list(inspect.signature(Recorder).parameters)

    assert [] == [p for p in parameters if f"`{p}`" not in page]


def test_the_api_reference_gives_each_error_its_bases() -> None:
    """The table's row of each error lists its base classes, as the code defines them."""
    import stagetimer

    rows = {row.split("|")[1].strip(" `"): row.split("|")[2]
            for row in api_page().splitlines() if row.startswith("| `")}
    errors = [getattr(stagetimer, n) for n in stagetimer.__all__ if n.endswith("Error")]

    assert {e.__name__: sorted(b.__name__ for b in e.__bases__) for e in errors} == {
        e.__name__: sorted(re.findall(r"`(\w+)`", rows[e.__name__])) for e in errors
    }


def test_the_readme_s_distributed_launch_counts_a_seed_once_as_its_slowest_rank(
    tmp_path: Path,
) -> None:
    # The block as torchrun runs it: one process per rank, RANK and WORLD_SIZE set.
    [code] = [code for line, language, code, _ in fenced_blocks("README.md")
              if language == "python" and 'os.environ.get("RANK"' in code]
    (tmp_path / "block.py").write_text(code, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("STAGETIMER_")}
    for rank in range(2):
        launched = {**env, "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "2"}
        subprocess.run([sys.executable, "block.py"], cwd=tmp_path, env=launched, check=True,
                       timeout=120)

    report = subprocess.run([sys.executable, "-m", "stagetimer", "report", "runs"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, check=True,
                            timeout=120).stdout

    table = report.splitlines()[2].split()
    assert table[:2] == ["train", "1"], report  # one seed, not one run per rank
    assert "ranks: train 1 seed \N{MULTIPLICATION SIGN} 2 ranks" in report, report
