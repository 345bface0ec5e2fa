"""``nl2sql-eval sql``: run one query in the sandbox and print its rows (or why it did not run).

    nl2sql-eval sql --database anime_platform --sql "SELECT count(*) FROM users" [--json]
                    [--timeout S] [--row-cap N] [--isolated]

``--database`` is the name of a built sample database or the path of a ``.duckdb`` file; ``--sql -``
reads the query from stdin. Exit codes: 0 the query ran; 1 it was refused or failed (the error class
is printed); 2 bad arguments; 3 the database is missing or cannot be opened.
"""

from __future__ import annotations

import argparse
import json
import sys
from decimal import Decimal
from typing import Any

MAX_TEXT_ROWS = 50
"""Rows printed by the text table; the rest are summarized as "... N more"."""


def register(subparsers: Any) -> None:
    """Add the ``sql`` sub-command."""
    parser = subparsers.add_parser(
        "sql",
        help="run one query in the sandbox (read-only, locked down, timeout and row cap)",
        description="Run one SELECT query on a sample database in the sandbox and print the result.",
    )
    parser.add_argument(
        "--database",
        required=True,
        metavar="DB",
        help="name of a built sample database (see `nl2sql-eval db build`) or path of a .duckdb file",
    )
    parser.add_argument("--sql", required=True, metavar="SQL", help="the query; '-' reads it from stdin")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument(
        "--timeout", type=float, default=None, metavar="S", help="wall-clock timeout in seconds (default 10)"
    )
    parser.add_argument("--row-cap", type=int, default=None, metavar="N", help="keep at most N rows (default 10000)")
    parser.add_argument(
        "--isolated",
        action="store_true",
        help="run in a worker process that is killed if the query ignores the timeout",
    )
    parser.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    from nl2sql_cli.database_arg import database_file_or_exit_code
    from nl2sql_cli.exit_codes import EXIT_BAD_INPUT, EXIT_ENVIRONMENT, EXIT_GATE_FAILED, EXIT_OK
    from nl2sql_pipeline.errors import DatabaseNotFoundError
    from nl2sql_pipeline.execution import SandboxError, SandboxLimits, run_query, run_query_isolated

    overrides: dict[str, Any] = {}
    if args.timeout is not None:
        if not 0 < args.timeout < float("inf"):
            print(f"error: --timeout {args.timeout:g}: must be a positive number of seconds", file=sys.stderr)
            return EXIT_BAD_INPUT
        overrides["timeout_s"] = args.timeout
    if args.row_cap is not None:
        if args.row_cap < 0:
            print(f"error: --row-cap {args.row_cap}: must be 0 or more rows", file=sys.stderr)
            return EXIT_BAD_INPUT
        overrides["row_cap"] = args.row_cap
    limits = SandboxLimits(**overrides)
    sql = sys.stdin.read() if args.sql == "-" else args.sql
    db_path = database_file_or_exit_code(args.database)
    if isinstance(db_path, int):
        return db_path
    runner = run_query_isolated if args.isolated else run_query
    try:
        result = runner(db_path, sql, limits)
    except (DatabaseNotFoundError, SandboxError) as exc:
        print(f"error: --database {args.database}: {exc}", file=sys.stderr)
        return EXIT_ENVIRONMENT
    if args.json:
        print(json.dumps(result_to_json(result), ensure_ascii=False))
    elif result.ok:
        print(format_table(result.columns, result.rows))
        print(_footer(len(result.rows), result.truncated, result.elapsed_ms))
    else:
        verb = "refused" if result.error_class == "forbidden" else "failed"
        print(f"query {verb} ({result.error_class}): {result.error_message}", file=sys.stderr)
    return EXIT_OK if result.ok else EXIT_GATE_FAILED


def result_to_json(result: Any) -> dict[str, Any]:
    """The ``--json`` object of a ``QueryResult`` (row values in the results codec's JSON form)."""
    from nl2sql_pipeline.execution.result_json import to_json_value

    return {
        "ok": result.ok,
        "columns": list(result.columns),
        "column_types": list(result.column_types),
        "rows": [[to_json_value(value) for value in row] for row in result.rows],
        "row_count": len(result.rows),
        "truncated": result.truncated,
        "error_class": result.error_class,
        "error_message": result.error_message,
        "elapsed_ms": round(result.elapsed_ms, 3),
    }


def format_table(columns: list[str], rows: list[tuple], max_rows: int = MAX_TEXT_ROWS) -> str:
    """An aligned text table of the first ``max_rows`` rows (numbers right-aligned, NULL for None)."""
    shown = rows[:max_rows]
    cells = [[_cell(value) for value in row] for row in shown]
    numeric = [bool(shown) and all(_is_number(row[i]) or row[i] is None for row in shown) for i in range(len(columns))]
    widths = [max([len(str(name))] + [len(row[i]) for row in cells]) for i, name in enumerate(columns)]

    def line(values: list[str]) -> str:
        parts = [v.rjust(w) if numeric[i] else v.ljust(w) for i, (v, w) in enumerate(zip(values, widths))]
        return " | ".join(parts).rstrip()

    lines = [line([str(name) for name in columns]), "-+-".join("-" * w for w in widths)]
    lines.extend(line(row) for row in cells)
    if len(rows) > max_rows:
        lines.append(f"... {len(rows) - max_rows} more")
    return "\n".join(lines)


def _footer(count: int, truncated: bool, elapsed_ms: float) -> str:
    noun = "row" if count == 1 else "rows"
    flag = ", truncated" if truncated else ""
    return f"({count} {noun}{flag}) in {elapsed_ms:.1f} ms"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    text = value.hex() if isinstance(value, bytes) else str(value)
    return text.replace("\r", "\\r").replace("\n", "\\n").replace("\t", "\\t")
