"""``stagetimer migrate``: copy the sidecars of an older directory layout to the canonical one.

>>> migrate(".", "gridworlds/pursuit/{scenario}/algorithms/{algo}",
...         "gridworlds/pursuit/{scenario}/{algo}")

Templates are relative to the root; ``{name}`` matches exactly one path component
and every placeholder appears on both sides. Sidecars are copied, never moved.
Where the destination already has sidecars, the stages it lacks are added, its
own stages are kept and the hardware entries are united, under the same locks and
atomic writes as recording (hardware first, so every id resolves). A second run
finds nothing to add and writes nothing. Nothing outside the root is read or
written: a path that resolves outside it (a symlink pointing out) is refused.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from typing import Any

import attrs

from stagetimer._errors import SchemaVersionError, SidecarCorruptError, TemplateError
from stagetimer._format import HARDWARE_FILE, LEGACY_KEYS, TIMINGS_FILE
from stagetimer._store.parse import parse_hardware, parse_timings, read_bytes
from stagetimer._store.rules import is_stage
from stagetimer._store.sidecar import (
    add_descriptions,
    dumps_hardware,
    dumps_timings,
    update_file,
)

__all__ = ["Outcome", "Template", "TemplateError", "check_templates", "migrate", "parse_template"]

_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
Parse = Callable[[str, bytes | None], dict[str, Any]]
#: (the file exists, its parsed data, edited in place) -> new text, or None: nothing to write
Change = Callable[[bool, dict[str, Any]], "str | None"]


@attrs.frozen
class Template:
    """A parsed template: one matcher per path component (None for a literal one)."""

    text: str
    components: tuple[str, ...]
    matchers: tuple[re.Pattern[str] | None, ...]
    names: tuple[str, ...]

    def fill(self, values: dict[str, str]) -> str:
        """The relative path with every placeholder replaced by its value."""
        return "/".join(
            _PLACEHOLDER.sub(lambda m: values[m.group(1)], c) for c in self.components
        )


def parse_template(text: str, option: str) -> Template:
    """Parse one template; ``TemplateError`` names ``option`` and what is wrong."""
    stripped = text.rstrip("/")
    if not stripped:
        raise TemplateError(f"{option} is empty")
    if stripped.startswith("/"):
        raise TemplateError(f"{option} {text!r} must be relative to --root")
    components = tuple(stripped.split("/"))
    names: list[str] = []
    matchers = tuple(_matcher(component, names, f"{option} {text!r}") for component in components)
    return Template(stripped, components, matchers, tuple(names))


def _matcher(component: str, names: list[str], where: str) -> re.Pattern[str] | None:
    """The pattern of one path component, None for a literal one; its placeholders are
    appended to ``names`` (those of the components before it, for the repeat check)."""
    if component in ("", ".", ".."):
        raise TemplateError(
            f"{where} has an empty, '.' or '..' component; templates stay inside --root"
        )
    pattern, pos = "", 0
    for m in _PLACEHOLDER.finditer(component):
        name = m.group(1)
        _check_placeholder(name, names, where)
        names.append(name)
        pattern += re.escape(component[pos : m.start()]) + f"(?P<{name}>.+?)"
        pos = m.end()
    literal = _PLACEHOLDER.sub("", component)
    if "{" in literal or "}" in literal:
        raise TemplateError(f"{where} has an unbalanced brace in {component!r}")
    return re.compile(pattern + re.escape(component[pos:])) if pos else None


def _check_placeholder(name: str, names: list[str], where: str) -> None:
    """Refuse a placeholder that is not an identifier or that ``names`` already holds."""
    if not name.isidentifier():
        raise TemplateError(f"{where}: {{{name}}} is not a valid placeholder")
    if name in names:
        raise TemplateError(f"{where} uses {{{name}}} twice")


def check_templates(source: str, destination: str) -> tuple[Template, Template]:
    """Parse both templates and check they use the same placeholders and differ."""
    src = parse_template(source, "--from")
    dst = parse_template(destination, "--to")
    _check_names_kept(src, dst, "--from", "--to")
    _check_names_kept(dst, src, "--to", "--from")
    if src.components == dst.components:
        raise TemplateError("--from and --to are the same template")
    return src, dst


def _check_names_kept(a: Template, b: Template, a_opt: str, b_opt: str) -> None:
    """Refuse placeholders of ``a`` that ``b`` does not use."""
    missing = [n for n in a.names if n not in b.names]
    if missing:
        names = ", ".join(f"{{{n}}}" for n in missing)
        raise TemplateError(
            f"{names} appears in {a_opt} but not in {b_opt}: every placeholder must "
            "appear on both sides"
        )


@attrs.frozen
class Outcome:
    """What happened (or would happen) to one matched directory.

    ``action`` is ``"copied"``, ``"merged"``, ``"unchanged"``, ``"refused"`` or ``"failed"``.
    """

    source: str
    destination: str | None
    action: str
    details: str = ""


def _inside(real_root: str, path: str) -> bool:
    real = os.path.realpath(path)
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def _walk(
    root: str, real_root: str, template: Template
) -> Iterator[tuple[str, dict[str, str]] | Outcome]:
    """The relative directories matching ``template`` with their values, or refusals."""
    level: list[tuple[str, dict[str, str]]] = [("", {})]
    for component, matcher in zip(template.components, template.matchers, strict=True):
        following: list[tuple[str, dict[str, str]]] = []
        for child, found in _children(root, level, component, matcher):
            path = os.path.join(root, child)
            if not os.path.isdir(path):
                continue
            if not _inside(real_root, path):
                why = f"resolves to {os.path.realpath(path)}, outside --root"
                yield Outcome(child, None, "refused", why)
                continue
            following.append((child, found))
        level = following
    yield from level


def _children(
    root: str, level: list[tuple[str, dict[str, str]]], component: str,
    matcher: re.Pattern[str] | None,
) -> Iterator[tuple[str, dict[str, str]]]:
    """The names one level below the directories of ``level`` (relative to ``root``) that
    match one template component, each with the values found so far."""
    for rel, values in level:
        for entry, found in _candidates(os.path.join(root, rel), component, matcher, values):
            yield (os.path.join(rel, entry) if rel else entry), found


def _candidates(
    directory: str, component: str, matcher: re.Pattern[str] | None, values: dict[str, str]
) -> list[tuple[str, dict[str, str]]]:
    """The names in ``directory`` that match one template component, each with the values
    found so far; a literal component names itself (whether it exists is checked after)."""
    if matcher is None:
        return [(component, values)]
    try:
        entries = sorted(os.listdir(directory))
    except OSError:
        return []
    return [
        (entry, {**values, **m.groupdict()})
        for entry in entries
        if (m := matcher.fullmatch(entry)) is not None
    ]


def _read(path: str, parse: Parse) -> tuple[bytes | None, dict[str, Any]]:
    raw = read_bytes(path)
    return raw, parse(path, raw)


def _verbatim(raw: bytes, data: dict[str, Any], dumps: Callable[[dict[str, Any]], str]) -> str:
    """The source's own text; re-encoded only when it is not UTF-8."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return dumps(data)


