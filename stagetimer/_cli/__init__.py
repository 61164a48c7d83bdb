"""The ``stagetimer`` command line (also ``python -m stagetimer``), one module per command:

- ``report PATH…``: each stage's runs and statistics per artifact directory (``report``);
- ``table PATH…``: a row per directory, a column per stage (``table``);
- ``compare BASE NEW``: is NEW faster than BASE, stage by stage (``compare``);
- ``history PATH…``: since when a stage is slower, and what changed there (``history``);
- ``compute PATH…``: GPU-hours, CPU core-hours and energy for a paper (``compute``);
- ``lost PATH…``: what failed and killed attempts lost, and the effective-time ratio
  (``lost``);
- ``hardware``: this process's hardware description and its id (``hardware``);
- ``recover DIR…``: fold rescue files back into ``timings.json`` (``recover``);
- ``migrate --root DIR --from T --to T``: copy sidecars to the canonical layout (``migrate``);
- ``doctor DIR…``: what a directory's file system gives saves, and what would stop them
  (``doctor``);
- ``watch PATH…``: a running suite refreshed until everything expected is done, with
  the time to go (``watch``; 0 once done, 130 on Ctrl-C);
- ``plan PATH…``: the ``--time`` and ``--mem`` under which a fraction of runs fit
  (``plan``);
- ``export {mlflow,tensorboard,otlp} PATH… --to DEST``: the runs into MLflow, TensorBoard
  event files or OTLP spans, adding only what DEST does not hold (``export``).

The arguments are built in ``parser``, one function per command.

Exit status of every command: 0 done; 1 a path, a sidecar or a started marker could not be read, or
standard output could not be written (one line on standard error each, never a
traceback); 2 a usage error (argparse's convention); 3 ``compare --fail-if-slower``
or ``history --fail-if-slower`` found a stage slower than it allows (a regression, told
apart from a typo). This
package is the only part of stagetimer that prints, and it owns its process
(``process``): the garbage collector is off while a command runs, and standard output
that is full, closed or a pipe whose reader left ends the command with that one line
and status 1.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from stagetimer._cli.process import OutputFailed, collector_off, stdout_guarded
from stagetimer._cli.stderr import error

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line on ``argv`` (default ``sys.argv[1:]``); returns the exit status.

    argparse's own exits (``--help``, ``--version``, a usage error) are returned too, so
    that one guard sees every write to standard output, the help text's included.
    """
    if sys.stdout is None:  # started with standard output closed (``>&-``)
        error("", "standard output is closed; nothing done")
        return 1
    try:
        with collector_off(), stdout_guarded():
            status = _run(argv)
            sys.stdout.flush()
    except OutputFailed as failed:
        reason = failed.reason.strerror or str(failed.reason)
        error("", f"cannot write to standard output ({reason}); output cut short")
        return 1
    except KeyboardInterrupt:
        return 130
    return status


def _run(argv: Sequence[str] | None) -> int:
    from stagetimer._cli.parser import build_parser

    try:
        args = build_parser().parse_args(argv)
        status: int = args.run(args, args.parser)
    except SystemExit as done:  # argparse: --help, --version, parser.error()
        return done.code if isinstance(done.code, int) else int(done.code is not None)
    return status
