"""The argument parser: one small function per command's arguments."""

from __future__ import annotations

import argparse
from typing import Any

from stagetimer._cli import (
    compare,
    compute,
    doctor,
    export,
    hardware,
    history,
    lost,
    migrate,
    plan,
    recover,
    report,
    table,
    watch,
)
from stagetimer._cli.stderr import PROG

__all__ = ["build_parser"]

_Commands = Any  # argparse's _SubParsersAction is private; only add_parser is used


def build_parser() -> argparse.ArgumentParser:
    """``stagetimer`` with its commands; each sets ``run`` (its function) and ``parser``."""
    from stagetimer import __version__

    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Report, compare, tabulate, recover and migrate stagetimer timing "
        "sidecars, check what a directory gives saves, and describe this machine's hardware.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(title="commands", dest="command", required=True)
    for add in (
        _report, _table, _hardware, _migrate, _compare, _recover, _doctor, _compute, _lost,
        _watch, _plan, _export, _history,
    ):
        add(commands)
    return parser


def _paths(command: argparse.ArgumentParser) -> None:
    command.add_argument("paths", nargs="+", metavar="PATH",
                         help="an artifact directory or any folder above some")


_LATEX_HELP = "LaTeX, booktabs rules (\\usepackage{booktabs})"


def _formats(command: argparse.ArgumentParser, **helps: str) -> None:
    """One option per output format (``--markdown``, ``--latex``...), at most one given;
    each stores its name in ``format``."""
    form = command.add_mutually_exclusive_group()
    for name, words in helps.items():
        form.add_argument(f"--{name}", dest="format", action="store_const", const=name,
                          help=words)


def _report(commands: _Commands) -> None:
    command = commands.add_parser(
        "report",
        help="summarise every timings.json under the paths",
        description="Find every timings.json at or under PATH and print, per artifact "
        "directory, each stage's runs, total, mean, min and max seconds and the hardware "
        "they were measured on. Reads only: never writes, not even a lock file.",
    )
    _paths(command)
    form = command.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="print JSON instead of text")
    form.add_argument("--csv", action="store_true",
                      help="print one CSV row per run (the columns of stagetimer.to_records)")
    command.add_argument("--runs", action="store_true",
                         help="also list each run: run_idx, label, started_at, seconds, metadata")
    command.add_argument("--plot", metavar="FILE",
                         help="also draw the suite into FILE (.png or .svg; past about 40 "
                         "directories, pages FILE-1.png, FILE-2.png, ...; needs matplotlib: "
                         "pip install 'stagetimer[plot]')")
    command.add_argument("--html", metavar="FILE",
                         help="also write the report as one self-contained HTML page into "
                         "FILE: tables, each stage's runs, the timeline and the resources as "
                         "charts; it loads nothing and reads without JavaScript")
    command.set_defaults(run=report.run, parser=command)


def _table(commands: _Commands) -> None:
    command = commands.add_parser(
        "table",
        help="the table a paper prints: a row per directory, a column per stage",
        description="Print one row per artifact directory at or under PATH (in natural "
        "order: seed_2 before seed_10) and one column per stage: mean \N{PLUS-MINUS SIGN} "
        "sample standard deviation (runs) in one unit per column, and each row's total. "
        "Reads only.",
    )
    _paths(command)
    _formats(
        command, markdown="GitHub Markdown (the default)", latex=_LATEX_HELP,
        csv="CSV of raw seconds: <stage>_mean_seconds, <stage>_stdev_seconds, <stage>_runs "
        "per stage",
    )
    command.add_argument("--median", action="store_true",
                         help="the median and the quartiles instead of mean and sd")
    command.add_argument("--levels", type=_level_names, metavar="NAME,NAME,...",
                         help="name the levels of the directories' paths below what they "
                         "share, one name per level, each once, e.g. env,scenario,algo (default: "
                         "'level N' for each level that varies)")
    command.add_argument("--stages", type=_names, metavar="STAGE,STAGE,...",
                         help="only these stage columns, in this order")
    command.add_argument("--fold-continuations", action="store_true",
                         help="fold each <stage>_auto_resume into its stage: a cell is then "
                         "a per-seed time (each seed's runs of both summed)")
    command.set_defaults(run=table.run, parser=command, format="markdown")


def _names(text: str) -> list[str]:
    """A comma-separated list of names, none empty."""
    names = text.split(",")
    if not all(names):
        raise argparse.ArgumentTypeError(f"expected names separated by commas, not {text!r}")
    return names


