"""``recover``: folding rescue files back into ``timings.json``, trusting them no more
than a sidecar.

A recorder keeps, per process, a rescue file beside the sidecar holding exactly its
records not yet saved (``_record/rescue_file.py``). ``recover(directory)`` (``stagetimer
recover DIR``) folds the files whose writer is gone back into ``timings.json``:

- Rescued records are *replayed by when they started* (``rules.replay_run``): one
  newer than what is stored is applied by the replacement rules as its save would have
  been (a rerun's records are stored), one older than the run of its place (stage,
  ``run_idx``, ``label``, ``rank``) is superseded, so a stale sequential ``run_idx=0``
  never resets a stage that a rerun filled, nor an upsert replaces a newer run. Two
  identical records are two records. A record that cannot be ordered against the stored
  run of its place (one of the two has no ``started_at``) is never dropped in silence:
  it stays in its file, named, until ``prefer`` says which to keep.
- A file whose writer still runs, or cannot be proven dead (another host, boot or pid
  namespace: ``_store/processes.py``), is left alone and named: that process saves or
  rewrites its records itself. A file is removed under the sidecar's lock, and a live
  writer checks for it under the same lock, so nothing is stored twice or lost.
- Content is checked like a sidecar's (``rescue_content.py``); a bad record or file is
  named and skipped, the others are folded in.
- A file owned by another user than ``timings.json``'s owner (or root) is named and
  left alone unless the caller names that user in ``owners``.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import stat
from collections.abc import Iterable
from typing import Any, Literal

import attrs

from stagetimer._errors import (
    InvalidRecordError,
    InvalidSettingError,
    InvalidTypeError,
    SidecarCorruptError,
)
from stagetimer._format import (
    HARDWARE_FILE,
    RESCUE_SUFFIX,
    TIMINGS_FILE,
    is_rescue_name,
    takes_expected_runs,
)
from stagetimer._settings import check_lock_timeout
from stagetimer._store.leftovers import FOREIGN_AGE, written_ago
from stagetimer._store.owner import Liveness, liveness
from stagetimer._store.parse import parse_hardware, parse_timings
from stagetimer._store.processes import is_pid, user_name
from stagetimer._store.processes import liveness as process_liveness
from stagetimer._store.rescue_content import RescueContent, RescueRecord, read_rescue
from stagetimer._store.rules import is_stage, replace_place, replay_run
from stagetimer._store.sidecar import (
    UpdateOptions,
    add_descriptions,
    timings_bytes,
    update_file,
)

__all__ = ["PREFER", "REWRITTEN", "Prefer", "Recovered", "inode", "recover", "rescue_files"]

#: What ``recover(prefer=...)`` keeps where a rescued record and the stored run of its
#: place cannot be ordered: None keeps both apart (the rescue file stays, named).
Prefer = Literal["rescued", "stored"] | None
PREFER = ("rescued", "stored")

@attrs.frozen
class Recovered:
    """What ``recover`` did with one rescue file.

    ``stored``: records stored into ``timings.json``; ``already``: records stored
    before (the same record or attempt) or superseded by a run of their place (stage,
    ``run_idx``, ``label``, ``rank``) that started later;
    ``refused``: one line per record no writer could have written, or for the whole
    file when it does not parse (never stored; the file is then kept); ``skipped``: why
    the file was left alone by design (its writer runs, another user owns it, it is a
    symbolic link), else None; ``unordered``: one line per record nothing orders against
    the stored run of its place (the file is then kept: ``recover(prefer=...)``). The
    file is removed when it was folded in with nothing refused or unordered.
    """

    path: str
    stored: int
    already: int
    refused: tuple[str, ...] = ()
    skipped: str | None = None
    #: one line per record that cannot be ordered against the stored run of its place
    #: (one of the two has no ``started_at``): kept in the file, which then stays,
    #: until ``prefer`` says which one is kept
    unordered: tuple[str, ...] = ()


def rescue_files(directory: str) -> list[str]:
    """The rescue files of an artifact directory, oldest name first."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    return sorted(
        os.path.join(directory, n)
        for n in names
        if is_rescue_name(n)
    )


