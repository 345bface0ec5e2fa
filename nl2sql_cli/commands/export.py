"""``nl2sql-eval export --out DIR [--format parquet|csv|json] [--duckdb FILE]``: every stored run's results.

Writes ``verdicts``, ``run_scores`` and ``leaderboard`` files to DIR, and/or a DuckDB file of views
(``verdicts``, ``run_scores``, ``run_correctness``) over the stored Parquet, for ad-hoc SQL.
Exit codes: 0 exported; 2 nothing stored yet, an ``--out`` or ``--duckdb`` that cannot be written (checked
first), or bad arguments; 3 a stored file is unreadable (named with its partition).
"""

from __future__ import annotations

import argparse

from nl2sql_cli.exit_codes import EXIT_BAD_INPUT, EXIT_OK
from nl2sql_cli.output_arg import output_duckdb, output_folder, written


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``export`` sub-command."""
    from nl2sql_pipeline.results.formats import FORMATS

    parser = subparsers.add_parser(
        "export",
        help="export every stored run's verdicts, scores and leaderboard; DuckDB views over them",
        epilog="exit codes: 0 exported; 2 no stored run yet, or neither --out nor --duckdb; "
        "3 a stored file is unreadable (named with its partition; a plain `run` evaluates it again)",
    )
    parser.add_argument("--out", metavar="DIR", help="write verdicts, run_scores and leaderboard files here")
    parser.add_argument("--format", choices=FORMATS, default="parquet", help="file format of --out (default parquet)")
    parser.add_argument(
        "--duckdb", metavar="FILE", help="create or refresh a DuckDB file of views over the stored Parquet"
    )
    parser.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    from nl2sql_pipeline.results.exports import export_results, write_duckdb_views

    if not args.out and not args.duckdb:
        print("error: give --out DIR and/or --duckdb FILE", flush=True)
        return EXIT_BAD_INPUT
    # an output that cannot be written: OutputPathError (exit 2) before any work
    out = output_folder("--out", args.out) if args.out else None
    duckdb_file = output_duckdb("--duckdb", args.duckdb) if args.duckdb else None
    if out is not None:
        with written("--out", out):
            for path in export_results(out, args.format):
                print(f"wrote {path}")
    if duckdb_file is not None:
        with written("--duckdb", duckdb_file):
            views = write_duckdb_views(duckdb_file)
        print(f"views in {args.duckdb}: {', '.join(views)}")
    return EXIT_OK
