"""``stagetimer export {mlflow,tensorboard,otlp} PATH… --to DEST``: the runs under PATH
into another tool, adding only what DEST does not hold yet."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import TYPE_CHECKING

from stagetimer._cli.stderr import error

if TYPE_CHECKING:
    from stagetimer._analysis.tree import Problem
    from stagetimer._export.runs import Exported

__all__ = ["run"]


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Export; 1 when a path is unreadable, an extra is missing or DEST refuses."""
    from stagetimer._errors import MissingExtraError
    from stagetimer._export.runs import ExportError

    command = f"export {args.destination}"
    try:
        exported, problems, unit, read_count = _export(args)
    except (MissingExtraError, ExportError) as exc:
        error(command, str(exc))
        return 1
    for problem in problems:
        error(command, problem.line())
    sys.stdout.write(
        f"{exported.points} new {unit} from {read_count} recorded "
        f"{'attempts' if args.destination == 'otlp' else 'runs'} to {args.to}\n"
    )
    return 1 if problems else 0


def _export(args: argparse.Namespace) -> tuple[Exported, list[Problem], str, int]:
    """Export to ``args.destination``: what was exported, the problems met reading, what
    its points are called, and how many runs (attempts for OTLP) were read (those left
    out included)."""
    from stagetimer._export.runs import read_groups

    if args.destination == "otlp":
        from stagetimer._export.otlp import export_otlp

        exported, problems = export_otlp(args.paths, args.to)
        return exported, problems, "spans", exported.runs
    read = read_groups(args.paths)
    if args.destination == "mlflow":
        _quiet_mlflow()
        from stagetimer._export.mlflow import export_mlflow

        exported = export_mlflow(read.groups, args.to, args.experiment)
        return exported, read.problems, "metric points", read.runs
    from stagetimer._export.tensorboard import export_tensorboard

    return export_tensorboard(read.groups, args.to), read.problems, "scalars", read.runs


#: The loggers MLflow sets up when imported (``mlflow.utils.logging_utils``).
_MLFLOW_LOGGERS = ("mlflow", "alembic", "sqlalchemy.engine", "huey")


def _quiet_mlflow() -> None:
    """MLflow in this process (the command's own): no retries for minutes, no lines of
    its own. The library never does this; the command owns its process."""
    # An unreachable server fails in seconds, not after MLflow's minutes of retries.
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "20")
    # A server's client prints two links per finished run on standard output.
    os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
    # MLflow's progress lines ("Creating initial MLflow database tables...") and the
    # tracebacks it logs before raising: the error is told once, in one line. Importing
    # mlflow sets its loggers' levels from MLFLOW_LOGGING_LEVEL; where it is imported
    # already, the levels are set here. A level the user chose is kept.
    if "MLFLOW_LOGGING_LEVEL" not in os.environ:
        os.environ["MLFLOW_LOGGING_LEVEL"] = "CRITICAL"
        for name in _MLFLOW_LOGGERS:
            logging.getLogger(name).setLevel(logging.CRITICAL)
