"""Every setting is read by one rule (docs/settings.md): each ``STAGETIMER_*`` variable
in a real child process started with it, each spelling accepted or refused with a
message naming the variable, the value and what is expected; every switch given to
``Recorder`` a real bool; and one module of the package reading the environment.
"""

from __future__ import annotations

import ast
import json
import math
import os
import re
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from stagetimer import Recorder, load_timings
from stagetimer._errors import InvalidSettingError, short_repr
from tests.helpers.process_life import run_script

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "stagetimer"

# -- the documented rule, written out independently of the library ------------------

ON = {"1", "true", "yes", "on"}
OFF = {"0", "false", "no", "off"}
REFUSED = "refused"


def _switch(spelling: str, default: bool) -> object:
    word = spelling.strip().lower()
    if word in ON:
        return True
    if word in OFF:
        return False
    return default if word == "" else REFUSED


def _number(spelling: str) -> float:
    try:
        return float(spelling)
    except ValueError:
        return math.nan


def _heartbeat(spelling: str) -> object:
    word = spelling.strip().lower()
    if word == "" or word in OFF or _number(word) == 0:
        return None
    value = _number(word)
    return value if math.isfinite(value) and value > 0 else REFUSED


def _claim(spelling: str) -> object:
    word = spelling.strip().lower() or "auto"
    return word if word in ("auto", "always") else REFUSED


def _stale(spelling: str) -> object:
    if spelling.strip() == "":
        return 30.0
    value = _number(spelling)
    return value if math.isfinite(value) and value > 0 else REFUSED


#: every variable a stage or a recorder reads (STAGETIMER_DIR has its own tests below),
#: with what each spelling means by the documented rule
MEANING = {
    "STAGETIMER_DISABLE": lambda s: _switch(s, False),
    "STAGETIMER_SOFTWARE": lambda s: _switch(s, True),
    "STAGETIMER_ATTEMPTS": lambda s: _switch(s, True),
    "STAGETIMER_HEARTBEAT": _heartbeat,
    "STAGETIMER_CLAIM": _claim,
    "STAGETIMER_CLAIM_STALE_SECONDS": _stale,
}
SPELLINGS = [
    "1", "true", " Yes ", "ON", "0", "False", "no", "off\n", "", "maybe", "2", "0.5",
    " Always ", "auto", "-1", "inf", "tru",
]

# One stage in a child started with the variable: what a strict recorder said when made,
# what a default recorder's stage did, what it warned, what was saved.
ONE_STAGE = """
import glob, json, os, pathlib, sys, warnings
from stagetimer import Recorder, StageTimerWarning, stage
from stagetimer._errors import InvalidSettingError
from stagetimer._settings import claim_stale_seconds
from stagetimer._store.locking import policy as claim_policy

base = sys.argv[1]
out = {}
try:
    Recorder(os.path.join(base, "strict"), strict=True)
    out["strict"] = None
except InvalidSettingError as exc:
    out["strict"] = str(exc)

art = os.path.join(base, "art")
markers = os.path.join(art, "timings.attempts")
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    try:
        rec = Recorder(art)
        with stage("s", run_idx=0, recorder=rec):
            names = os.listdir(markers) if os.path.isdir(markers) else []
            out["marker"] = json.loads(
                pathlib.Path(markers, names[0]).read_text()) if names else None
        out["pending"] = rec.pending
    except InvalidSettingError as exc:
        out["raised"] = str(exc)
out["warned"] = [str(w.message) for w in caught if w.category is StageTimerWarning]
path = pathlib.Path(art, "timings.json")
out["run"] = json.loads(path.read_text())["s"]["runs"][0] if path.exists() else None
out["rescued"] = bool(glob.glob(os.path.join(art, "timings.rescue-*.json")))
try:
    out["claim"] = claim_policy.needed(base)[1] == "STAGETIMER_CLAIM=always"
    out["stale"] = claim_stale_seconds()
except InvalidSettingError:
    pass
rec = None
print(json.dumps(out))
"""


def _names(variable: str, spelling: str, message: str) -> bool:
    return f"{variable}={short_repr(spelling)} is not valid: expected" in message


