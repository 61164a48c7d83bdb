"""The ``stagetimer`` command line: ``report``, ``hardware`` and ``migrate``.

Exit status: 0 on success, 1 when something could not be read or done (one line
on standard error each, never a traceback), 2 for a usage error. This is the
only module of stagetimer that prints.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
from collections.abc import Sequence
from typing import TextIO

__all__ = ["main"]

PROG = "stagetimer"


def _error(command: str, message: str) -> None:
    print(f"{PROG} {command}: {message}", file=sys.stderr)


def _report(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from stagetimer._analysis.report import report_from
    from stagetimer._analysis.tree import scan_tree
    from stagetimer._escape import escape_text

    plot = None
    if args.plot is not None:
        from stagetimer._render import report_plot as _plot

        # Before any reading or output: a path that cannot be written, or no matplotlib,
        # is said and nothing else is done.
        try:
            _plot.check_path(args.plot)
        except ValueError as exc:
            parser.error(f"--plot {args.plot}: {exc}")
        try:
            _plot.load_pyplot()
        except _plot.PlotUnavailableError as exc:
            _error("report", str(exc))
            return 1
        plot = _plot
    rescued: list[str] = []
    artifacts, problems = scan_tree(args.paths, rescued)
    for problem in problems:
        _error("report", problem.line())
    for directory in rescued:
        _error(
            "report",
            escape_text(
                f"{directory}: holds rescue files, records a failed save kept that are not "
                f"in timings.json yet; fold them in with: stagetimer recover {directory}"
            ),
        )
    out: TextIO = sys.stdout
    if args.csv:
        from stagetimer._analysis.rows import records_csv, records_from

        out.write(records_csv(records_from(artifacts)))
        reports = report_from(artifacts) if plot is not None else []
    else:
        reports = report_from(artifacts)
        if args.json:
            from stagetimer._render.report_json import render_json

            out.write(render_json(reports))
        else:
            from stagetimer._render.report_text import render_text

            out.write(render_text(reports, runs=args.runs))
    out.flush()
    status = 1 if problems else 0
    if plot is not None:
        try:
            written = plot.plot_report(reports, args.plot)
        except (ValueError, OSError) as exc:
            _error("report", f"--plot {args.plot}: {exc}")
            return 1
        print(f"plot written to {', '.join(written)}", file=sys.stderr)
    return status


def _table(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from stagetimer._analysis.table import build_table
    from stagetimer._analysis.tree import scan_tree
    from stagetimer._render.table import render_table

    artifacts, problems = scan_tree(args.paths)
    for problem in problems:
        _error("table", problem.line())
    if artifacts:
        sys.stdout.write(render_table(build_table(artifacts, median=args.median), args.format))
    return 1 if problems else 0


def _hardware(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from stagetimer.hardware import capture_hardware, description, hardware_id
    from stagetimer.hardware._show import format_hardware

    hw = capture_hardware()
    if args.json:
        payload = {"hardware_id": hardware_id(hw), "hardware": description(hw)}
        sys.stdout.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(format_hardware(hw))
    return 0


_VERBS = {
    "copied": ("copied", "would copy"),
    "merged": ("merged", "would merge"),
}


def _migrate(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from stagetimer._store.migrate import TemplateError, migrate

    try:
        outcomes = migrate(args.root, args.source, args.destination, dry_run=args.dry_run)
    except TemplateError as exc:
        parser.error(str(exc))
    except NotADirectoryError as exc:
        _error("migrate", str(exc))
        return 1
    counts = collections.Counter(o.action for o in outcomes)
    for o in outcomes:
        if o.action in _VERBS:
            verb = _VERBS[o.action][args.dry_run]
            print(f"{verb} {o.source} -> {o.destination} ({o.details})")
        elif o.action == "unchanged":
            print(f"up to date: {o.destination} already holds what {o.source} has")
        else:
            target = f" -> {o.destination}" if o.destination else ""
            _error("migrate", f"{o.action} {o.source}{target}: {o.details}")
    written = counts["copied"] + counts["merged"]
    if not outcomes:
        print(f"nothing to migrate: no sidecars under {args.root} match {args.source!r}")
    elif written == 0 and counts.get("unchanged"):
        print(
            f"nothing changed: all {counts['unchanged']} destination(s) already hold their "
            "sources' stages"
        )
    else:
        if args.dry_run:
            words = {a: verbs[True] for a, verbs in _VERBS.items()} | {"unchanged": "up to date"}
            summary = ", ".join(f"{words.get(a, a)} {n}" for a, n in counts.items())
            print(f"dry run, nothing written: {summary}")
        else:
            print(", ".join(f"{n} {action}" for action, n in counts.items()))
    return 1 if counts.get("refused") or counts.get("failed") else 0


def _percent(text: str) -> float:
    """A percentage for --threshold / --fail-if-slower: a finite number >= 0."""
    try:
        value = float(text)
    except ValueError:
        message = f"expected a percentage such as 2 or 0.5, not {text!r}"
        raise argparse.ArgumentTypeError(message) from None
    if not 0.0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite percentage >= 0, not {text!r}")
    return value


def _compare(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from stagetimer._analysis.compare import compare
    from stagetimer._errors import SchemaVersionError, SidecarCorruptError
    from stagetimer._render.compare_text import format_comparison, render_json

    plot = None
    if args.plot is not None:
        from stagetimer._render import compare_plot as _compare_plot

        problem = _compare_plot.check_target(args.plot)  # before any work
        if problem is not None:
            _error("compare", f"--plot {args.plot}: {problem}")
            return 1
        plot = _compare_plot
    try:
        comparison = compare(args.base, args.new, threshold=args.threshold / 100)
    except (OSError, SidecarCorruptError, SchemaVersionError) as exc:
        filename = getattr(exc, "filename", None)
        strerror = getattr(exc, "strerror", None)
        message = f"{filename}: {strerror}" if filename and strerror else str(exc)
        _error("compare", " ".join(message.split()))
        return 1
    sys.stdout.write(render_json(comparison) if args.json else format_comparison(comparison))
    sys.stdout.flush()
    if plot is not None:
        try:
            plot.plot_comparison(comparison, args.plot)
        except (ValueError, OSError) as exc:
            _error("compare", f"--plot {args.plot}: {exc}")
            return 1
        print(f"plot written to {args.plot}", file=sys.stderr)
    if args.fail_if_slower is not None:
        slower = comparison.slower_than(args.fail_if_slower / 100)
        for pair, stage in slower:
            _error(
                "compare",
                f"{pair.new}: stage {stage.name} is {stage.ratio:.3f}x the base's time "
                f"(more than {args.fail_if_slower:g} % slower)",
            )
        if slower:
            return 2
    return 0


def _recover(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from stagetimer._errors import StageTimerError
    from stagetimer._store.rescue import recover

    status = 0
    for directory in args.directories:
        try:
            done = recover(directory)
        except (StageTimerError, OSError) as exc:
            _error("recover", str(exc))
            status = 1
            continue
        for item in done:
            print(
                f"{item.path}: {item.stored} record(s) stored into "
                f"{os.path.join(directory, 'timings.json')}"
                + (f", {item.already} already there" if item.already else "")
                + "; rescue file removed"
            )
        if not done:
            print(f"{directory}: no rescue file, nothing to recover")
    return status


def _parser() -> argparse.ArgumentParser:
    from stagetimer import __version__

    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Report, describe and migrate stagetimer timing sidecars.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(title="commands", dest="command", required=True)

    report = commands.add_parser(
        "report",
        help="summarise every timings.json under the paths",
        description="Find every timings.json at or under PATH and print, per artifact "
        "directory, each stage's runs, total, mean, min and max seconds and the hardware "
        "they were measured on. Reads only: never writes, not even a lock file.",
    )
    report.add_argument("paths", nargs="+", metavar="PATH",
                        help="an artifact directory or any folder above some")
    form = report.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="print JSON instead of text")
    form.add_argument("--csv", action="store_true",
                      help="print one CSV row per run (the columns of stagetimer.to_records)")
    report.add_argument("--runs", action="store_true",
                        help="also list each run: run_idx, label, started_at, seconds, metadata")
    report.add_argument("--plot", metavar="FILE",
                        help="also draw the suite into FILE (.png or .svg; past about 40 "
                        "directories, pages FILE-1.png, FILE-2.png, ...; needs matplotlib: "
                        "pip install 'stagetimer[plot]')")
    report.set_defaults(run=_report, parser=report)

    table = commands.add_parser(
        "table",
        help="the table a paper prints: a row per directory, a column per stage",
        description="Print one row per artifact directory at or under PATH and one column "
        "per stage: mean \N{PLUS-MINUS SIGN} sample standard deviation (runs) in one unit "
        "per column, and each row's total. Reads only.",
    )
    table.add_argument("paths", nargs="+", metavar="PATH",
                       help="an artifact directory or any folder above some")
    table_form = table.add_mutually_exclusive_group()
    table_form.add_argument("--markdown", dest="format", action="store_const", const="markdown",
                            help="GitHub Markdown (the default)")
    table_form.add_argument("--latex", dest="format", action="store_const", const="latex",
                            help="LaTeX, booktabs rules (\\usepackage{booktabs})")
    table_form.add_argument("--csv", dest="format", action="store_const", const="csv",
                            help="CSV of raw seconds: <stage>_mean_seconds, "
                            "<stage>_stdev_seconds, <stage>_runs per stage")
    table.add_argument("--median", action="store_true",
                       help="the median and the quartiles instead of mean and sd")
    table.set_defaults(run=_table, parser=table, format="markdown")

    hardware = commands.add_parser(
        "hardware",
        help="describe what this process can use",
        description="Print this process's hardware description, its hardware_id and where "
        "each value came from (or why it is missing).",
    )
    hardware.add_argument("--json", action="store_true",
                          help='print {"hardware_id": ..., "hardware": ...}')
    hardware.set_defaults(run=_hardware, parser=hardware)

    migrate = commands.add_parser(
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
    migrate.add_argument("--root", required=True, metavar="DIR",
                         help="the folder the templates are relative to")
    migrate.add_argument("--from", required=True, dest="source", metavar="TEMPLATE",
                         help="the old layout, e.g. 'pursuit/{scenario}/algorithms/{algo}'")
    migrate.add_argument("--to", required=True, dest="destination", metavar="TEMPLATE",
                         help="the canonical layout, e.g. 'pursuit/{scenario}/{algo}'")
    migrate.add_argument("--dry-run", action="store_true",
                         help="say what would be done; write nothing")
    migrate.set_defaults(run=_migrate, parser=migrate)

    compare = commands.add_parser(
        "compare",
        help="is NEW faster than BASE, stage by stage, and on the same hardware?",
        description="Compare the stages of two artifact directories, or of the directories "
        "at equal relative paths in two trees: per side runs, median, mean and standard "
        "deviation; the geometric-mean ratio new/base with its 95 %% interval (Welch's t on "
        "log-seconds) and a verdict; and the hardware fields that differ between the sides. "
        "Reads only.",
    )
    compare.add_argument("base", metavar="BASE", help="artifact directory or tree: the reference")
    compare.add_argument("new", metavar="NEW", help="artifact directory or tree to judge")
    compare.add_argument("--json", action="store_true", help="print JSON instead of text")
    compare.add_argument("--plot", metavar="FILE",
                         help="also draw each stage's ratio with its interval into FILE "
                         "(.png or .svg; needs matplotlib: pip install 'stagetimer[plot]')")
    compare.add_argument("--threshold", type=_percent, default=2.0, metavar="PCT",
                         help="smallest change called faster or slower, in %% (default 2)")
    compare.add_argument("--fail-if-slower", type=_percent, metavar="PCT",
                         help="exit with status 2 when a stage is judged slower by more "
                         "than PCT %% (a regression gate for CI)")
    compare.set_defaults(run=_compare, parser=compare)

    recover = commands.add_parser(
        "recover",
        help="fold rescue files back into timings.json",
        description="Store the records of every timings.rescue-*.json in each DIR (written "
        "where a save failed) into DIR/timings.json, under its lock and with the rules of "
        "the recorder that wrote them, then remove each rescue file. A record already "
        "stored is not stored again: running it twice changes nothing.",
    )
    recover.add_argument("directories", nargs="+", metavar="DIR", help="an artifact directory")
    recover.set_defaults(run=_recover, parser=recover)

    from stagetimer._cli.doctor import add_doctor

    add_doctor(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        status: int = args.run(args, args.parser)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (``stagetimer report . | head``): stop quietly. Python
        # flushes stdout again at exit; point it at devnull so that flush cannot fail.
        # https://docs.python.org/3/library/signal.html#note-on-sigpipe
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        return 130
    return status
