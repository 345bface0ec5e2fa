"""``nl2sql-eval report [RUN_ID] | --model M [--model N] --gold-set G [--html FILE]``: the report of stored runs.

Reads the runs' verdicts back from the storage root (nothing is re-evaluated) and prints the console report:
warnings on top, headline metrics with bars and 95% intervals, breakdowns, the weakest capabilities,
outcomes by cause, the cost split and, for several models, the exact McNemar label between them.
``--html FILE`` also writes the self-contained HTML page (inline SVG charts, per-case table).
Exit codes: 0 reported; 2 unknown run, a model never run on the gold set, an ``--html`` file that cannot be
written (checked first), or bad arguments; 3 a stored file is unreadable (cut short, not Parquet: the message
names it and its partition).
"""

from __future__ import annotations

import argparse

from nl2sql_cli.exit_codes import EXIT_BAD_INPUT, EXIT_OK
from nl2sql_cli.output_arg import output_file, write_output

DEFAULT_GOLD_SET = "multidomain-v1"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``report`` sub-command."""
    parser = subparsers.add_parser(
        "report",
        help="report stored runs: bars, intervals, breakdowns, causes, cost split; --html for a page",
        epilog="exit codes: 0 reported; 2 an unknown run id, a model never run on the gold set, or bad arguments; "
        "3 a stored file is unreadable (named with its partition; a plain `run` evaluates it again)",
    )
    parser.add_argument("run_id", nargs="?", metavar="RUN_ID", help="a run id (or unique prefix) of the baselines file")
    parser.add_argument(
        "--model",
        action="append",
        dest="models",
        metavar="SLUG",
        help="the latest run of this model on --gold-set; repeatable",
    )
    parser.add_argument("--gold-set", default=DEFAULT_GOLD_SET, help=f"gold-set key (default {DEFAULT_GOLD_SET})")
    parser.add_argument("--html", metavar="FILE", help="also write the self-contained HTML report to FILE")
    parser.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    from nl2sql_pipeline.report.console import console_full_report, console_pairwise
    from nl2sql_pipeline.report.stored import report_of
    from nl2sql_pipeline.results.read import load_cases, load_run, load_run_by_id

    if bool(args.run_id) == bool(args.models):
        print("error: give a run id or --model (repeatable), not both and not neither", flush=True)
        return EXIT_BAD_INPUT
    html = output_file("--html", args.html) if args.html else None  # OutputPathError (exit 2) before any work
    runs = [load_run_by_id(args.run_id)] if args.run_id else [load_run(args.gold_set, slug) for slug in args.models]
    reports = [report_of(run) for run in runs]
    print(console_full_report(reports))
    from nl2sql_pipeline.robustness.report import robustness_section, stored_robustness_lines

    section = robustness_section(stored_robustness_lines(runs))
    if section:
        print(section)
    if html is not None:
        from nl2sql_pipeline.report.html import run_html

        cases: dict = {}
        for gold in {run.gold_set for run in runs}:
            cases.update(load_cases(gold))
        from nl2sql_pipeline.robustness.report import stored_robustness_html

        page = run_html(reports, cases, console_pairwise(reports), stored_robustness_html(runs))
        write_output("--html", html, page)
        print(f"HTML report: {args.html}")
    return EXIT_OK
