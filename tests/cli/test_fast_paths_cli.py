"""Differential tests of the command line's argument checks against plain definitions.

Every value of ``--threshold``, ``--fail-if-slower``, ``--levels`` and ``--stages`` is
either taken with its documented meaning (a percentage as Python reads a number, finite
and >= 0; names separated by commas, none empty, each level's once) or refused with exit
status 2, the usage and one error line, never a traceback. Random values from fixed seeds
and the boundary cases the checks decide (-0, inf, nan, huge and tiny numbers, signs,
underscores, non-ASCII digits, control characters, empty and repeated names) are
compared with references written here, through the parser and through ``main``.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import random
from pathlib import Path

import pytest
from helpers.cli import Ran, run_cli
from helpers.trees import write_artifact

from stagetimer._cli.parser import build_parser

# -- the references ----------------------------------------------------------------------


def _percent_reference(text: str) -> float | None:
    """The documented meaning of PCT: a number as Python reads it, finite and >= 0; None
    where it is refused. -0 is 0."""
    try:
        value = float(text)
    except ValueError:
        return None
    return abs(value) if 0.0 <= value < math.inf else None


def _names_reference(text: str, *, each_once: bool) -> list[str] | None:
    names = text.split(",")
    if "" in names or (each_once and len(set(names)) != len(names)):
        return None
    return names


def _parsed(*argv: str) -> tuple[object, str]:
    """``build_parser().parse_args(argv)``'s namespace, or its exit status; stderr."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            result: object = build_parser().parse_args(argv)
        except SystemExit as done:
            result = done.code
    return result, err.getvalue()


def _one_usage_error(status: object, stderr: str, command: str) -> None:
    """Exit status 2; the usage, then one line saying what is wrong; no traceback."""
    lines = stderr.splitlines()
    assert status == 2, stderr
    assert "Traceback" not in stderr
    assert lines[-1].startswith(f"stagetimer {command}: error: "), stderr
    assert [line for line in lines if "error:" in line] == [lines[-1]]
    assert lines[0].startswith("usage: stagetimer ")
    assert all(line.startswith(" ") for line in lines[1:-1]), stderr


# -- --threshold and --fail-if-slower ------------------------------------------------------

BOUNDARY_PERCENTS = [
    "0", "-0", "+0", "0.0", "-0.0", "00", "2", "0.5", ".5", "5.", "1e308", "1.7976931348623157e308",
    "1e309", "1e-400", "5e-324", "-5e-324", "-1", "inf", "-inf", "Infinity", "nan", "-nan", "NaN",
    "1_000", "1__0", "_1", "٣", "\uff15", "¹", " 5 ", "\t5\n", "5%", "0x10", "1/2", "", " ", "True",
    "\x1b[2J", "\u202e5", "\udcff", "1" * 400, "9" * 5000, "0." + "0" * 400 + "1",
]


def _random_percent(rng: random.Random) -> str:
    kind = rng.randrange(6)
    if kind == 0:
        return repr(rng.uniform(-10, 200))
    if kind == 1:
        return f"{rng.uniform(0, 100):.{rng.randrange(0, 8)}{rng.choice('efgE')}}"
    if kind == 2:
        return str(rng.randrange(-5, 10**rng.randrange(1, 30)))
    if kind == 3:
        return repr(rng.choice([0.0, -0.0, math.inf, -math.inf, math.nan, 1e-320, 1.8e308]))
    if kind == 4:
        return "".join(rng.choice("0123456789.eE+-_ inf") for _ in range(rng.randrange(0, 7)))
    return rng.choice(BOUNDARY_PERCENTS) + rng.choice(["", "", " ", "0", "x"])


@pytest.mark.parametrize("option", ["--threshold", "--fail-if-slower"])
def test_a_percentage_is_taken_as_python_reads_it_or_refused(option: str) -> None:
    rng = random.Random(23)
    values = BOUNDARY_PERCENTS + [_random_percent(rng) for _ in range(600)]
    attribute = option[2:].replace("-", "_")
    for text in values:
        # "--opt=VALUE": a value starting with "-" is the value, not another option
        result, stderr = _parsed("compare", f"{option}={text}", "base", "new")
        expected = _percent_reference(text)
        if expected is None:
            _one_usage_error(result, stderr, "compare")
            assert repr(text)[:40] in stderr, text
            continue
        assert not isinstance(result, int), (text, stderr)  # parsed, not an exit status
        value = getattr(result, attribute)
        assert (expected, 1.0) == (value, math.copysign(1.0, value)), text


