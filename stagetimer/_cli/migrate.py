"""``stagetimer migrate --root DIR --from TEMPLATE --to TEMPLATE``: copy sidecars from an
older directory layout to the canonical one, once."""

from __future__ import annotations

import argparse
import collections
from collections.abc import Sequence
from typing import TYPE_CHECKING

from stagetimer._cli.stderr import error
from stagetimer._escape import escape_text

if TYPE_CHECKING:
    from stagetimer._store.migrate import Outcome

__all__ = ["run"]

_VERBS = {
    "copied": ("copied", "would copy"),
    "merged": ("merged", "would merge"),
}
#: each action's words in a dry run's summary
_DRY_RUN = {a: verbs[True] for a, verbs in _VERBS.items()} | {"unchanged": "up to date"}


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Migrate, a line per directory and a summary; 1 if one was refused or failed."""
    from stagetimer._errors import TemplateError
    from stagetimer._store.migrate import migrate

    try:
        outcomes = migrate(args.root, args.source, args.destination, dry_run=args.dry_run)
    except TemplateError as exc:
        parser.error(str(exc))
    except NotADirectoryError as exc:
        error("migrate", str(exc))
        return 1
    for outcome in outcomes:
        _say(outcome, args.dry_run)
    counts = collections.Counter(o.action for o in outcomes)
    print(_summary(outcomes, counts, args))
    return 1 if counts.get("refused") or counts.get("failed") else 0


def _say(outcome: Outcome, dry_run: bool) -> None:
    """One line for one directory: on standard output if done, on standard error if not."""
    if outcome.action in _VERBS:
        verb = _VERBS[outcome.action][dry_run]
        print(escape_text(
            f"{verb} {outcome.source} -> {outcome.destination} ({outcome.details})"
        ))
    elif outcome.action == "unchanged":
        print(escape_text(
            f"up to date: {outcome.destination} already holds what {outcome.source} has"
        ))
    else:
        target = f" -> {outcome.destination}" if outcome.destination else ""
        error("migrate", f"{outcome.action} {outcome.source}{target}: {outcome.details}")


def _summary(outcomes: Sequence[Outcome], counts: collections.Counter[str],
             args: argparse.Namespace) -> str:
    written = counts["copied"] + counts["merged"]
    if not outcomes:
        return f"nothing to migrate: no sidecars under {args.root} match {args.source!r}"
    if written == 0 and counts.get("unchanged"):
        return (
            f"nothing changed: all {counts['unchanged']} destination(s) already hold their "
            "sources' stages"
        )
    if args.dry_run:
        return f"dry run, nothing written: {_would(counts)}"
    return ", ".join(f"{n} {action}" for action, n in counts.items())


def _would(counts: collections.Counter[str]) -> str:
    """What a dry run would do, action by action: ``would copy 2, up to date 1``."""
    return ", ".join(f"{_DRY_RUN.get(a, a)} {n}" for a, n in counts.items())