@pytest.mark.parametrize("spelling", SPELLINGS, ids=repr)
@pytest.mark.parametrize("variable", list(MEANING))
def test_each_variable_reads_each_spelling_by_the_one_rule(
    tmp_path: Path, variable: str, spelling: str
) -> None:
    meaning = MEANING[variable](spelling)
    env = {name: "" for name in MEANING}  # nothing from the test's own environment
    env[variable] = spelling
    out = json.loads(run_script(ONE_STAGE, tmp_path, env=env).stdout)
    run, warned = out["run"], out["warned"]

    if meaning == REFUSED:
        # A strict recorder refuses it when made, naming it, before any stage runs.
        assert out["strict"] is not None and _names(variable, spelling, out["strict"]), out
    else:
        assert out["strict"] is None, out
        assert warned == [], out

    if variable == "STAGETIMER_DISABLE":
        if meaning == REFUSED:  # raised before the block ran: nothing ran, nothing saved
            assert _names(variable, spelling, out["raised"]) and "marker" not in out, out
            assert run is None and not (tmp_path / "art").exists(), out
        else:
            assert (run is None) is meaning, out
            assert (out["marker"] is None) is meaning, out
        return
    assert "raised" not in out, out
    if variable in ("STAGETIMER_CLAIM", "STAGETIMER_CLAIM_STALE_SECONDS"):
        if meaning == REFUSED:
            # Not guessed: the save fails naming it, the record is kept and rescued.
            assert any(_names(variable, spelling, w) for w in warned), out
            assert run is None and out["pending"] == 1 and out["rescued"], out
            return
        assert run is not None and out["pending"] == 0, out
        if variable == "STAGETIMER_CLAIM":
            assert out["claim"] is (meaning == "always"), out
        else:
            assert out["stale"] == meaning, out
        return
    # The recorder's own variables: refused, one warning naming it, and the default.
    assert run is not None and out["pending"] == 0, out
    if meaning == REFUSED:
        assert len(warned) == 1 and _names(variable, spelling, warned[0]), out
        meaning = {"STAGETIMER_HEARTBEAT": None}.get(variable, True)
    if variable == "STAGETIMER_SOFTWARE":
        assert ("software_id" in run) is meaning, out
    elif variable == "STAGETIMER_ATTEMPTS":
        assert ("attempt_id" in run) is meaning and (out["marker"] is not None) is meaning
    else:
        assert out["marker"]["heartbeat"] == meaning, out


NO_RECORDER = """
import json, os, sys
from stagetimer import NoActiveRecorderError, stage
from stagetimer._errors import InvalidSettingError
ran = []
try:
    with stage("s", run_idx=0):
        ran.append(True)
    said = None
except (InvalidSettingError, NoActiveRecorderError) as exc:
    said = f"{type(exc).__name__}: {exc}"
print(json.dumps({"ran": ran, "said": said}))
"""


@pytest.mark.parametrize("where", ["directory", "unset", "empty", "a file", "disabled"])
def test_the_directory_variable_is_read_at_the_stage_before_its_block(
    tmp_path: Path, where: str
) -> None:
    """STAGETIMER_DIR: a path (a file is refused naming it), empty as unset; a bad
    STAGETIMER_DISABLE beside it is refused before the block runs, not taken as on."""
    target = tmp_path / "art"
    env = {"STAGETIMER_DIR": str(target), "STAGETIMER_DISABLE": ""}
    if where == "a file":
        target.write_text("not a directory")
    elif where in ("unset", "empty"):
        env["STAGETIMER_DIR"] = ""
    elif where == "disabled":
        env["STAGETIMER_DISABLE"] = "sometimes"
    if where == "unset":
        del env["STAGETIMER_DIR"]  # the test's own environment has none either
    out = json.loads(run_script(NO_RECORDER, env=env).stdout)

    if where == "directory":
        assert out == {"ran": [True], "said": None}
        assert len(load_timings(target).stages["s"].runs) == 1
        return
    assert out["ran"] == [], out
    said = out["said"]
    if where in ("unset", "empty"):
        assert said.startswith("NoActiveRecorderError"), out
    elif where == "a file":
        assert said.startswith("InvalidSettingError") and str(target) in said, out
        assert target.read_text() == "not a directory"
    else:
        assert said.startswith("InvalidSettingError: STAGETIMER_DISABLE='sometimes' is "
                               "not valid: expected 1, true, yes or on"), out
        assert not target.exists()


# -- arbitrary strings --------------------------------------------------------------

_TEXT = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12
)
_WORDS = st.sampled_from(sorted(ON | OFF | {"auto", "always", "0.25", "7", "1e3", ""}))


def _cased(word: str, upper: list[bool], space: str) -> str:
    shown = "".join(c.upper() if up else c for c, up in zip(word, upper, strict=False))
    return space + shown + space


# the known words in any case, with white space around
_CASED = st.builds(_cased, _WORDS, st.lists(st.booleans(), min_size=8, max_size=8),
                   st.sampled_from(["", " ", "\t", "\n ", "  "]))


