"""The record layer's fast paths against its full checks.

- ``Stage.__enter__`` skips ``check_record`` for a name it has checked before
  (``_checked_names``, at most 4096 names) and a plain run index; a stage made by
  ``checked_stage`` also skips its label and metadata. Whatever the cache holds, the
  same arguments must be accepted or refused, with the same error type and message, as
  ``check_record`` + ``copy_metadata`` (what ``record_timing`` runs) decide: compared
  on random sequences of good and bad arguments, before and after the cache is full.
- ``check_started_at`` and the ``Recorder`` settings' checks against plain predicates
  written here from their docstrings.
- ``resources``: where ``ru_maxrss`` mirrors ``VmHWM``, a stage's memory peak is read
  from ``getrusage`` instead of ``/proc/self/status``; compared with the slow read over
  the same stages, in a process that inherited a larger peak across ``exec``.
- ``saver._discard``'s one slice deletion against one ``list.remove`` per record.
- ``placement.rank_of``'s ``isdigit`` test against what a launcher writes (ASCII digits).
"""

from __future__ import annotations

import enum
import json
import math
import os
import random
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stagetimer import _settings as setting_checks
from stagetimer._errors import InvalidSettingError
from stagetimer._format import MAX_RUN_IDX, POLICIES
from stagetimer._record import stage as stage_module
from stagetimer._record.pending import utc_iso
from stagetimer._record.recorder import check_metadata_mapping, check_started_at
from stagetimer._record.stage import checked_stage, stage
from stagetimer._store.validate import check_name, check_record, copy_metadata

Outcome = tuple[type[BaseException], str] | None


def _outcome(call: Callable[[], object]) -> Outcome:
    try:
        call()
    except Exception as exc:  # the type and the message are what is compared
        return type(exc), str(exc)
    return None


class _Idx(enum.IntEnum):
    THREE = 3


class _Name(str):
    pass


_NAMES: list[Any] = [
    "ippo_train", "nashconv", "alpharank", "caf\xe9", "\N{SNOWMAN}", "a" * 300, " ",
    _Name("ippo_train"), "", "ippo\x1b[2J", "tab\there", "x\x85", "lone\udcff", 42, None,
    b"ippo_train", 1.5, ["ippo_train"],
]
_RUN_IDX: list[Any] = [
    None, 0, 1, 7, MAX_RUN_IDX, MAX_RUN_IDX + 1, -1, True, False, 1.0, "1", _Idx.THREE,
    10**5000, -(10**30),
]
_LABELS: list[Any] = [None, "", "seed 1", "lone\udcff", 7, b"x", ["x"]]
_METADATA: list[dict[str, Any]] = [
    {}, {"lr": 0.1}, {"cfg": {"a": [1, 2]}}, {"lr": math.nan}, {"hardware_id": "x"},
    {"x": object()}, {"m": {1: "a", "1": "b"}}, {"s": "lone\udcff"}, {"big": 10**400},
]


def _reference(name: Any, run_idx: Any, label: Any, metadata: dict[str, Any]) -> Outcome:
    """What ``record_timing`` checks, in its order."""
    def checks() -> None:
        check_record(name, run_idx, label)
        copy_metadata(metadata)

    return _outcome(checks)


def _entered(timing: Any) -> Outcome:
    def enter() -> None:
        timing.__enter__()
        timing.__exit__(None, None, None)

    return _outcome(enter)


def _draws(rng: random.Random, count: int) -> list[tuple[Any, Any, Any, dict[str, Any]]]:
    # the usual arguments most of the time, so that names are seen again (the cache)
    return [
        (
            rng.choice(_NAMES[:4]) if rng.random() < 0.6 else rng.choice(_NAMES),
            rng.choice(_RUN_IDX[:4]) if rng.random() < 0.6 else rng.choice(_RUN_IDX),
            None if rng.random() < 0.6 else rng.choice(_LABELS),
            {} if rng.random() < 0.6 else rng.choice(_METADATA),
        )
        for _ in range(count)
    ]


