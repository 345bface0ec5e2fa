"""``nl2sql-eval compare-runs A B | --model X --model Y --gold-set G``: two runs case by case.

Prints the correctness of both runs over the cases they share, the exact McNemar label ("not significant"
unless the test rejects at alpha 0.05) and the per-case flips both ways with their reasons. Runs are named
by run id (a unique prefix is enough; ``--list`` shows the recorded ones) or, with ``--model`` twice, as the
latest runs of two models on ``--gold-set``. Exit codes: 0 compared; 2 unknown run, no stored results, or an
``--html`` file that cannot be written (checked first); 3 a stored file is unreadable (named with its partition).
"""

from __future__ import annotations

import argparse
import json

from nl2sql_cli.exit_codes import EXIT_BAD_INPUT, EXIT_OK
from nl2sql_cli.output_arg import output_file, write_output

DEFAULT_GOLD_SET = "multidomain-v1"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``compare-runs`` sub-command."""
    parser = subparsers.add_parser(
        "compare-runs",
        help="compare two runs case by case (flips both ways, exact McNemar significance)",
        epilog="exit codes: 0 compared; 2 an unknown run id, a model never run on the gold set, or bad arguments; "
        "3 a stored file is unreadable (named with its partition; a plain `run` evaluates it again)",
    )
    parser.add_argument("runs", nargs="*", metavar="RUN_ID", help="two run ids (or unique prefixes) from --list")
    parser.add_argument(
        "--model",
        action="append",
        dest="models",
        metavar="SLUG",
        help="compare the latest runs of two models instead (give --model twice)",
    )
    parser.add_argument(
        "--gold-set", default=DEFAULT_GOLD_SET, help=f"gold set of --model (default {DEFAULT_GOLD_SET})"
    )
    parser.add_argument("--list", action="store_true", help="list the recorded runs and exit")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    parser.add_argument("--html", metavar="FILE", help="also write a self-contained HTML page of the comparison")
    parser.set_defaults(handler=_handle)


def _list_runs() -> int:
    from nl2sql_pipeline.results.read import recorded_runs
    from nl2sql_pipeline.scoring.formatting import format_rate

    runs = recorded_runs()
    if not runs:
        print("no recorded runs (run `nl2sql-eval run` first)")
    for run in runs:
        print(
            f"{run['run_id']}  {run['recorded_at']}  {run['gold_set']}  {run['model']}  "
            f"correctness {format_rate(run.get('semantic_correctness_rate'))}"
        )
    return EXIT_OK


def _load(args: argparse.Namespace):
    from nl2sql_pipeline.results.read import load_run, load_run_by_id

    if args.models:
        if len(args.models) != 2 or args.runs:
            raise ValueError("give exactly two --model options (and no run ids), or two run ids")
        return [load_run(args.gold_set, slug) for slug in args.models]
    if len(args.runs) != 2:
        raise ValueError("give two run ids (see `nl2sql-eval compare-runs --list`) or --model X --model Y")
    return [load_run_by_id(run_id) for run_id in args.runs]


def _handle(args: argparse.Namespace) -> int:
    from nl2sql_pipeline.results.comparison import compare_verdicts, comparison_json, comparison_text

    if args.list:
        return _list_runs()
    html = output_file("--html", args.html) if args.html else None  # OutputPathError (exit 2) before any work
    try:
        first, second = _load(args)
    except ValueError as exc:
        print(f"error: {exc}", flush=True)
        return EXIT_BAD_INPUT
    comparison = compare_verdicts(
        first.verdicts,
        second.verdicts,
        label_a=f"{first.model} on {first.gold_set} (run {first.run_id})",
        label_b=f"{second.model} on {second.gold_set} (run {second.run_id})",
    )
    if html is not None:
        from nl2sql_pipeline.report.html import comparison_html
        from nl2sql_pipeline.report.stored import report_of
        from nl2sql_pipeline.results.read import load_cases

        cases = {**load_cases(first.gold_set), **load_cases(second.gold_set)}
        page = comparison_html(comparison, [report_of(first), report_of(second)], cases)
        write_output("--html", html, page)
    if args.json:
        print(json.dumps(comparison_json(comparison), indent=2, default=str))
    else:
        print(comparison_text(comparison))
        if args.html:
            print(f"HTML report: {args.html}")
    return EXIT_OK