def _uid_of(owner: str | int) -> int:
    if isinstance(owner, int) and not isinstance(owner, bool):
        return owner
    if isinstance(owner, str):
        try:
            return pwd.getpwnam(owner).pw_uid
        except KeyError:
            if owner.isdecimal():
                return int(owner)
    raise InvalidTypeError(f"owner {owner!r} is not valid: expected a user name or a uid", owner)


def _trusted(directory: str, owners: Iterable[str | int]) -> set[int]:
    """Root, the owner of ``timings.json`` (or, before it exists, the caller), and ``owners``."""
    try:
        uid = os.lstat(os.path.join(directory, TIMINGS_FILE)).st_uid
    except OSError:
        uid = os.geteuid()
    return {0, uid, *(_uid_of(o) for o in owners)}


#: Why a file is left alone while a process that may be its writer runs, by its liveness.
_WRITER_MAY_RUN = {
    "live": (
        "its writer, process {pid} on this host, still runs: it saves or rescues these "
        "records itself (run recover again once it has ended)"
    ),
    "hidden": (
        "process {pid} on this host runs as another user whose processes /proc hides "
        "from this one (hidepid): it may be its writer, still saving or rescuing these "
        "records (run recover as that user, or again once it has ended)"
    ),
}


def _why_left_alone(content: RescueContent, trusted: set[int]) -> str | None:
    """Why a rescue file must not be folded now, or None."""
    if content.uid not in trusted:  # replaced since it was first looked at
        return _not_trusted(content.uid)
    owner = content.owner
    if owner is None:  # its writer is only named by a pid, never "elsewhere"
        return _writer_may_run(_legacy_liveness(content.path), "?")
    state = liveness(owner)
    if state == "elsewhere":
        return _too_recent(content.mtime, owner)
    return _writer_may_run(state, owner.get("pid"))


def _writer_may_run(state: Liveness, pid: object) -> str | None:
    """Why a file is left alone while process ``pid``, in ``state``, may be its writer;
    None when no such process runs."""
    template = _WRITER_MAY_RUN.get(state)
    return None if template is None else template.format(pid=pid)


def _too_recent(mtime: float, owner: dict[str, Any]) -> str | None:
    """Why a file written on another host is left alone: it was written too recently
    to be taken as left over; None once it is."""
    age = written_ago(mtime)
    if age >= FOREIGN_AGE:
        return None
    return (
        f"written {age:.0f} s ago by process {owner.get('pid')} on host "
        f"{owner.get('host')!s}, whose processes this host cannot see: taken as "
        f"left over {FOREIGN_AGE:.0f} s after its last write (or run recover there)"
    )


def _legacy_liveness(path: str) -> Liveness:
    """A file from before rescue files named their writer: its pid is in its name (no
    start time: a pid that runs, not a zombie, is taken as its writer)."""
    stem = os.path.basename(path)[: -len(RESCUE_SUFFIX)]
    pid_text = stem.rsplit("-", 1)[-1]
    pid = int(pid_text) if pid_text.isdecimal() else None
    return process_liveness(pid, None) if is_pid(pid) else "dead"


@attrs.define
class _Fold:
    """One rescue file being folded in: its records still to put back, what came of them."""

    content: RescueContent
    records: list[RescueRecord]
    refused: list[str]
    stored: int = 0
    already: int = 0
    skipped: str | None = None
    unordered: list[str] = attrs.Factory(list)

    def result(self) -> Recovered:
        return Recovered(self.content.path, self.stored, self.already, tuple(self.refused),
                         self.skipped, tuple(self.unordered))

    def refuse_undescribed(self, known: set[str]) -> None:
        """Refuse the records whose ``hardware_id`` is not in ``known`` (described nowhere)."""
        unresolved = [r for r in self.records if r.run.get("hardware_id") not in (None, *known)]
        for r in unresolved:
            self.refused.append(
                f"stage {r.stage!r}: its hardware_id {r.run['hardware_id']!r} is described "
                f"neither in the rescue file nor in {HARDWARE_FILE}"
            )
        self.records = [r for r in self.records if r not in unresolved]

    def count(self, data: dict[str, Any], record: RescueRecord, verdict: str,
              prefer: Prefer) -> None:
        """Count ``record`` by what its replay did (``verdict``, not ``"refused"``)."""
        if verdict == "unordered" and prefer is None:
            self.unordered.append(_unordered(record))
        elif verdict == "stored":
            self.stored += 1
            _note_expected(data, record, self.content.expected_runs)
        else:
            self.already += 1