def _level_names(text: str) -> list[str]:
    """``--levels``: names as ``_names``, each once (two levels of one name would be two
    columns no reader tells apart: a CSV header ``env,env``)."""
    names = _names(text)
    twice = next((name for i, name in enumerate(names) if name in names[:i]), None)
    if twice is not None:
        raise argparse.ArgumentTypeError(
            f"expected a name of its own for each level, not {text!r} ({twice!r} twice)"
        )
    return names


def _hardware(commands: _Commands) -> None:
    command = commands.add_parser(
        "hardware",
        help="describe what this process can use",
        description="Print this process's hardware description, its hardware_id and where "
        "each value came from (or why it is missing).",
    )
    command.add_argument("--json", action="store_true",
                         help='print {"hardware_id": ..., "hardware": ...}')
    command.set_defaults(run=hardware.run, parser=command)


def _migrate(commands: _Commands) -> None:
    command = commands.add_parser(
        "migrate",
        help="copy sidecars from an older directory layout to the canonical one",
        description="Copy (never move) timings.json and timings_hardware.json of every "
        "directory matching --from to the directory --to names. Templates are relative to "
        "--root; {name} matches one path component and must appear in both. An existing "
        "destination keeps its stages and gains the ones it lacks; running it again "
        "changes nothing.",
        epilog="example: stagetimer migrate --root exports "
        "--from 'gridworlds/pursuit/{scenario}/algorithms/{algo}' "
        "--to 'gridworlds/pursuit/{scenario}/{algo}'",
    )
    command.add_argument("--root", required=True, metavar="DIR",
                         help="the folder the templates are relative to")
    command.add_argument("--from", required=True, dest="source", metavar="TEMPLATE",
                         help="the old layout, e.g. 'pursuit/{scenario}/algorithms/{algo}'")
    command.add_argument("--to", required=True, dest="destination", metavar="TEMPLATE",
                         help="the canonical layout, e.g. 'pursuit/{scenario}/{algo}'")
    command.add_argument("--dry-run", action="store_true",
                         help="say what would be done; write nothing")
    command.set_defaults(run=migrate.run, parser=command)


def _compare(commands: _Commands) -> None:
    command = commands.add_parser(
        "compare",
        help="is NEW faster than BASE, stage by stage, and on the same hardware?",
        description="Compare the stages of two artifact directories, or of the directories "
        "at equal relative paths in two trees: per side runs, median, mean and standard "
        "deviation; the geometric-mean ratio new/base with its 95 % interval (Welch's t on "
        "log-seconds), its p-value, its Benjamini-Hochberg q-value over every comparison of "
        "the call and a verdict (q <= 0.05 and a change of at least the threshold); and the "
        "hardware fields that differ between the sides. Reads only. Exit status: 0 done, "
        "1 a path could not be read, 2 a usage error, 3 --fail-if-slower found a regression.",
    )
    command.add_argument("base", metavar="BASE", help="artifact directory or tree: the reference")
    command.add_argument("new", metavar="NEW", help="artifact directory or tree to judge")
    form = command.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="print JSON instead of text")
    form.add_argument("--markdown", action="store_true",
                      help="print a pull-request comment (GitHub Markdown): a summary line, "
                      "the regressions, the improvements, the rest folded, the differences")
    command.add_argument("--plot", metavar="FILE",
                         help="also draw each stage's ratio with its interval into FILE "
                         "(.png or .svg; needs matplotlib: pip install 'stagetimer[plot]')")
    command.add_argument("--html", metavar="FILE",
                         help="also write the comparison as one self-contained HTML page "
                         "into FILE: each stage's ratio with its interval, regressions first, "
                         "and the table; it loads nothing and reads without JavaScript")
    command.add_argument("--paired", action="store_true",
                         help="match runs by (run_idx, label, rank), the same seeds on both "
                         "sides, and use the paired t on their log-seconds; unmatched runs "
                         "are left out and counted")
    command.add_argument("--threshold", type=_percent, default=2.0, metavar="PCT",
                         help="smallest change called faster or slower, in %% (default 2)")
    command.add_argument("--fail-if-slower", type=_percent, metavar="PCT",
                         help="exit with status 3 when a stage is judged slower by more "
                         "than PCT %% (a regression gate for CI)")
    command.set_defaults(run=compare.run, parser=command)


