"""The hardware layer's fast paths against plain references written here.

Each parser or formatter decides the usual input by a short path (``str.splitlines``, one
C call; ``int`` for a number; a float division then a rounding; ``float()`` of both sides
before comparing; a CPU skipped because a sibling list counted it) beside a plain
definition of its result. Each is compared with that definition on inputs at its
boundaries and at random (fixed seeds, derandomized hypothesis):

- ``significant``, ``format_bytes``, ``format_rate`` and ``format_energy`` against a
  ``decimal`` reference (the float's exact value, scaled exactly, rounded half-even once,
  the prefix chosen by the rounded digits) at every rounding and prefix boundary;
- ``hardware_differences`` against a field-by-field comparison with ``==`` (exact for an
  int beside a float, no bool taken for a count);
- ``content_id`` against itself under key order, JSON round trips and float forms;
- ``parse_mountinfo`` and ``parse_cgroup_file`` against lines the kernel would write
  (``mangle``'s octal escapes, optional fields, names holding ``\\r``, U+2028, ``:``),
  ``read_text`` against the file's bytes decoded, ``find_field``, ``cpuinfo_blocks`` and
  ``node_total_bytes`` against splits at ``\\n``;
- ``parse_cpu_list`` against the kernel's cpulist grammar (ASCII digits, ranges);
- ``expand_cpus_per_node``/``cpus_on_node`` against a plain expansion of Slurm's
  ``2(x3),1``; ``select_visible`` against the ``CUDA_VISIBLE_DEVICES`` rule read entry
  by entry; ``json_text`` (one ``encode`` decides text without surrogates) against the
  bytes it stands for read with ``backslashreplace``; ``smallest`` against ``min``;
- the cgroup walk (``_ancestors``, ``_shown_at``: string prefixes and ``..`` counts)
  against the components of each ancestor and of each mount's ROOT;
- ``physical_cores`` (which skips CPUs a sibling list counted) and the clock range
  (``cpufreq_range``, ``cppc_max_mhz``) against every affine CPU read one by one.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import random
import re
import string
from decimal import ROUND_HALF_EVEN, Context, Decimal, localcontext
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from helpers.fake_hardware import FakeRoot
from hypothesis import given, settings
from hypothesis import strategies as st

from stagetimer._system.content_id import content_id
from stagetimer._system.files import find_field, parse_cpu_list, read_text
from stagetimer._system.mounts import Mount, parse_mountinfo
from stagetimer._system.text import json_text
from stagetimer._system.units import format_bytes, format_energy, format_rate, significant
from stagetimer.hardware._cgroup import Cgroups, Located, parse_cgroup_file, smallest
from stagetimer.hardware._clock import cppc_max_mhz, cpufreq_range
from stagetimer.hardware._cpu import cpuinfo_blocks, model_name, physical_cores
from stagetimer.hardware._differences import hardware_differences
from stagetimer.hardware._gpu import select_visible
from stagetimer.hardware._memory import node_total_bytes
from stagetimer.hardware._scheduler import cpus_on_node, expand_cpus_per_node

# ---------------------------------------------------------------------------
# Units: three significant digits, rounded once from the exact value

_EXACT = Context(prec=2000)


def _ref_significant(exact: Decimal, as_float: float) -> str:
    """``significant``'s promise on the exact value: three significant digits half-even,
    the whole number up to 99,999, e-notation (as ``{:.3g}``) from 99,999.5 on."""
    if not exact.is_finite() or exact == 0:
        return f"{as_float:g}"
    sign = "-" if exact < 0 else ""
    size = abs(exact)
    if size >= Decimal("99999.5"):
        exponent = size.adjusted()
        digits = size.scaleb(-exponent).quantize(Decimal("0.01"), ROUND_HALF_EVEN, _EXACT)
        if digits >= 10:
            digits, exponent = digits / 10, exponent + 1
        head = f"{digits:f}".rstrip("0").rstrip(".")
        return f"{sign}{head}e+{exponent:02d}"
    places = max(0, 2 - size.adjusted())
    rounded = size.quantize(Decimal(1).scaleb(-places), ROUND_HALF_EVEN, _EXACT)
    text = f"{rounded:f}"
    return sign + (text.rstrip("0").rstrip(".") if "." in text else text)


def _ref_scaled(value: float, unit: str, base: int, prefixes: tuple[str, ...]) -> str:
    """The largest prefix whose rounded digits stay below ``base`` (the last one else)."""
    if not math.isfinite(value):
        return f"{value:g} {unit}"
    exact = Decimal(value)
    for power, prefix in enumerate(prefixes):
        scaled = _EXACT.divide(exact, Decimal(base) ** power)
        text = _ref_significant(scaled, value)
        if power == len(prefixes) - 1 or abs(Decimal(text)) < base:
            return f"{text} {prefix}{unit}"
    raise AssertionError("unreachable")


_BINARY = ("", "Ki", "Mi", "Gi", "Ti", "Pi")
_DECIMAL = ("", "k", "M", "G", "T", "P")


def _boundaries() -> list[float]:
    """Values at and beside every place where the digits or the prefix change."""
    marks: list[float] = [0.0, -0.0, 1.0, 0.5, 99999.5, 99999.49, 123456.0]
    for exponent in range(-6, 25):
        for head in (1.0, 9.995, 9.9949, 1.005, 2.235, 2.225, 9.99, 5.0):
            marks.append(head * 10.0**exponent)
    for power in range(0, 7):
        for scale in (1000, 1024):
            for near in (scale - 0.5, scale - 0.4, scale - 0.6, scale, 999.5, 99999.5):
                marks.append(near * float(scale) ** power)
            marks.append(float(scale) ** power - 1)
    rng = random.Random(7)
    for _ in range(1500):
        marks.append(rng.randint(1, 99999) * 10.0 ** rng.randint(-5, 20) / 2 ** rng.randint(0, 3))
        marks.append(rng.uniform(0, 10) ** rng.uniform(0, 25))
        marks.append(float(rng.randint(0, 2**63)))
    out: list[float] = []
    for mark in marks:
        out += [mark, math.nextafter(mark, math.inf), math.nextafter(mark, -math.inf), -mark]
    return [*out, math.inf, -math.inf, math.nan]


_VALUES = _boundaries()


def test_significant_matches_the_decimal_reference() -> None:
    wrong = [v for v in _VALUES if significant(v) != _ref_significant(Decimal(v), v)]
    assert wrong == [], [(v, significant(v), _ref_significant(Decimal(v), v)) for v in wrong[:5]]


@pytest.mark.parametrize(
    ("formatter", "unit", "base", "prefixes"),
    [
        (format_bytes, "B", 1024, _BINARY),
        (format_rate, "B/s", 1000, _DECIMAL),
        (format_energy, "J", 1000, _DECIMAL),
    ],
)
def test_scaled_units_match_the_decimal_reference(
    formatter: Any, unit: str, base: int, prefixes: tuple[str, ...]
) -> None:
    # Before the fix: 1023.7 B read "1024 B", 999999 B/s "1000 kB/s" and 2235000 B/s
    # "2.23 MB/s" (2.235e6 / 1e6 is the float 2.23499...; the exact value is 2.235).
    wrong = [v for v in _VALUES if formatter(v) != _ref_scaled(v, unit, base, prefixes)]
    shown = [(v, formatter(v), _ref_scaled(v, unit, base, prefixes)) for v in wrong[:5]]
    assert wrong == [], shown


def test_scaled_units_at_the_named_boundaries() -> None:
    assert format_bytes(1023.7) == "1 KiB"
    assert format_bytes(1024**2 - 1) == "1 MiB"
    assert format_bytes(17179869184) == "16 GiB"
    assert format_rate(999999) == "1 MB/s"
    assert format_rate(2235000) == "2.24 MB/s"
    assert format_rate(3.35e12) == "3.35 TB/s"
    assert format_energy(999_999_999) == "1 GJ"
    assert format_energy(312000) == "312 kJ"


# ---------------------------------------------------------------------------
# hardware_differences against a plain field-by-field comparison

_SCALAR_PATHS = (
    ("cpu", "model_name"),
    ("cpu", "logical_cpus"),
    ("cpu", "physical_cores"),
    ("cpu", "numa_nodes"),
    ("cpu", "clock_max_mhz"),
    ("cpu", "quota_cpus"),
    ("memory", "limit_bytes"),
    ("memory", "high_bytes"),
)
_POOL: tuple[Any, ...] = (
    None,
    0,
    1,
    True,
    False,
    8,
    8.0,
    2**53,
    2**53 + 1,
    float(2**53),
    2**63 - 1,
    2**63,
    1e300,
    -0.0,
    0.0,
    "8",
    "AMD EPYC",
    3200.0,
    3231.0,
    3233.0,
    4464.0,
)
_MISSING = object()


def _lookup(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: numbers by their exact value (8 == 8.0), a bool only equal to a bool."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


def _clock_differs(a: Any, b: Any) -> bool:
    numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b))
    if not numbers or not all(math.isfinite(x) for x in (a, b)):
        return not _equal(a, b)
    low, high = Fraction(a), Fraction(b)
    return abs(low - high) > Fraction(1, 100) * max(abs(low), abs(high))


def _ref_differences(left: dict[str, Any], right: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    found = []
    for path in _SCALAR_PATHS:
        field = ".".join(path)
        a, b = _lookup(left, *path), _lookup(right, *path)
        if field == "cpu.clock_max_mhz":
            differs = _clock_differs(a, b)
        elif field == "cpu.numa_nodes":
            differs = a is not None and b is not None and not _equal(a, b)
        else:
            differs = not _equal(a, b)
        if differs:
            found.append((field, a, b))
    gpus_a, gpus_b = left.get("gpus") or [], right.get("gpus") or []
    if len(gpus_a) != len(gpus_b):
        found.append(("gpus", len(gpus_a), len(gpus_b)))
    for i in range(min(len(gpus_a), len(gpus_b))):
        for name in ("name", "memory_usable_bytes", "peak_memory_bandwidth_bytes_per_s"):
            a, b = gpus_a[i].get(name), gpus_b[i].get(name)
            if not _equal(a, b):
                found.append((f"gpus[{i}].{name}", a, b))
    for field in ("python", "os", "machine"):
        a, b = left.get(field), right.get(field)
        if field == "python":
            a, b = (None if x is None else ".".join(x.split(".")[:2]) for x in (a, b))
        if field == "os":
            a, b = (None if x is None else x.split(" ")[0] for x in (a, b))
        if a != b:
            found.append((field, a, b))
    return found


def _random_description(rng: random.Random) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for section, key in _SCALAR_PATHS:
        value = rng.choice((*_POOL, _MISSING))
        if value is not _MISSING:
            data.setdefault(section, {})[key] = value
    gpu = {
        "name": "H100",
        "memory_usable_bytes": 2**36,
        "peak_memory_bandwidth_bytes_per_s": 10**12,
    }
    data["gpus"] = [
        {k: rng.choice((v, v, None, 2**53 + 1)) for k, v in gpu.items()}
        for _ in range(rng.randint(0, 2))
    ]
    data["python"] = rng.choice(("CPython 3.11.7", "CPython 3.11.2", "CPython 3.12.1"))
    data["os"] = rng.choice(("Linux 6.1.0", "Linux 6.8.0", "Darwin 23.0"))
    data["machine"] = rng.choice(("x86_64", "aarch64"))
    return data


def test_hardware_differences_match_a_field_by_field_comparison() -> None:
    # Before the fix: 2**53 and 2**53 + 1 bytes were one limit (float() of both), and
    # True was the count 1.
    rng = random.Random(11)
    for _ in range(3000):
        left = _random_description(rng)
        right = _random_description(rng) if rng.random() < 0.5 else json.loads(json.dumps(left))
        if rng.random() < 0.3:  # one field nudged
            section, key = rng.choice(_SCALAR_PATHS)
            right.setdefault(section, {})[key] = rng.choice(_POOL)
        got = [(d.field, d.base, d.new) for d in hardware_differences(left, right)]
        assert got == _ref_differences(left, right), (left, right)


# ---------------------------------------------------------------------------
# content_id: the content only

_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=12,
)


def _shuffled(value: Any, rng: random.Random) -> Any:
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: _shuffled(v, rng) for k, v in items}
    if isinstance(value, list):
        return [_shuffled(v, rng) for v in value]
    return value


@settings(derandomize=True, max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=5), _json_values, max_size=5), st.integers(0, 2**32))
def test_content_id_depends_on_the_content_only(stored: dict[str, Any], seed: int) -> None:
    ident = content_id("hw-", stored)
    assert re.fullmatch(r"hw-[0-9a-f]{16}", ident)
    # Key order, a JSON round trip (as the file is read back), tuples for lists.
    assert content_id("hw-", _shuffled(stored, random.Random(seed))) == ident
    assert content_id("hw-", json.loads(json.dumps(stored))) == ident
    canonical = json.dumps(stored, sort_keys=True, separators=(",", ":"))
    assert ident == "hw-" + hashlib.sha256(canonical.encode()).hexdigest()[:16]


def test_content_id_float_forms() -> None:
    # A float keeps its shortest repr through a file, so one value has one id ...
    for value in (0.1, 1e16, 1e-7, 5e-324, 2.0**53, 1 / 3, 3201.0):
        assert content_id("x", {"v": value}) == content_id(
            "x", json.loads(json.dumps({"v": value}))
        )
    # ... and a changed value, or an int for a float, is another content.
    assert content_id("x", {"v": 1}) != content_id("x", {"v": 1.0})
    assert content_id("x", {"v": 0.1}) != content_id("x", {"v": 0.1 + 2**-56})
    assert content_id("x", {"é": "ü"}) == content_id("x", json.loads('{"\\u00e9": "\\u00fc"}'))


# ---------------------------------------------------------------------------
# Kernel files: lines end at "\n" only, escapes undone, numbers in ASCII

_NAME_CHARS = string.ascii_letters + "/-_.:" + " \t\\\r\x0b\x0c\x1c\x85\u2028\u2029é#-"


def _mangle(path: str) -> str:
    """fs/proc_namespace.c ``mangle``: space, tab, newline and backslash as octal."""
    return "".join(f"\\{ord(c):03o}" if c in " \t\n\\" else c for c in path)


def _random_path(rng: random.Random) -> str:
    return "/" + "".join(rng.choice(_NAME_CHARS) for _ in range(rng.randint(0, 12)))


def test_parse_mountinfo_reads_every_line_the_kernel_writes() -> None:
    # Before the fix: a mount point holding "\r", "\x85" or U+2028 cut its line in two
    # (str.splitlines), and the mount was lost.
    rng = random.Random(3)
    for _ in range(400):
        expected = []
        lines = []
        for n in range(rng.randint(0, 6)):
            mount = Mount(
                mount_point=_random_path(rng) + "\n" * (rng.random() < 0.1),
                root=_random_path(rng),
                fs_type=rng.choice(("ext4", "cgroup2", "fuse.bindfs", "nfs4")),
                source=rng.choice(("", "none", "/dev/vda1", "srv:/a b", "-")),
                mount_options=tuple(rng.sample(("rw", "relatime", "nosuid"), rng.randint(1, 3))),
                super_options=tuple(rng.sample(("rw", "memory", "cpu", "x=1"), rng.randint(0, 3))),
                device=f"0:{n}",
            )
            optional = rng.sample(
                ("shared:1", "master:2", "propagate_from:3", "unbindable"), rng.randint(0, 3)
            )
            lines.append(
                " ".join(
                    [
                        str(20 + n),
                        "1",
                        mount.device,
                        _mangle(mount.root),
                        _mangle(mount.mount_point),
                        ",".join(mount.mount_options),
                        *optional,
                        "-",
                        mount.fs_type,
                        _mangle(mount.source),
                        ",".join(mount.super_options),
                    ]
                )
            )
            expected.append(mount)
        text = "".join(line + "\n" for line in lines)
        assert parse_mountinfo(text) == expected, text
        assert parse_mountinfo(text.rstrip("\n")) == expected


def test_parse_cgroup_file_against_a_split_at_newlines() -> None:
    rng = random.Random(5)
    for _ in range(400):
        entries = []
        for n in range(rng.randint(0, 6)):
            controllers = tuple(
                rng.sample(("cpu", "cpuacct", "memory", "name=systemd"), rng.randint(0, 2))
            )
            path = _random_path(rng).replace("\n", "")
            entries.append((str(n), controllers, path))
        deleted = [rng.random() < 0.2 for _ in entries]
        text = "".join(
            f"{h}:{','.join(c)}:{p}{' (deleted)' if d else ''}\n"
            for (h, c, p), d in zip(entries, deleted, strict=True)
        )
        assert parse_cgroup_file(text) == entries, text


def test_read_text_and_find_field_against_the_bytes(tmp_path: Path) -> None:
    rng = random.Random(9)
    fake = FakeRoot(tmp_path)
    for n in range(200):
        raw = bytes(
            rng.choice(b"ab:\r\n\t \xff\xe2\x80\xa8\xc3\xa9") for _ in range(rng.randint(0, 30))
        )
        path = f"/proc/f{n}"
        (tmp_path / "proc").mkdir(exist_ok=True)
        (tmp_path / path.lstrip("/")).write_bytes(raw)
        text = raw.decode("utf-8", "replace")
        assert read_text(fake.root, path) == text
        first = next(
            (
                line.partition(":")[2].strip()
                for line in text.split("\n")
                if line.partition(":")[0] == "a"
            ),
            None,
        )
        assert find_field(text, "a", ":") == first


def test_cpuinfo_and_meminfo_against_a_split_at_newlines(tmp_path: Path) -> None:
    fake = FakeRoot(tmp_path)
    names = ["AMD EPYC\u2028 9654", "Intel\x85 Xeon", "Arm\r Neoverse", "Ampere"]
    text = "".join(
        f"processor\t: {i}\nmodel name\t: {names[i]}\nflags\t\t: fpu\n\n" for i in range(4)
    )
    fake.write("/proc/cpuinfo", text)
    blocks = cpuinfo_blocks(fake.root)
    assert blocks == [
        {"processor": str(i), "model name": names[i], "flags": "fpu"} for i in range(4)
    ]
    assert model_name(fake.root, (1, 2))[0] == f"{names[1]} / {names[2]}"
    for total, expected in (
        ("24683656 kB", 24683656 * 1024),
        ("512", 512),
        ("²", None),
        ("\u0661\u0662 kB", 12 * 1024),
    ):
        fake.meminfo(f"MemFree: 1 kB\nMemTotal:       {total}\n")
        # Before the fix: "²" passed isdigit() and int() raised ValueError out of the probe.
        assert node_total_bytes(fake.root)[0] == expected


def _ref_cpu_list(text: str) -> tuple[int, ...] | None:
    text = text.strip()
    if not text:
        return ()
    cpus: set[int] = set()
    for part in text.split(","):
        match = re.fullmatch(r"\s*([0-9]+)\s*(?:-\s*([0-9]+)\s*)?", part)
        if match is None:
            return None
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) is not None else first
        if last < first:
            return None
        cpus.update(range(first, last + 1))
    return tuple(sorted(cpus))


def test_parse_cpu_list_against_the_cpulist_grammar() -> None:
    # Before the fix: "+1", "1_0" and "\u0663" were read as CPUs 1, 10 and 3 (int() takes them).
    rng = random.Random(13)
    tokens = [
        "0",
        "1",
        "3",
        "7",
        "12",
        "0-3",
        "4-7",
        "10-11",
        "3-1",
        "",
        " 2 ",
        "-1",
        "+1",
        "1_0",
        "\u0663",
        "²",
        "0x1",
        "1-",
        "-",
        "8-8",
        "0-3:2",
        "63",
        "3--1",
        "0--1",
        "1\x1c",
        "4 5",
    ]
    for _ in range(4000):
        text = ",".join(rng.choice(tokens) for _ in range(rng.randint(1, 4)))
        text = rng.choice(("", "\n", " ")) + text + rng.choice(("", "\n"))
        assert parse_cpu_list(text) == _ref_cpu_list(text), repr(text)


# ---------------------------------------------------------------------------
# The batch environment


def _ref_expand(value: str) -> tuple[int, ...] | None:
    counts: list[int] = []
    for group in value.split(","):
        match = re.fullmatch(r"\s*(\d+)(?:\(x(\d+)\))?\s*", group)
        if match is None:
            return None
        counts += [int(match.group(1))] * int(match.group(2) or 1)
    return tuple(counts)


def test_slurm_cpus_per_node_against_a_plain_expansion() -> None:
    rng = random.Random(17)
    groups = ["72(x2)", "36", "2(x3)", "1", "0", "4(x1)", "x", "(x2)", "3(x)", "5(x2", " 8 ", ""]
    for _ in range(3000):
        packed = ",".join(rng.choice(groups) for _ in range(rng.randint(1, 3)))
        counts = _ref_expand(packed)
        assert expand_cpus_per_node(packed) == counts, packed
        environ = {"SLURM_JOB_CPUS_PER_NODE": packed}
        node = rng.choice((None, "0", "1", "2", "5", " 1", "x"))
        if node is not None:
            environ["SLURM_NODEID"] = node
        index = int(node) if node is not None and node.strip().isdecimal() else None
        if counts is None:
            expected = None
        elif index is not None:
            expected = counts[index] if index < len(counts) else None
        else:  # no SLURM_NODEID (or not a number): one entry needs no index
            expected = counts[0] if len(counts) == 1 else None
        assert cpus_on_node(environ)[0] == expected, environ
    assert expand_cpus_per_node("2(x3),1") == (2, 2, 2, 1)
    assert cpus_on_node({"SLURM_CPUS_ON_NODE": "6", "SLURM_JOB_CPUS_PER_NODE": "x"})[0] == 6


@settings(derandomize=True, max_examples=400, deadline=None)
@given(
    st.binary(max_size=12)
    | st.lists(
        st.sampled_from(
            [b"a", b"\xc3\xa9", b"\xc3", b"\xa9", b"\xe2\x80", b"\xed\xb3\x80", b"\xff", b"\\x"]
        ),
        max_size=6,
    ).map(b"".join)
)
def test_json_text_against_the_bytes_it_stands_for(raw: bytes) -> None:
    # An environment variable as Python decodes it (PEP 383) against the bytes read with
    # backslashreplace; text without a lone surrogate takes the one-test path unchanged.
    text = raw.decode("utf-8", "surrogateescape")
    assert json_text(text) == raw.decode("utf-8", "backslashreplace")
    json_text(text).encode("utf-8")  # writable


_UUIDS = [
    "GPU-43f44b1c-0000-0000-0000-000000000000",
    "GPU-43f55b1c-0000-0000-0000-000000000001",
    "GPU-9a000000-0000-0000-0000-000000000002",
    None,
]


def _ref_visible(value: str | None, uuids: list[str | None], migs: set[str]) -> list[int] | None:
    """The rule, entry by entry: None for "CUDA fails" (a repeated ordinal)."""
    if value is None:
        return list(range(len(uuids)))
    chosen: list[int] = []
    ordinals: list[int] = []
    for raw in value.split(","):
        entry = raw.strip()
        match = re.match(r"\+?([0-9]+)", entry)
        ordinal = int(match.group(1)) if match else None
        if ordinal is not None and ordinal in ordinals:
            return None
        if entry[:4].upper() == "MIG-" and entry not in ("MIG-bad",):
            continue  # a MIG instance that exists (or is not checked) is skipped
        if ordinal is not None:
            index = ordinal if ordinal < len(uuids) else None
        elif entry[:4].upper() == "GPU-" and len(entry) > 4:
            hits = [i for i, u in enumerate(uuids) if u and u.lower().startswith(entry.lower())]
            index = hits[0] if len(hits) == 1 else None
        else:
            index = None
        if index is None or index in chosen:
            break
        chosen.append(index)
        if ordinal is not None:
            ordinals.append(ordinal)
    return chosen


def test_select_visible_against_the_rule_entry_by_entry() -> None:
    rng = random.Random(19)
    entries = [
        "0",
        "1",
        "2",
        "3",
        "4",
        "-1",
        "00",
        "+0",
        "0x0",
        " 1",
        "GPU-43f4",
        "GPU-43f",
        "gpu-9A",
        "GPU-",
        "43f44b1c",
        "MIG-abc",
        "MIG-bad",
        "x",
        "",
        "\u0661",
    ]

    def mig_exists(entry: str) -> bool:
        return entry != "MIG-bad"

    for _ in range(3000):
        value = (
            None
            if rng.random() < 0.05
            else ",".join(rng.choice(entries) for _ in range(rng.randint(1, 4)))
        )
        chosen, _ = select_visible(value, _UUIDS, mig_exists)
        expected = _ref_visible(value, _UUIDS, set())
        assert [i for i, _ in chosen] == (expected or []), value


@settings(derandomize=True, max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.none() | st.integers(-3, 3) | st.floats(-3, 3), st.text(max_size=3))))
def test_smallest_is_the_first_minimum(candidates: list[tuple[Any, str]]) -> None:
    known = [(v, w) for v, w in candidates if v is not None]
    expected = min(known, key=lambda c: c[0]) if known else (None, "")
    assert smallest(candidates) == expected


def _parts(path: str) -> list[str]:
    return [p for p in path.split("/") if p]


def _ref_walk(path: str, mounts: list[Mount]) -> list[str]:
    """Each group from ``path`` up (past its own leading ``..``, up to the deepest ``..`` of
    a mount's ROOT), read through the first mount, /sys/fs/cgroup ones first, whose ROOT's
    components begin the group's and leave no ``..`` in the rest."""
    names = _parts(path)
    ups = len(names) - len(list(itertools.dropwhile(lambda p: p == "..", names)))
    top = max(len(list(itertools.takewhile(lambda p: p == "..", _parts(m.root)))) for m in mounts)
    groups = [names[:keep] for keep in range(len(names), ups - 1, -1)]
    groups += [[".."] * more for more in range(ups + 1, top + 1)]
    ordered = sorted(mounts, key=lambda m: not (m.mount_point + "/").startswith("/sys/fs/cgroup/"))
    dirs = []
    for group in groups:
        for mount in ordered:
            root = _parts(mount.root)
            rest = group[len(root) :]
            if group[: len(root)] == root and ".." not in rest:
                dirs.append("/".join([mount.mount_point.rstrip("/"), *rest]) or "/")
                break
    return dirs


def _leading_ups(path: str) -> str:
    """``path`` with its ``..`` in front, as the kernel writes a path relative to a namespace."""
    return "/" + "/".join(sorted(_parts(path), key=lambda p: p != ".."))


def test_cgroup_walk_against_the_components_of_each_ancestor() -> None:
    rng = random.Random(29)
    pieces = ["a", "b", "..", "job_1", "step_0"]
    points = ["/sys/fs/cgroup/memory", "/sys/fs/cgroup", "/host/sys/fs/cgroup", "/sys/fs/cgroupX"]
    for _ in range(3000):
        path = "/" + "/".join(rng.choice(pieces) for _ in range(rng.randint(0, 4)))
        if rng.random() < 0.5:
            path = _leading_ups(path)
        mounts = [
            Mount(
                mount_point=rng.choice(points),
                root=_leading_ups(
                    "/" + "/".join(rng.choice(pieces) for _ in range(rng.randint(0, 2)))
                ),
                fs_type="cgroup",
                source="cgroup",
                mount_options=("rw",),
                super_options=("rw", "memory"),
            )
            for _ in range(rng.randint(1, 3))
        ]
        located = Cgroups("/nonexistent", (("4", ("memory",), path),), tuple(mounts)).locate(
            "memory"
        )
        assert isinstance(located, Located)
        expected = _ref_walk(path, mounts)
        if expected:
            assert list(located.dirs) == expected, (path, mounts)
        else:  # no mount shows any group: the mount point alone, with a note why
            assert len(located.dirs) == 1 and located.note, (path, mounts)


# ---------------------------------------------------------------------------
# CPUs read one by one


def test_physical_cores_and_clock_against_every_cpu_read(tmp_path: Path) -> None:
    rng = random.Random(23)
    for case in range(25):
        fake = FakeRoot(tmp_path / f"r{case}")
        cpus = list(range(rng.randint(1, 12)))
        smt = rng.choice((1, 2, 4))
        groups = [cpus[i : i + smt] for i in range(0, len(cpus), smt)]
        style = rng.choice(("core_cpus_list", "thread_siblings_list", "triple"))
        for core, group in enumerate(groups):
            listed = ",".join(map(str, group)) if rng.random() < 0.5 else f"{group[0]}-{group[-1]}"
            for cpu in group:
                if style == "triple":
                    fake.topology(cpu, package=core % 2, core=core // 2)
                else:
                    fake.topology(cpu, **{style: listed})
        freq = {
            cpu: (
                rng.randint(400, 2000) * 1000 + rng.choice((0, 1, 499, 500)),
                rng.randint(2000, 6000) * 1000 + rng.choice((0, 1, 500)),
            )
            for cpu in cpus
        }
        cppc = {
            cpu: (rng.randint(1000, 4000), rng.randint(100, 254), rng.randint(50, 100))
            for cpu in cpus
        }
        for cpu in cpus:
            fake.cpufreq(cpu, *freq[cpu])
            fake.cppc(cpu, nominal_freq=cppc[cpu][0], highest=cppc[cpu][1], nominal=cppc[cpu][2])
        affine = tuple(sorted(rng.sample(cpus, rng.randint(1, len(cpus)))))
        touched = {i for i, group in enumerate(groups) if set(group) & set(affine)}
        assert physical_cores(fake.root, affine)[0] == len(touched)
        low, high, _ = cpufreq_range(fake.root, affine)
        with localcontext() as ctx:
            ctx.rounding = ROUND_HALF_EVEN
            assert low == float(round(Decimal(min(freq[c][0] for c in affine)) / 1000, 3))
            assert high == float(round(Decimal(max(freq[c][1] for c in affine)) / 1000, 3))
        best = max(Fraction(f * h, n) for f, h, n in (cppc[c] for c in affine))
        assert cppc_max_mhz(fake.root, affine)[0] == float(round(best))