def _fold(
    directory: str, contents: list[RescueContent], lock_timeout: float, prefer: Prefer
) -> list[Recovered]:
    """Put the records of ``contents`` back where missing: one save of the hardware (and
    software) descriptions, then one of ``timings.json``, for all files together. A file
    with nothing refused or unordered is then removed."""
    folds = [_Fold(c, list(c.records), list(c.refused)) for c in contents]
    _fold_hardware(directory, folds, lock_timeout)
    _fold_timings(directory, folds, lock_timeout, prefer)
    return [fold.result() for fold in folds]


def _fold_hardware(directory: str, folds: list[_Fold], lock_timeout: float) -> None:
    """Add the descriptions the records need to ``timings_hardware.json``.

    A record whose ``hardware_id`` is described nowhere (in no rescue file, not in the
    sidecar) is then refused and left out of its fold.
    """
    needed, software = _descriptions_needed(folds)
    known: set[str] = set()

    def change_hardware(data: dict[str, Any]) -> str | None:
        known.update(data["hardware"], needed)
        return add_descriptions(data, needed, software)

    hardware_path = os.path.join(directory, HARDWARE_FILE)
    update_file(hardware_path, parse_hardware, change_hardware, lock_timeout)
    for fold in folds:
        fold.refuse_undescribed(known)