def _history(commands: _Commands) -> None:
    command = commands.add_parser(
        "history",
        help="since when is a stage slower, and what changed there?",
        description="One series per stage and hardware description; a point per software "
        "id (its seeds are replicates), in the order of the commit graph of --repo (by "
        "default the current directory) where it knows every commit, else in time order. "
        "Change points are found with the seeds' spread as the noise, q-values over every "
        "series; each names the points on either side, the segments' medians and ratio "
        "with its interval, and what changed there: commits, packages, accelerator "
        "libraries, metadata. Reads only. Exit status: 0 done, 1 a path could not be read "
        "or no run has --stage, 2 a usage error, 3 --fail-if-slower found a regression.",
    )
    _paths(command)
    command.add_argument("--stage", metavar="NAME", help="only this stage")
    command.add_argument("--by", choices=("commit", "time"), default="commit",
                         help="a point per software id (commit, the default) or per "
                         "artifact directory in time order (time)")
    command.add_argument("--repo", metavar="DIR",
                         help="the git repository the commits come from (default: the "
                         "current directory)")
    command.add_argument("--since", metavar="DATE",
                         help="only points whose first run started at or after DATE "
                         "(ISO, e.g. 2026-01-31; UTC unless it says otherwise)")
    command.add_argument("--threshold", type=_percent, default=2.0, metavar="PCT",
                         help="smallest change reported, in %% (default 2)")
    _formats(command, json="print JSON instead of text",
             markdown="print tables for a pull request or an issue (GitHub Markdown)")
    command.add_argument("--html", metavar="FILE",
                         help="also write one self-contained HTML page into FILE: each "
                         "series with its points and seeds, change points marked")
    command.add_argument("--fail-if-slower", type=_percent, metavar="PCT",
                         help="exit with status 3 when the newest segment of a series is "
                         "slower than the one before it by more than PCT %% (q <= 0.05)")
    command.set_defaults(run=history.run, parser=command, format="text")


def _percent(text: str) -> float:
    """A percentage for --threshold / --fail-if-slower: a finite number >= 0."""
    try:
        value = float(text)
    except ValueError:
        message = f"expected a percentage such as 2 or 0.5, not {text!r}"
        raise argparse.ArgumentTypeError(message) from None
    if not 0.0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite percentage >= 0, not {text!r}")
    return value + 0.0  # -0 is 0: not "-0 %" in a message, nor -0.0 in --json


def _recover(commands: _Commands) -> None:
    command = commands.add_parser(
        "recover",
        help="fold rescue files back into timings.json",
        description="Put the records of every timings.rescue-*.json in each DIR (written "
        "where a save failed) back into DIR/timings.json where they are missing (by stage, "
        "run_idx, label and rank: a run saved since is never replaced), under its lock, "
        "then remove each rescue file. Files whose writer still runs, files another user "
        "owns (unless --trust-owner names that user) and records no writer could have "
        "written are named and left alone. Running it twice changes nothing.",
    )
    command.add_argument("directories", nargs="+", metavar="DIR", help="an artifact directory")
    command.add_argument(
        "--trust-owner", action="append", default=[], metavar="USER", dest="owners",
        help="also fold rescue files that USER (a name or uid) owns; repeatable",
    )
    command.add_argument(
        "--prefer", choices=("rescued", "stored"), default=None,
        help="where a rescued record and the stored run of its place cannot be ordered "
        "(one has no started_at): keep the rescued one in place of the stored run, or keep "
        "the stored run and drop the rescued one (default: keep the rescue file and name it)",
    )
    command.set_defaults(run=recover.run, parser=command)


def _doctor(commands: _Commands) -> None:
    command = commands.add_parser(
        "doctor",
        help="check directories: file system, cross-client locking, what would stop a save",
        description="For each DIR: the file system type and mount options, whether its "
        "locks exclude writers on other clients (yes, no or unknown, and why), the protocol "
        "saves use there, and what would stop or slow a save (permissions, group write, free "
        "space, stale claims, rescue files, corrupt sidecars). Reads only. Exit status 1 "
        "when a DIR does not exist or a sidecar cannot be read.",
    )
    command.add_argument("directories", nargs="+", metavar="DIR", help="an artifact directory")
    command.add_argument("--json", action="store_true",
                        help='print {"directories": [...]} instead of text')
    command.set_defaults(run=doctor.run, parser=command)


def _compute(commands: _Commands) -> None:
    command = commands.add_parser(
        "compute",
        help="the compute statement of a paper: GPU-hours, CPU core-hours, energy",
        description="Sum every run at or under PATH per hardware description and per "
        "stage family (training, checkpoint, NashConv, the rest): wall time, GPU-hours "
        "(wall time x visible GPUs), CPU core-hours (recorded CPU time where the run has "
        "it, else wall time x logical CPUs) and GPU energy where recorded, with a sentence "
        "to paste into a paper. Reads only.",
    )
    _paths(command)
    _formats(command, markdown="GitHub Markdown", latex=_LATEX_HELP, json="JSON")
    command.set_defaults(run=compute.run, parser=command, format="text")