def _compare(draws: list[tuple[Any, Any, Any, dict[str, Any]]]) -> list[Any]:
    wrong = []
    for name, run_idx, label, metadata in draws:
        expected = _reference(name, run_idx, label, metadata)
        got = _entered(stage(name, run_idx=run_idx, label=label, **metadata))
        if got != expected:
            wrong.append(("stage", name, run_idx, label, metadata, got, expected))
        # twice: the name may be cached by now
        got = _entered(stage(name, run_idx=run_idx, label=label, **metadata))
        if got != expected:
            wrong.append(("stage again", name, run_idx, label, metadata, got, expected))
        if _reference("x", None, label, metadata) is None:  # what @timed_stage accepts
            made = checked_stage(name, run_idx, label, None, copy_metadata(metadata))
            got = _entered(made)
            expected_checked = _outcome(lambda: check_record(name, run_idx, label))  # noqa: B023
            if got != expected_checked:
                wrong.append(("checked", name, run_idx, label, metadata, got, expected_checked))
    return wrong


def _only_valid_names_cached() -> None:
    for name in list(stage_module._checked_names):
        assert type(name) is str
        check_name(name)


@pytest.mark.parametrize("seed", range(4))
def test_stage_accepts_and_refuses_what_check_record_does(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STAGETIMER_DISABLE", "1")  # checked, nothing recorded
    wrong = _compare(_draws(random.Random(seed), 600))
    assert wrong[:5] == [], len(wrong)
    _only_valid_names_cached()


def test_after_4096_names_each_new_name_is_still_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("STAGETIMER_DISABLE", "1")
    cached = stage_module._checked_names
    i = 0
    while len(cached) < 4096:
        with stage(f"filler_{i}"):
            pass
        i += 1
    with stage("one_more_name"):
        pass
    assert (len(cached), "one_more_name" in cached) == (4096, False)
    wrong = _compare(_draws(random.Random(99), 600))
    assert wrong[:5] == [], len(wrong)
    # a name past the cap is checked at each entry, and a bad one always refused
    for _ in range(3):
        assert _entered(stage("ippo\x1b[2J")) == _reference("ippo\x1b[2J", None, None, {})
        assert _entered(stage("past_the_cap", run_idx=-1)) == _reference(
            "past_the_cap", -1, None, {}
        )
    assert len(cached) == 4096
    _only_valid_names_cached()


def test_metadata_is_copied_on_entry_on_either_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STAGETIMER_DISABLE", "1")
    for attempt in range(2):  # the second time the name is cached
        cfg = {"layers": [1, 2]}
        timing = stage("copied_metadata", run_idx=attempt, cfg=cfg, pair=(1, 2))
        with timing:
            cfg["layers"].append(3)
        assert timing.metadata == {"cfg": {"layers": [1, 2]}, "pair": [1, 2]}


# -- arguments.py, settings.py -------------------------------------------------

_LATEST = 253402300799  # 9999-12-31T23:59:59Z

_VALUES: list[Any] = [
    None, 0, 0.0, -0.0, 1, 1.5, -1, -1e-9, 1.7e9, 1.7e9 + 0.999, float(_LATEST),
    _LATEST, _LATEST + 1, _LATEST + 0.5, math.nextafter(float(_LATEST), math.inf), 10**400,
    math.nan, math.inf, -math.inf, True, False, "1.7e9", [1], _Idx.THREE, 10**9,
    MAX_RUN_IDX, MAX_RUN_IDX + 1, -(10**30), 3, 2.0, "fail", "rewrite", object(),
    10**5000, -(10**5000), 1.7976931348623157e308,
]
_FLOAT_MAX = 1.7976931348623157e308


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def test_started_at_is_accepted_exactly_when_a_utc_time_can_be_written() -> None:
    for value in _VALUES:
        accepted = _outcome(lambda: check_started_at(value)) is None  # noqa: B023
        expected = value is None or (_is_number(value) and 0 <= value <= _LATEST)
        assert accepted == expected, value
        if accepted and value is not None:
            text = utc_iso(value)
            assert text[:4] <= "9999" and text.endswith("Z"), (value, text)


def test_metadata_mapping_check() -> None:
    from collections import OrderedDict
    from types import MappingProxyType

    for value in [{}, OrderedDict(a=1), MappingProxyType({"a": 1}), [], None, "a", 1, [("a", 1)]]:
        accepted = _outcome(lambda: check_metadata_mapping(value)) is None  # noqa: B023
        assert accepted == isinstance(value, (dict, OrderedDict, MappingProxyType)), value


_SETTINGS: dict[str, tuple[Callable[..., None], Callable[[Any], bool]]] = {
    "completed_runs": (
        setting_checks.check_completed_runs, lambda v: v is None or (_is_int(v) and v >= 0)
    ),
    "expected_runs": (
        setting_checks.check_expected_runs,
        lambda v: v is None or (_is_int(v) and 1 <= v <= MAX_RUN_IDX),
    ),
    "policy": (setting_checks.check_policy, lambda v: isinstance(v, str) and v in POLICIES),
    "lock_timeout": (
        # a save adds it to the clock: a number that fits a float, or infinity
        setting_checks.check_timeout,
        lambda v: _is_number(v) and (0 <= v <= _FLOAT_MAX or v == math.inf),
    ),
    "software": (setting_checks.check_flag, lambda v: v is True or v is False),
}


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class _Attribute:
    def __init__(self, name: str) -> None:
        self.name = name


@pytest.mark.parametrize("setting", list(_SETTINGS))
def test_each_setting_check_is_its_plain_rule(setting: str) -> None:
    check, rule = _SETTINGS[setting]
    for value in [*_VALUES, *POLICIES]:
        got = _outcome(lambda: check(None, _Attribute(setting), value))  # noqa: B023
        assert (got is None) == rule(value), (setting, value)
        if got is not None:  # never repr's own ValueError for a huge int
            assert got[0] is InvalidSettingError and got[1].startswith(setting), got
            assert len(got[1]) < 300, got


def test_a_huge_lock_timeout_is_refused_not_a_failure_at_each_save(tmp_path: Path) -> None:
    from stagetimer import Recorder

    with pytest.raises(InvalidSettingError, match="lock_timeout 1000000"):
        Recorder(tmp_path, lock_timeout=10**400)
    rec = Recorder(tmp_path, lock_timeout=math.inf)
    rec.record("x", 1.0, run_idx=0)
    assert sorted(p.name for p in tmp_path.iterdir() if "rescue" in p.name) == []


def test_as_path_is_its_plain_rule(tmp_path: Path) -> None:
    class Bytes(os.PathLike):  # type: ignore[type-arg]
        def __fspath__(self) -> bytes:
            return b"/tmp"

    for value, ok in [
        (str(tmp_path), True), (tmp_path, True), ("", False), ("a\0b", False),
        (b"/tmp", False), (Bytes(), False), (42, False), (None, False), (Path("rel"), True),
        (10**5000, False),
    ]:
        got = _outcome(lambda: setting_checks.as_path(value))  # noqa: B023
        assert (got is None) == ok, value
        if got is not None:
            assert got[0] is InvalidSettingError and got[1].startswith("directory"), got


# -- resources.py: ru_maxrss for VmHWM where they are one number ------------------

_CHILD = textwrap.dedent(
    """
    import json, sys
    from stagetimer._record import resources

    def fresh(mirror):
        found = resources.Probe(None, None, None)
        found.mirror = mirror
        return found

    # decided as the first stage of a process decides (no cgroup peak under /nonexistent)
    fast = resources.probe(root="/nonexistent", environ={}, nvml=None)
    fast.peak_path = None
    slow = fresh(False)  # the general path: VmHWM read at every boundary
    first_mirror = fast.mirror
    held, rows = [], []
    for size in [0, 20, 0, 60, 0, 100, 0, 40, 500, 0, 100, 50, 0, 30, 700, 0]:
        resources.use(fast)
        a = resources.start()
        resources.use(slow)
        b = resources.start()
        held.append(bytearray(size << 20))  # touched: the pages are resident
        for i in range(0, len(held[-1]), 4096):
            held[-1][i] = 1
        used_b = resources.finish(b)
        used_a = resources.finish(a)
        rows.append([size, fast.mirror, used_a.get("memory_peak_bytes"),
                     used_b.get("memory_peak_bytes")])
        slow.mirror = False  # finish() may learn the mirror: the reference never uses it
        if size >= 100:
            del held[:]
    status = open("/proc/self/status").read()
    hwm = [line for line in status.splitlines() if line.startswith("VmHWM")]
    print(json.dumps({"first_mirror": first_mirror, "rows": rows, "hwm": hwm,
                      "maxrss": resources._getrusage(resources._SELF).ru_maxrss}))
    """
)

_PARENT = textwrap.dedent(
    """
    import os, sys
    big = bytearray(200 << 20)
    for i in range(0, len(big), 4096):
        big[i] = 1
    os.execv(sys.executable, [sys.executable, "-c", sys.argv[1]])
    """
)


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="no /proc")
def test_memory_peak_from_getrusage_is_the_one_from_vmhwm() -> None:
    """A process that inherited a 200 MiB peak across exec: ru_maxrss is not its own mark
    until the mark passes it (a 500 MiB stage); the fast path must give what VmHWM gives
    all along."""
    done = subprocess.run(
        [sys.executable, "-c", _PARENT, _CHILD], capture_output=True, text=True, timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["first_mirror"] is False  # the inherited peak hides the mark at first
    rows = result["rows"]
    # The same peak, present in the same stages. The two are read one after the other,
    # and the kernel's RSS counters are per-CPU and folded in batches (percpu_counter,
    # Linux 6.2+): two reads of one mark a moment apart may differ by some pages. The
    # fast window holds the slow one (start a, start b, ..., finish b, finish a), so a
    # page the reading itself touched can raise the mark in one window and not in the
    # other: where only one path saw a rise, it is a rise of at most that noise over the
    # peak known before the stage.
    known = None
    for row in rows:
        fast_peak, slow_peak = row[2], row[3]
        if (fast_peak is None) != (slow_peak is None):
            seen = fast_peak if fast_peak is not None else slow_peak
            assert known is not None and seen - known <= 1 << 20, (row, rows)
        elif fast_peak is not None:
            assert abs(fast_peak - slow_peak) <= 1 << 20, rows
        known = max([v for v in (known, fast_peak, slow_peak) if v is not None], default=None)
    mirrored = [r[1] for r in rows]
    # the mark passed the inherited peak: fast from then on
    assert mirrored[-1] is True, (rows, result["hwm"], result["maxrss"])
    assert any(r[2] for r in rows if r[1]), rows  # and peaks were read on the fast path


# -- saver._discard: one slice deletion for a save of everything pending ------------


def test_discard_is_one_removal_per_record() -> None:
    """``_discard``'s slice deletion (the saved records are the list's prefix) against its
    general path, ``list.remove`` of each record (equality is identity)."""
    from stagetimer._record.pending import Finished, Pending
    from stagetimer._record.saver import _discard

    rng = random.Random(5)
    pool = [Pending(Finished(f"s{i}", 1.0, i, None, None, None)) for i in range(8)]
    for _ in range(3000):
        pending = [rng.choice(pool) for _ in range(rng.randint(0, 7))]
        if pending and rng.random() < 0.5:  # the usual case: a prefix, maybe all of it
            records = pending[: rng.randint(0, len(pending))]
        else:
            records = [rng.choice(pool) for _ in range(rng.randint(0, 5))]
        expected = list(pending)
        for record in records:
            if any(r is record for r in expected):
                del expected[next(i for i, r in enumerate(expected) if r is record)]
        kept = pending  # in place: the same list object
        _discard(pending, records)
        assert kept is pending
        assert [id(r) for r in pending] == [id(r) for r in expected], (pending, records)


# -- placement.rank_of: isdigit as the test that a launcher's value parses ----------


def _ref_count(text: str | None) -> int | None:
    """A launcher writes its rank and world size as ASCII digits."""
    if text is None or re.fullmatch(r"\s*[0-9]{1,19}\s*", text) is None:
        return None
    return int(text)


@settings(derandomize=True, max_examples=500, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(st.sampled_from(
    ["0", "1", "3", "9", " ", "\t", "-", "+", "_", "\xb2", "\u0663", "\uff13", "x", "\n"]),
    max_size=4), st.sampled_from(["9" * 5000, "9" * 19, "1" * 20, "\u0663"])),
    min_size=8, max_size=8))
def test_rank_of_reads_what_a_launcher_writes_and_passes_over_the_rest(
    values: list[str | None],
) -> None:
    from stagetimer._record.placement import RANK_VARIABLES, rank_of

    names = [name for pair in RANK_VARIABLES for name in pair]
    environ = {k: v for k, v in zip(names, values, strict=True) if v is not None}
    expected = None
    for rank_name, size_name in RANK_VARIABLES:
        rank, size = _ref_count(environ.get(rank_name)), _ref_count(environ.get(size_name))
        if rank is None or size is None or rank >= size:
            continue
        expected = (rank, size) if size > 1 else None
        break
    assert rank_of(environ) == expected
