"""``stagetimer watch PATH…``: a running suite, refreshed until everything expected is done.

On a terminal the screen is redrawn in place with ``rich`` where it is installed
(``pip install 'stagetimer[watch]'``; imported here only), else a block is printed per
refresh, as when standard output is a pipe; ``--json`` prints one JSON line per refresh.
What a refresh could not read goes to standard error (``--json``) or into the block, and
the next refresh tries again.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from stagetimer._cli.stderr import error

if TYPE_CHECKING:
    from stagetimer._analysis.watch import Snapshot

__all__ = ["run"]


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Watch ``args.paths``; 0 once everything expected is done (``--once``: after one
    refresh), 1 when a path cannot be read at the start."""
    from stagetimer._analysis.watch import Watcher

    unreadable = False
    for path in args.paths:
        try:
            os.stat(path)
        except OSError as exc:
            error("watch", f"{path}: {exc.strerror or exc}")
            unreadable = True
    if unreadable:
        return 1
    watcher = Watcher(args.paths, expect=args.expect)
    with contextlib.ExitStack() as cleanup:  # the live display stops however this ends
        show = _shower(args, cleanup)
        while True:
            snapshot = watcher.refresh()
            show(snapshot)
            if args.once or snapshot.complete:
                return 0
            time.sleep(args.interval)


def _shower(
    args: argparse.Namespace, cleanup: contextlib.ExitStack
) -> Callable[[Snapshot], None]:
    from stagetimer._render.watch import Drawn, snapshot_json, snapshot_lines, snapshot_text

    drawn = Drawn()  # what a refresh drew, for the next to reuse

    if args.json:
        def show_json(snapshot: Snapshot) -> None:
            for problem in snapshot.problems:
                error("watch", problem)
            for line in snapshot.left_out:
                error("watch", f"left out: {line}")
            sys.stdout.write(snapshot_json(snapshot, drawn))
            sys.stdout.flush()

        return show_json
    if sys.stdout.isatty() and not args.once:
        live = _live(cleanup)
        if live is not None:
            from rich.text import Text

            def show_live(snapshot: Snapshot) -> None:
                live.update(Text("\n".join(snapshot_lines(snapshot, drawn))), refresh=True)

            return show_live

    def show_text(snapshot: Snapshot) -> None:
        sys.stdout.write(snapshot_text(snapshot, drawn) + ("" if args.once else "\n"))
        sys.stdout.flush()

    return show_text


def _live(cleanup: contextlib.ExitStack) -> Any:
    """A started ``rich.live.Live`` (stopped when ``cleanup`` closes), or None without
    rich."""
    try:
        from rich.console import Console
        from rich.live import Live
    except ImportError:
        return None
    live = Live(console=Console(), auto_refresh=False, transient=False)
    live.start()
    cleanup.callback(live.stop)
    return live