def _positive_int(text: str) -> int:
    """--expect: a whole number of runs, at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of runs >= 1, not {text!r}")
    return value


def _interval(text: str) -> float:
    """--interval: seconds between refreshes, a finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0.0 < value < 86_400.0:
        raise argparse.ArgumentTypeError(
            f"expected seconds between refreshes, above 0 and below 86400, not {text!r}"
        )
    return value


def _quantile(text: str) -> float:
    """--quantile: the fraction of runs that must fit, strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a fraction between 0 and 1 such as 0.95, "
                                         f"not {text!r}")
    return value


def _watch(commands: _Commands) -> None:
    command = commands.add_parser(
        "watch",
        help="a running suite: done, running, failed, pending and the time to go",
        description="Refresh, every --interval seconds, per artifact directory and stage: "
        "runs done, running, failed, killed, unknown and pending, the elapsed time and the "
        "time to go (median and 90 % bound, from the finished runs and the running ones' "
        "elapsed time). Redraws in place on a terminal, prints a block per refresh when "
        "piped. Reads only: never writes, takes no lock. Exit status 0 once everything "
        "expected is done, 1 a path cannot be read, 2 a usage error, 130 on Ctrl-C.",
    )
    _paths(command)
    command.add_argument("--interval", type=_interval, default=10.0, metavar="S",
                         help="seconds between refreshes (default 10)")
    command.add_argument("--once", action="store_true", help="print one refresh and exit")
    command.add_argument("--json", action="store_true",
                         help="print one JSON object per refresh (JSON lines)")
    command.add_argument("--expect", type=_positive_int, metavar="N",
                         help="runs each stage should end with (default: the stage's "
                         "expected_runs, else the Slurm array's tasks, else the runs seen)")
    command.set_defaults(run=watch.run, parser=command)


def _plan(commands: _Commands) -> None:
    command = commands.add_parser(
        "plan",
        help="the --time and --mem to ask for, per stage and hardware",
        description="From the recorded durations and memory peaks of each stage on each "
        "hardware description, the Slurm --time and --mem under which a fraction Q of runs "
        "fit, with the margin said. Attempts killed by the time limit count as at least "
        "the time they ran. Reads only.",
    )
    _paths(command)
    command.add_argument("--quantile", type=_quantile, default=0.95, metavar="Q",
                         help="the fraction of runs that must fit (default 0.95)")
    command.add_argument("--json", action="store_true", help="print JSON instead of text")
    command.set_defaults(run=plan.run, parser=command)


def _lost(commands: _Commands) -> None:
    command = commands.add_parser(
        "lost",
        help="the time failed and killed attempts lost, and the effective-time ratio",
        description="Every attempt (entry into a recorded stage) at or under PATH: per "
        "hardware description and stage, the productive time (finished attempts), the "
        "time lost by failed and killed ones by cause (killed ones counted at the lower "
        "end of when they ended, the upper end beside it), the effective-time ratio "
        "productive / (productive + lost), and GPU-hours where the hardware has GPUs. "
        "Then each attempt lost or not decided, with its evidence. Reads only (asks "
        "Slurm about the jobs of unfinished attempts).",
    )
    _paths(command)
    _formats(command, markdown="GitHub Markdown", json="JSON")
    command.set_defaults(run=lost.run, parser=command, format="text")


def _export(commands: _Commands) -> None:
    command = commands.add_parser(
        "export",
        help="the runs into MLflow, TensorBoard event files or OpenTelemetry spans",
        description="Export every run at or under PATH: into MLflow (one MLflow run per "
        "artifact directory, run index and rank; stages as metrics at their recorded "
        "times; hardware and software as params and tags), into TensorBoard event files "
        "(one scalar per stage and run at its recorded wall time), or as OpenTelemetry "
        "spans in an OTLP/JSON file (one per attempt; failed and killed ones with an error "
        "status). Only what DEST does not hold yet is written: exporting twice adds "
        "nothing. Each destination needs its extra: pip install 'stagetimer[mlflow]' "
        "(or tensorboard, otlp).",
    )
    command.add_argument("destination", choices=("mlflow", "tensorboard", "otlp"),
                         help="where to")
    _paths(command)
    command.add_argument("--to", required=True, metavar="DEST",
                         help="mlflow: a tracking URI (sqlite:///runs.db, a directory, "
                         "http://host:5000); tensorboard: a log directory; otlp: a file "
                         "(JSON Lines, appended)")
    command.add_argument("--experiment", default="stagetimer", metavar="NAME",
                         help="mlflow: the experiment (created if missing; default "
                         "%(default)s)")
    command.set_defaults(run=export.run, parser=command)
