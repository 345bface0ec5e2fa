"""``nl2sql-eval compare``: run an expected and a candidate query in the sandbox and compare their results.

    nl2sql-eval compare --database anime_platform \\
        --expected-sql "SELECT genre, count(*) FROM anime GROUP BY 1" \\
        --candidate-sql @candidate.sql [--json] [--rel-tol X] [--abs-tol X] [--column-order MODE]

``--database`` is the name of a built sample database or the path of a ``.duckdb`` file; a SQL argument
starting with ``@`` is read from that file. Prints ``match``, ``rule``, ``reason``, ``score``, the grade,
the order check, the exact row counts (results over the row cap are compared whole in the engine), partial
credit, the AST clause scores and the diagnosis (or one JSON object with all of them with ``--json``). Exit codes: 0 the results match; 1 they do not (including a failing
candidate); 2 bad input (bad arguments, or the expected SQL itself fails); 3 the database is missing or
cannot be opened, or both results hit the row cap and could not be compared whole (a timeout: grade
``undetermined``, no verdict).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    """Add the ``compare`` sub-command."""
    from nl2sql_pipeline.compare.names import COLUMN_ORDERS

    parser = subparsers.add_parser(
        "compare",
        help="run an expected and a candidate query in the sandbox and compare their results",
        description=(
            "Run both queries in the sandbox and compare the results as multisets of rows "
            "(order ignored, duplicates counted, numbers by value, floats within tolerance)."
        ),
    )
    parser.add_argument(
        "--database",
        required=True,
        metavar="DB",
        help="name of a built sample database (see `nl2sql-eval db build`) or path of a .duckdb file",
    )
    parser.add_argument("--expected-sql", required=True, metavar="SQL", help="the gold query, or @file.sql")
    parser.add_argument("--candidate-sql", required=True, metavar="SQL", help="the query to judge, or @file.sql")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--rel-tol", type=float, default=1e-9, metavar="X", help="relative float tolerance (default 1e-9)"
    )
    parser.add_argument(
        "--abs-tol", type=float, default=1e-9, metavar="X", help="absolute float tolerance (default 1e-9)"
    )
    parser.add_argument(
        "--column-order",
        choices=COLUMN_ORDERS,
        default=COLUMN_ORDERS[0],
        help="how candidate columns are aligned to expected ones (default %(default)s)",
    )
    parser.add_argument(
        "--partial-threshold",
        type=float,
        default=0.5,
        metavar="X",
        help="cell F1 from which a non-matching result is graded partial rather than fail (default 0.5)",
    )
    parser.add_argument(
        "--timeout", type=float, default=None, metavar="S", help="per-query timeout in seconds (default 10)"
    )
    parser.add_argument(
        "--row-cap", type=int, default=None, metavar="N", help="keep at most N rows per query (default 10000)"
    )
    parser.set_defaults(handler=_handle)


def _read_sql(option: str, value: str) -> str:
    """The SQL text of an option: the value itself, or the content of ``@file``."""
    from nl2sql_pipeline.errors import Nl2SqlError

    if not value.startswith("@"):
        sql = value
    else:
        path = Path(value[1:]).expanduser()
        try:
            sql = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise Nl2SqlError(
                f"{option} {value}: cannot read {path} ({exc.strerror}); pass SQL text or @existing.sql"
            ) from None
    if not sql.strip():
        raise Nl2SqlError(f"{option} is empty: pass a SELECT query (or @file.sql)")
    return sql


def _handle(args: argparse.Namespace) -> int:
    from nl2sql_cli.database_arg import database_file_or_exit_code
    from nl2sql_cli.exit_codes import EXIT_BAD_INPUT, EXIT_ENVIRONMENT, EXIT_GATE_FAILED, EXIT_OK
    from nl2sql_pipeline.compare import CompareConfig, EngineSource, compare_query_results
    from nl2sql_pipeline.compare.diagnosis import diagnose
    from nl2sql_pipeline.compare.model import grade
    from nl2sql_pipeline.compare.structure import clause_scores, parse_clauses
    from nl2sql_pipeline.errors import DatabaseNotFoundError
    from nl2sql_pipeline.execution import SandboxError, SandboxLimits, run_query

    config = CompareConfig(
        rel_tol=args.rel_tol,
        abs_tol=args.abs_tol,
        column_order=args.column_order,
        partial_threshold=args.partial_threshold,
    )
    overrides: dict[str, Any] = {}
    if args.timeout is not None:
        overrides["timeout_s"] = args.timeout
    if args.row_cap is not None:
        overrides["row_cap"] = args.row_cap
    limits = SandboxLimits(**overrides)  # ConfigError subclasses -> exit 2 via cli.main
    expected_sql = _read_sql("--expected-sql", args.expected_sql)
    candidate_sql = _read_sql("--candidate-sql", args.candidate_sql)

    db_path = database_file_or_exit_code(args.database)
    if isinstance(db_path, int):
        return db_path
    try:
        expected = run_query(db_path, expected_sql, limits)
        if not expected.ok:
            print(
                f"error: --expected-sql failed ({expected.error_class}): {expected.error_message}; "
                "fix the expected query first",
                file=sys.stderr,
            )
            return EXIT_BAD_INPUT
        candidate = run_query(db_path, candidate_sql, limits)
    except (DatabaseNotFoundError, SandboxError) as exc:
        print(f"error: --database {args.database}: {exc}", file=sys.stderr)
        return EXIT_ENVIRONMENT

    source = EngineSource(db_path, expected_sql, candidate_sql, limits)
    comparison = compare_query_results(expected, candidate, config, source)
    expected_items, candidate_items = parse_clauses(expected_sql), parse_clauses(candidate_sql)
    scores = clause_scores(expected_items, candidate_items)
    case_grade = "undetermined" if comparison.undetermined else grade(comparison, config)
    findings = diagnose(comparison, expected_items, candidate_items) if case_grade in ("partial", "fail") else []
    if args.json:
        payload = comparison.to_dict()
        payload.update(
            grade=case_grade,
            clause_scores=scores,
            clause_scores_note="structure only (AST clauses), not correctness",
            diagnosis=[{"label": label, "detail": detail} for label, detail in findings],
            rows_fetched={"expected": len(expected.rows), "candidate": len(candidate.rows) if candidate.ok else None},
            expected_ms=round(expected.elapsed_ms, 3),
            candidate_ms=round(candidate.elapsed_ms, 3),
        )
        print(json.dumps(payload, ensure_ascii=False))
    else:
        print(f"match: {'true' if comparison.match else 'false'}")
        print(f"rule: {comparison.rule}")
        print(f"reason: {comparison.reason}")
        print(f"score: {comparison.score:.3f}")
        print(f"grade: {case_grade}")
        order = comparison.order
        print(f"order: {order.status} ({order.detail})" if order is not None else "order: not checked")
        rows = f"{comparison.expected_rows} expected, {comparison.candidate_rows} candidate"
        if comparison.expected_rows is not None:
            print(f"rows: {rows}")
        elif not candidate.ok:
            print(f"rows: {'over ' if expected.truncated else ''}{len(expected.rows)} expected, the candidate failed")
        else:
            print("rows: unknown (over the row cap)")
        credit = [
            f"{label} {value:.3f}"
            for label, value in (
                ("row precision", comparison.row_precision),
                ("row recall", comparison.row_recall),
                ("row F1", comparison.score if comparison.row_precision is not None else None),
                ("cell F1", comparison.cell_f1),
            )
            if value is not None
        ]
        if comparison.cell_f1 is not None:
            print("partial credit: " + ", ".join(credit))
        if scores is not None:
            print("clause scores (structure, not correctness): " + ", ".join(f"{k} {v:.2f}" for k, v in scores.items()))
        for label, detail in findings:
            print(f"diagnosis: {label}: {detail}")
    if comparison.undetermined:
        return EXIT_ENVIRONMENT
    return EXIT_OK if comparison.match else EXIT_GATE_FAILED