class _Merge:
    """The change one source makes to one destination directory; ``notes`` says what it did."""

    def __init__(self, src_dir: str) -> None:
        self.t_raw, self.timings = _read(os.path.join(src_dir, TIMINGS_FILE), parse_timings)
        self.h_raw, self.hardware = _read(os.path.join(src_dir, HARDWARE_FILE), parse_hardware)
        self.notes: dict[str, str] = {}
        #: whether something was added to an existing file (else: only copies)
        self.merged = False

    @property
    def empty(self) -> bool:
        return self.t_raw is None and self.h_raw is None

    def change_hardware(self, exists: bool, data: dict[str, Any]) -> str | None:
        if self.h_raw is None:
            return None
        entries = self.hardware["hardware"]
        software = self.hardware.get("software", {})
        if not exists:
            self.notes[HARDWARE_FILE] = _entries(len(entries), len(software))
            return _verbatim(self.h_raw, self.hardware, dumps_hardware)
        missing = len(entries.keys() - data["hardware"].keys())
        missing_software = len(software.keys() - data.get("software", {}).keys())
        content = add_descriptions(data, entries, software)
        if content is None:
            return None
        self.merged = True
        self.notes[HARDWARE_FILE] = "added " + _entries(missing, missing_software)
        return content

    def change_timings(self, exists: bool, data: dict[str, Any]) -> str | None:
        if self.t_raw is None:
            return None
        stages = _stage_names(self.timings)
        if not exists:
            self.notes[TIMINGS_FILE] = f"{len(stages)} stage{_s(len(stages))}"
            return _verbatim(self.t_raw, self.timings, dumps_timings)
        return self._add_stages(data, [k for k in stages if k not in data])

    def _add_stages(self, data: dict[str, Any], added: list[str]) -> str | None:
        """The destination's ``data`` with the source's stages ``added`` (None: none)."""
        own = len(_stage_names(data))
        if not added:
            return None
        # Top-level legacy values describe the writer of the source's runs: they go into
        # those runs, never beside the destination's own stages.
        legacy = {k: v for k, v in self.timings.items() if k in LEGACY_KEYS}
        for name in added:
            data[name] = _with_legacy(self.timings[name], legacy)
        self.merged = True
        self.notes[TIMINGS_FILE] = (
            f"added {len(added)} stage{_s(len(added))} ({', '.join(added)}), "
            f"kept {own} of its own"
        )
        return dumps_timings(data)


