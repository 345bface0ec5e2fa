"""``nl2sql-eval policy``: check SQL against a policy and a database's schema.

``policy check --database DB [--policy FILE_OR_NAME] --sql SQL [--json]`` prints the decision
(allowed, rule, policy_name, reason). Exit codes: 0 allowed, 1 rejected, 2 bad policy or arguments,
3 missing or unreadable database. DB is a path to a .duckdb file or the name of a built sample
database; ``--sql -`` reads the SQL from standard input.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def register(subparsers: Any) -> None:
    """Add the ``policy`` command with its ``check`` sub-command."""
    parser = subparsers.add_parser("policy", help="check SQL against a SQL policy")
    actions = parser.add_subparsers(dest="policy_command", metavar="ACTION")
    parser.set_defaults(handler=lambda args: _usage(parser))

    check = actions.add_parser(
        "check",
        help="decide whether SQL may run (exit 0 allowed, 1 rejected, 2 bad policy, 3 missing database)",
    )
    check.add_argument(
        "--database", required=True, metavar="DB", help="a .duckdb file, or the name of a built sample database"
    )
    check.add_argument(
        "--policy",
        default="default",
        metavar="FILE_OR_NAME",
        help="a policy name (data/policies/<name>.yml) or a .yml path (default: default)",
    )
    check.add_argument("--sql", required=True, help="the SQL to check ('-' reads it from standard input)")
    check.add_argument("--json", action="store_true", help="print the decision as JSON")
    check.set_defaults(handler=_check)


def _usage(parser: argparse.ArgumentParser) -> int:
    from nl2sql_cli.exit_codes import EXIT_BAD_INPUT

    parser.print_help(sys.stderr)
    return EXIT_BAD_INPUT


def _check(args: argparse.Namespace) -> int:
    from nl2sql_cli.exit_codes import EXIT_BAD_INPUT, EXIT_ENVIRONMENT, EXIT_GATE_FAILED, EXIT_OK
    from nl2sql_pipeline.databases.resolve import require_database
    from nl2sql_pipeline.errors import ConfigError, DatabaseNotFoundError
    from nl2sql_pipeline.policy import DatabaseSchemaError, SQLPolicyEngine, load_policy, read_database_schema

    sql = sys.stdin.read() if args.sql == "-" else args.sql
    try:
        policy = load_policy(args.policy)
    except ConfigError as exc:
        print(f"error: bad policy (--policy {args.policy}): {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        schema = read_database_schema(require_database(args.database))
    except (DatabaseNotFoundError, DatabaseSchemaError) as exc:
        print(f"error: --database {args.database}: {exc}", file=sys.stderr)
        return EXIT_ENVIRONMENT
    decision = SQLPolicyEngine(policy, schema).check(sql)
    if args.json:
        print(json.dumps(decision.to_dict(), indent=2))
    elif decision.allowed:
        print(f"ALLOWED by policy {decision.policy_name}: {decision.reason}")
    else:
        print(f"REJECTED by policy {decision.policy_name}, rule {decision.rule}: {decision.reason}")
    return EXIT_OK if decision.allowed else EXIT_GATE_FAILED