@settings(derandomize=True, max_examples=300, deadline=None)
@given(variable=st.sampled_from(list(MEANING)), value=st.one_of(_TEXT, _CASED))
def test_any_string_in_any_variable_is_read_by_the_rule_or_refused_naming_it(
    tmp_path_factory: pytest.TempPathFactory, variable: str, value: str
) -> None:
    """Through the public surface: a strict recorder, made with the variable set."""
    before = os.environ.get(variable)
    try:
        os.environ[variable] = value
    except (UnicodeEncodeError, ValueError):
        assume(False)
    try:
        directory = tmp_path_factory.mktemp("art")
        try:
            Recorder(directory, strict=True)
            said = None
        except InvalidSettingError as exc:
            said = str(exc)
            assert exc.value == value
        if MEANING[variable](value) == REFUSED:
            assert said is not None and _names(variable, value, said), said
        else:
            assert said is None, said
    finally:
        if before is None:
            del os.environ[variable]
        else:
            os.environ[variable] = before


# -- Recorder's parameters ----------------------------------------------------------

SWITCHES = ["resume_partial_runs", "strict", "software", "attempts"]


@pytest.mark.parametrize(
    "value", ["no", "False", 0, 1, 1.0, None, [], "", b"yes"], ids=repr
)
@pytest.mark.parametrize("parameter", SWITCHES)
def test_every_switch_given_to_the_recorder_is_a_real_bool(
    art: Path, parameter: str, value: object
) -> None:
    extra: dict[str, Any] = {"completed_runs": 0} if parameter == "resume_partial_runs" else {}
    with pytest.raises(InvalidSettingError) as raised:
        Recorder(art, **{parameter: value}, **extra)

    assert str(raised.value).startswith(
        f"{parameter} {short_repr(value)} is not valid: expected True or False"
    )
    assert raised.value.value is value or raised.value.value == value
    assert not art.exists()


@settings(derandomize=True, max_examples=200, deadline=None)
@given(
    parameter=st.sampled_from(SWITCHES),
    value=st.one_of(st.booleans(), st.integers(), st.floats(), st.text(max_size=5),
                    st.none(), st.lists(st.booleans(), max_size=2)),
)
def test_a_recorder_switch_takes_a_bool_and_nothing_else(
    tmp_path_factory: pytest.TempPathFactory, parameter: str, value: object
) -> None:
    extra: dict[str, Any] = {}
    if parameter == "resume_partial_runs" and value is True:
        extra["completed_runs"] = 0
    directory = tmp_path_factory.mktemp("art")
    try:
        rec = Recorder(directory, **{parameter: value}, **extra)
    except InvalidSettingError as exc:
        assert not isinstance(value, bool)
        assert str(exc).startswith(f"{parameter} ")
    else:
        assert isinstance(value, bool) and getattr(rec, parameter) is value


def test_a_strict_recorder_that_says_no_is_not_strict_by_accident(art: Path) -> None:
    """``strict="no"`` read as true once: it is refused, not obeyed either way."""
    with pytest.raises(InvalidSettingError, match=r"strict 'no' is not valid"):
        Recorder(art, strict="no")  # type: ignore[arg-type]


# -- one home, one table ------------------------------------------------------------


def _strings_outside_docstrings(tree: ast.AST) -> list[str]:
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        and id(node) not in docstrings
    ]


def test_only_the_settings_module_names_a_variable_of_the_environment() -> None:
    """No other module spells a ``STAGETIMER_*`` name in its code (it may in its
    docstrings and messages built from the settings module's names): every other module
    asks the settings module."""
    spelled = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "_settings.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found = [s for s in _strings_outside_docstrings(tree) if re.search(r"STAGETIMER_[A-Z]", s)
                 and re.fullmatch(r"STAGETIMER_[A-Z_]+", s)]
        if found:
            spelled[str(path.relative_to(ROOT))] = found
    assert spelled == {}


def _table(doc: str) -> dict[str, str]:
    """The first cell of each row of the tables in ``doc``, without its backquotes."""
    rows = {}
    for line in doc.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells and cells[0].startswith("`"):
            rows[cells[0].strip("`").split("=")[0]] = line
    return rows


def test_the_docs_have_a_row_for_every_variable_and_every_recorder_parameter() -> None:
    from stagetimer import _settings

    doc = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    rows = _table(doc)
    parameters = {f.alias or f.name for f in attrs.fields(Recorder) if f.init}
    wanted = set(_settings.ENVIRONMENT) | parameters
    assert wanted <= set(rows), sorted(wanted - set(rows))
    for name in wanted:  # meaning, accepted values, default: three more cells
        assert rows[name].count("|") >= 5, rows[name]
    assert "settings.md" in (ROOT / "README.md").read_text(encoding="utf-8")