def _stage_names(timings: dict[str, Any]) -> list[str]:
    return [name for name, value in timings.items() if is_stage(value)]


def _with_legacy(stage: dict[str, Any], legacy: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``stage`` whose runs carry the ``legacy`` values they do not have.

    New run objects: a merge runs twice (a check without the lock, then under it) and
    must not change the source's data.
    """
    runs = [_filled(run, legacy) if isinstance(run, dict) else run for run in stage["runs"]]
    return {**stage, "runs": runs}


def _filled(run: dict[str, Any], legacy: dict[str, Any]) -> dict[str, Any]:
    return {**run, **{k: v for k, v in legacy.items() if k not in run}}


def _s(n: int) -> str:
    return "" if n == 1 else "s"


def _y(n: int) -> str:
    return "y" if n == 1 else "ies"


def _entries(hardware: int, software: int) -> str:
    """``2 hardware entries``, ``1 hardware entry, 1 software entry``, ``1 software entry``:
    the software part only where there is some, the hardware part unless only software."""
    said = [f"{hardware} hardware entr{_y(hardware)}"] if hardware or not software else []
    if software:
        said.append(f"{software} software entr{_y(software)}")
    return ", ".join(said)


def _update(dst_dir: str, name: str, parse: Parse, change: Change, timeout: float) -> None:
    """One locked, atomic save of ``dst_dir/name`` telling ``change`` whether the file exists."""

    def parse_boxed(path: str, raw: bytes | None) -> dict[str, Any]:
        return {"exists": raw is not None, "data": parse(path, raw)}

    def change_boxed(box: dict[str, Any]) -> str | None:
        return change(box["exists"], box["data"])

    update_file(os.path.join(dst_dir, name), parse_boxed, change_boxed, timeout)


def _apply(merge: _Merge, dst_dir: str, dry_run: bool, timeout: float) -> bool:
    """Apply (or, dry, compute) the merge; True when something was or would be written."""
    steps: tuple[tuple[str, Parse, Change], ...] = (
        (HARDWARE_FILE, parse_hardware, merge.change_hardware),
        (TIMINGS_FILE, parse_timings, merge.change_timings),
    )
    # A read without the lock first: a destination that already holds everything is
    # left alone entirely (not even a lock file), and a dry run stops here.
    for name, parse, change in steps:
        raw, data = _read(os.path.join(dst_dir, name), parse)
        change(raw is not None, data)
    if dry_run or not merge.notes:
        return bool(merge.notes)
    # Only the files that change are locked: a lock file is left beside each file a save
    # may write, so a source without a hardware sidecar leaves no timings_hardware.json.lock.
    changing = set(merge.notes)
    merge.notes.clear()
    merge.merged = False
    os.makedirs(dst_dir, exist_ok=True)
    for name, parse, change in steps:  # hardware first: every id in timings.json resolves
        if name in changing:
            _update(dst_dir, name, parse, change, timeout)
    return bool(merge.notes)


def _outside(real_root: str, directory: str) -> str | None:
    """Why ``directory`` or one of its sidecars would leave the root, or None."""
    for path in (directory, *(os.path.join(directory, n) for n in (TIMINGS_FILE, HARDWARE_FILE))):
        if not _inside(real_root, path):
            return f"{path} resolves to {os.path.realpath(path)}, outside --root"
    return None


def _migrate_one(
    root: str, real_root: str, rel: str, target: str, dry_run: bool, timeout: float
) -> Outcome | None:
    """Copy or merge one match; None when the matched directory holds no sidecar."""
    src_dir, dst_dir = os.path.join(root, rel), os.path.join(root, target)
    why = _outside(real_root, src_dir)
    if why is not None:
        return Outcome(rel, target, "refused", why)
    try:
        merge = _Merge(src_dir)
        if merge.empty:
            return None
        why = _refusal(real_root, src_dir, dst_dir)
        if why is not None:
            return Outcome(rel, target, "refused", why)
        changed = _apply(merge, dst_dir, dry_run, timeout)
    except (SidecarCorruptError, SchemaVersionError, OSError) as exc:
        return Outcome(rel, target, "failed", _failure(exc))
    return _outcome(rel, target, merge) if changed else Outcome(rel, target, "unchanged")


def _outcome(rel: str, target: str, merge: _Merge) -> Outcome:
    """What a merge that changed the destination did, its notes timings first."""
    notes = sorted(merge.notes.items(), key=lambda item: item[0] != TIMINGS_FILE)
    details = "; ".join(f"{name}: {note}" for name, note in notes)
    return Outcome(rel, target, "merged" if merge.merged else "copied", details)


def _refusal(real_root: str, src_dir: str, dst_dir: str) -> str | None:
    """Why the destination may not receive the source's sidecars, or None."""
    why = _outside(real_root, dst_dir)
    if why is None and os.path.realpath(src_dir) == os.path.realpath(dst_dir):
        why = "source and destination are one directory"
    return why


def _failure(exc: SidecarCorruptError | SchemaVersionError | OSError) -> str:
    """The ``details`` of a ``"failed"`` outcome: the file and what is wrong, with advice."""
    if isinstance(exc, SchemaVersionError):
        return f"{exc.path}: {exc.problem}; upgrade stagetimer to migrate it"
    if isinstance(exc, SidecarCorruptError):
        return f"{exc.path}: {exc.problem}"
    return str(exc)


def migrate(
    root: str,
    source: str,
    destination: str,
    *,
    dry_run: bool = False,
    lock_timeout: float = 60.0,
) -> list[Outcome]:
    """Copy the sidecars of every directory matching ``source`` to ``destination``.

    Raises ``TemplateError`` for bad templates and ``NotADirectoryError`` for a bad
    root; every other problem is an ``Outcome`` (``"refused"`` or ``"failed"``), and
    the other matches are still migrated.
    """
    src_t, dst_t = check_templates(source, destination)
    if not os.path.isdir(root):
        raise NotADirectoryError(f"--root {root}: no such directory")
    real_root = os.path.realpath(root)
    outcomes: list[Outcome] = []
    for item in _walk(root, real_root, src_t):
        if isinstance(item, Outcome):
            outcomes.append(item)
            continue
        rel, values = item
        outcome = _migrate_one(
            root, real_root, rel, dst_t.fill(values), dry_run, lock_timeout
        )
        if outcome is not None:
            outcomes.append(outcome)
    return outcomes