@pytest.mark.parametrize("text", ["-1", "-1e5", "-nan", "-inf", "-x", "--json"])
def test_a_value_that_looks_like_an_option_is_a_usage_error(text: str) -> None:
    for option in ("--threshold", "--fail-if-slower"):
        _one_usage_error(*_parsed("compare", option, text, "base", "new"), "compare")


@pytest.fixture(scope="module")
def sides(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("sides")
    base = write_artifact(root / "base", {"train": [1.0, 1.01, 0.99, 1.0]})
    new = write_artifact(root / "new", {"train": [1.5, 1.51, 1.49, 1.5]})
    return base, new


def test_main_takes_each_percentage_with_its_meaning_or_exits_2(sides: tuple[Path, Path]) -> None:
    base, new = sides
    for text in ["-0", "0", "2", "1_000", "٣", " 5 ", "1e308", "1e-400", "nan", "inf", "5%",
                 "-1e5", "\x1b[2J", "1" * 400]:
        expected = _percent_reference(text)
        ran = run_cli("compare", "--json", "--threshold", text, base, new)
        gate = run_cli("compare", "--fail-if-slower", text, base, new)
        if expected is None:
            for done in (ran, gate):
                _one_usage_error(done.returncode, done.stderr, "compare")
                assert "" == done.stdout
            continue
        assert (0, expected / 100, "-0.0" in ran.stdout) == (
            ran.returncode, json.loads(ran.stdout)["threshold"], False
        ), text
        # train is 1.5x the base's time: slower by 50 %, a regression below that gate
        assert (3 if expected < 50 else 0) == gate.returncode, text
        assert ("-0 %" in gate.stderr, "Traceback" in gate.stderr) == (False, False)


# -- --levels and --stages -------------------------------------------------------------------

NAME_POOL = ["env", "algo", "seed", "a b", "é", "丁", "x\x1by", "\u202eevil", " ", "-", "|",
             "train", "eval", "total", "", ",", ",,", "directory"]


def _random_names(rng: random.Random) -> str:
    return ",".join(rng.choice(NAME_POOL) for _ in range(rng.randrange(1, 5)))


@pytest.mark.parametrize(("option", "each_once"), [("--levels", True), ("--stages", False)])
def test_names_are_split_on_commas_or_refused(option: str, each_once: bool) -> None:
    rng = random.Random(29)
    attribute = option[2:]
    for text in [*NAME_POOL, "a,a", "a,b,a", "a,,b", ",a", "a,"] + [
        _random_names(rng) for _ in range(400)
    ]:
        result, stderr = _parsed("table", f"{option}={text}", "path")
        expected = _names_reference(text, each_once=each_once)
        if expected is None:
            _one_usage_error(result, stderr, "table")
            assert repr(text) in stderr, text
        else:
            assert expected == getattr(result, attribute), (text, stderr)


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("suite")
    for env in ("coins", "pursuit"):
        for algo in ("ippo", "iql"):
            write_artifact(root / env / algo, {"train": [1.0, 2.0], "eval": [0.5], "save": [0.1]})
    return root


def _csv_header(ran: Ran) -> list[str]:
    assert (0, "") == (ran.returncode, ran.stderr)
    return next(csv.reader(io.StringIO(ran.stdout)))


def test_the_table_has_the_levels_and_stages_asked_for(suite: Path) -> None:
    rng = random.Random(31)
    stages = ["train", "eval", "save"]
    for _ in range(25):
        levels = rng.sample(["env", "algo", "é", "a b", "x\x1by", "seed"], 2)
        chosen = [rng.choice(stages) for _ in range(rng.randrange(1, 5))]
        ran = run_cli("table", suite, "--csv", "--levels", ",".join(levels),
                      "--stages", ",".join(chosen))
        shown = [name.replace("\x1b", "\\x1b") for name in levels]
        columns = [f"{s}_{what}" for s in dict.fromkeys(chosen)
                   for what in ("mean_seconds", "stdev_seconds", "runs")]
        assert ["artifact", *shown, *columns, "total_seconds"] == _csv_header(ran)


@pytest.mark.parametrize("args", [["--levels", "env,env"], ["--levels", "env"],
                                  ["--levels", "a,b,c"], ["--stages", "nope"],
                                  ["--stages", "train,\u202enope"], ["--levels", ""],
                                  ["--stages", "train,"]])
def test_main_refuses_names_that_do_not_fit_with_one_line(suite: Path, args: list[str]) -> None:
    ran = run_cli("table", suite, *args)

    _one_usage_error(ran.returncode, ran.stderr, "table")
    assert "" == ran.stdout
    assert "\u202e" not in ran.stderr and "\x1b" not in ran.stderr