def _descriptions_needed(folds: list[_Fold]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The hardware and software descriptions the rescue files hold for their records."""
    needed: dict[str, Any] = {}
    software: dict[str, Any] = {}
    for fold in folds:
        runs = [r.run for r in fold.records]
        needed.update(_described(runs, "hardware_id", fold.content.hardware))
        software.update(_described(runs, "software_id", fold.content.software))
    return needed, software


def _described(
    runs: list[dict[str, Any]], key: str, descriptions: dict[str, Any]
) -> dict[str, Any]:
    """The ``descriptions`` the ``key`` (``hardware_id``, ``software_id``) of ``runs`` names."""
    return {run[key]: descriptions[run[key]] for run in runs if run.get(key) in descriptions}


def _fold_timings(
    directory: str, folds: list[_Fold], lock_timeout: float, prefer: Prefer
) -> None:
    """Replay every rescued record into ``timings.json``, oldest first (``_put_back``),
    in one save; under the same lock, remove each file whose records are all stored or
    provably older than what is stored (its writer, should it still run, finds its file
    gone at its next save, under this lock, and stores none of them again)."""
    def change(data: dict[str, Any]) -> bytes | None:
        for fold in folds:
            if inode(fold.content.path) != fold.content.ino:
                # Rewritten (or removed) by its writer since it was read: its writer runs
                # and owns its records; nothing of the file read is stored.
                fold.records, fold.skipped = [], REWRITTEN
        _put_back(data, folds, prefer)
        return timings_bytes(data) if any(fold.stored for fold in folds) else None

    def settled() -> None:
        for fold in folds:
            if not fold.refused and not fold.unordered and fold.skipped is None:
                _remove(fold.content)

    update_file(os.path.join(directory, TIMINGS_FILE), parse_timings, change, lock_timeout,
                options=UpdateOptions(after=settled))


REWRITTEN = "rewritten or removed by its writer while recover ran: that writer runs"


def inode(path: str) -> int | None:
    """The inode at ``path`` (not followed), None when there is nothing: which rescue
    file a name holds now (``recover`` and the writer both go by it)."""
    try:
        return os.lstat(path).st_ino
    except OSError:
        return None


def _remove(content: RescueContent) -> None:
    """Remove a folded rescue file, unless its writer replaced it since it was read (the
    new file holds records this fold did not see)."""
    if inode(content.path) == content.ino:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(content.path)


def _put_back(data: dict[str, Any], folds: list[_Fold], prefer: Prefer) -> None:
    """Replay the records of ``folds`` as their saves would have, oldest first
    (``rules.replay_run``); count them stored, already there (or provably older),
    unordered (kept, unless ``prefer`` decides), or refused."""
    order = sorted(
        ((fold, record) for fold in folds for record in fold.records),
        key=lambda pair: _started(pair[1].run),
    )
    made_by: dict[int, _Fold] = {}  # id of a run put back -> its fold
    for fold, record in order:
        before = _runs_before(data.get(record.stage), fold, made_by)
        verdict = _replay(data, fold, record, prefer, before)
        if verdict == "stored":
            made_by[id(record.run)] = fold
        if verdict != "refused":
            fold.count(data, record, verdict, prefer)


def _runs_before(stage: Any, fold: _Fold, made_by: dict[int, _Fold]) -> list[Any]:
    """The runs of ``stage`` before the records of ``fold`` (those it put back are not)."""
    runs: list[Any] = stage["runs"] if is_stage(stage) else []
    return [r for r in runs if made_by.get(id(r)) is not fold]


def _replay(
    data: dict[str, Any], fold: _Fold, record: RescueRecord, prefer: Prefer, before: list[Any]
) -> str:
    """``rules.replay_run``'s verdict on ``record``, ``"stored"`` where ``prefer`` puts an
    unordered one in place, or ``"refused"`` (the reason added to ``fold.refused``)."""
    try:
        policy = record.policy or fold.content.policy
        verdict = replay_run(data, record.stage, record.run, policy, before)
        if verdict == "unordered" and prefer == "rescued":
            replace_place(data, record.stage, record.run)
            verdict = "stored"
    except InvalidRecordError as exc:
        fold.refused.append(str(exc))
        return "refused"
    return verdict


def _unordered(record: RescueRecord) -> str:
    """One line for a rescued record that cannot be ordered against the stored run."""
    run = record.run
    place = ", ".join(f"{k} {run.get(k)!r}" for k in ("run_idx", "label", "rank")
                      if run.get(k) is not None)
    return (
        f"stage {record.stage!r}" + (f" ({place})" if place else "")
        + f": {TIMINGS_FILE} holds a run of the same place and one of the two has no "
        "started_at, so nothing tells which is newer"
    )


def _started(run: dict[str, Any]) -> str:
    value = run.get("started_at")
    return value if isinstance(value, str) else ""


def _note_expected(data: dict[str, Any], record: RescueRecord, expected: int | None) -> None:
    """The writer's ``expected_runs``, where the stage has none yet (never replaced)."""
    if expected is not None and takes_expected_runs(record.stage, record.run.get("run_idx")):
        data[record.stage].setdefault("expected_runs", expected)


def _not_trusted(uid: int) -> str:
    return (
        f"owned by {user_name(uid)}, not by the owner of {TIMINGS_FILE}: not trusted (fold it "
        "only if you trust that user: recover(..., owners=[user]) or stagetimer recover "
        "--trust-owner USER)"
    )


def _judge(path: str, trusted: set[int]) -> RescueContent | Recovered:
    """The rescue file's content when it may be folded now, else what was done with it."""
    why = _why_not_read(path, trusted)
    if why is not None:
        return Recovered(path, 0, 0, skipped=why)
    try:
        content = read_rescue(path)
    except SidecarCorruptError as exc:
        return Recovered(path, 0, 0, refused=(f"the whole file: {exc.problem}",))
    except FileNotFoundError:
        return Recovered(path, 0, 0, skipped=_GONE)
    why = _why_left_alone(content, trusted)
    if why is not None:
        return Recovered(path, 0, 0, skipped=why)
    return content


_GONE = "removed meanwhile (its writer saved it)"


def _why_not_read(path: str, trusted: set[int]) -> str | None:
    """Why the rescue file at ``path`` is not even read (gone, a link, not trusted)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return _GONE
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link: never read through"
    if st.st_uid not in trusted:  # not even parsed
        return _not_trusted(st.st_uid)
    return None


def _recover_all(
    directory: str, lock_timeout: float, trusted: set[int], prefer: Prefer
) -> list[Recovered]:
    """Judge every rescue file first, then fold those that may be folded in together."""
    judged = [_judge(path, trusted) for path in rescue_files(directory)]
    contents = [j for j in judged if isinstance(j, RescueContent)]
    folded = iter(_fold(directory, contents, lock_timeout, prefer) if contents else [])
    return [next(folded) if isinstance(j, RescueContent) else j for j in judged]


def recover(
    directory: str | os.PathLike[str],
    *,
    lock_timeout: float = 60.0,
    owners: Iterable[str | int] = (),
    prefer: Prefer = None,
) -> list[Recovered]:
    """Fold the rescue files of ``directory`` back into its ``timings.json``.

    Each rescued record is replayed, oldest first, as its save would have been (a newer
    run is never replaced, a newer rescued record never dropped), under the file's
    lock. A file is left alone and named (``Recovered.skipped``) while the process that
    wrote it runs (or cannot be proven dead), when it does not parse, or when another user than
    the owner of ``timings.json`` (or root) owns it, unless ``owners`` names that user
    (a name or a uid). A record no writer could have written is refused and named
    (``Recovered.refused``), never stored; the file then stays. A record that cannot be
    ordered against the stored run of its place (one of the two has no ``started_at``)
    is named (``Recovered.unordered``) and kept in its file, which stays, unless
    ``prefer`` says which to keep: ``"rescued"`` puts it in place of the stored run,
    ``"stored"`` drops it. A file folded in whole
    is removed, so running it again changes nothing. Returns one ``Recovered`` per
    rescue file. Raises ``SidecarCorruptError`` for a sidecar that does not parse
    (nothing written), ``LockTimeoutError``, ``InvalidSettingError`` (a ``ValueError``) for
    a ``lock_timeout`` that is not a number of seconds >= 0 (as ``Recorder``'s),
    ``InvalidTypeError`` (a ``TypeError``) for a ``directory`` that is not a path or an
    owner that is not a user, ``InvalidSettingError`` for a ``prefer`` not in ``PREFER``,
    ``NotADirectoryError``/``FileNotFoundError`` for a path that is not a directory.

    >>> recover("exports/pursuit/classic_3/ippo")
    [Recovered(path='.../timings.rescue-20261129T222802123456Z-4242-1a2b3c4d.json', \
stored=2, already=0, refused=(), skipped=None)]
    """
    if isinstance(directory, bytes) or not isinstance(directory, (str, os.PathLike)):
        raise InvalidTypeError(
            f"directory {directory!r} is not valid: expected a str or os.PathLike", directory
        )
    timeout = check_lock_timeout(lock_timeout)
    if prefer is not None and prefer not in PREFER:
        raise InvalidSettingError(
            f"prefer {prefer!r} is not valid: expected 'rescued', 'stored' or None", prefer
        )
    if isinstance(owners, (str, int)):
        owners = [owners]
    path = _existing_directory(os.fspath(directory))
    trusted = _trusted(path, owners)
    return _recover_all(path, timeout, trusted, prefer)


def _existing_directory(path: str) -> str:
    """``path``; ``NotADirectoryError`` or ``FileNotFoundError`` when it is no directory."""
    if not os.path.isdir(path):
        if os.path.lexists(path):
            raise NotADirectoryError(f"{path}: not a directory")
        raise FileNotFoundError(f"{path}: no such directory")
    return path
