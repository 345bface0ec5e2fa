"""``nl2sql-eval policy``: the SQL policies, and SQL checked against a policy and a database's schema.

``policy list [--json]`` prints every policy of ``data/policies/`` (what it refuses beyond the built-in
safety rules) and the registered databases whose cases run under it.

``policy check --database DB [--policy FILE_OR_NAME] --sql SQL [--json]`` prints the decision
(allowed, rule, policy_name, reason). Without ``--policy``, the database's own policy decides (its registry
entry's ``policy``, else ``default`` for a sample database and ``safety`` for any other file). Exit codes:
0 allowed, 1 rejected, 2 bad policy or arguments, 3 missing or unreadable database. DB is a path to a
.duckdb file or a database name; ``--sql -`` reads the SQL from standard input.
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
    check.add_argument("--database", required=True, metavar="DB", help="a .duckdb file, or a database name")
    check.add_argument(
        "--policy",
        default=None,
        metavar="FILE_OR_NAME",
        help="a policy name (data/policies/<name>.yml) or a .yml path (default: the database's policy: its "
        "registry entry's, else default for a sample database, safety for any other)",
    )
    check.add_argument("--sql", required=True, help="the SQL to check ('-' reads it from standard input)")
    check.add_argument("--json", action="store_true", help="print the decision as JSON")
    check.set_defaults(handler=_check)

    listing = actions.add_parser("list", help="the policies of data/policies/ and the databases that use each")
    listing.add_argument("--json", action="store_true", help="print as JSON")
    listing.set_defaults(handler=_list)


def _usage(parser: argparse.ArgumentParser) -> int:
    from nl2sql_cli.exit_codes import EXIT_BAD_INPUT

    parser.print_help(sys.stderr)
    return EXIT_BAD_INPUT


def _check(args: argparse.Namespace) -> int:
    from nl2sql_cli.exit_codes import EXIT_BAD_INPUT, EXIT_ENVIRONMENT, EXIT_GATE_FAILED, EXIT_OK
    from nl2sql_pipeline.databases.resolve import CaseDatabases, require_database
    from nl2sql_pipeline.errors import ConfigError, DatabaseNotFoundError
    from nl2sql_pipeline.policy import DatabaseSchemaError, SQLPolicyEngine, load_policy, read_database_schema

    sql = sys.stdin.read() if args.sql == "-" else args.sql
    try:
        name = args.policy or CaseDatabases.from_registry().policy_of(args.database)
        policy = load_policy(name)
    except ConfigError as exc:
        where = f"--policy {args.policy}" if args.policy else f"the policy of {args.database}"
        print(f"error: bad policy ({where}): {exc}", file=sys.stderr)
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


def _list(args: argparse.Namespace) -> int:
    """Handler of ``policy list``: each policy, what it refuses beyond the built-in rules, who uses it."""
    from nl2sql_cli.exit_codes import EXIT_BAD_INPUT, EXIT_OK
    from nl2sql_pipeline.databases.registry import load_database_registry
    from nl2sql_pipeline.errors import ConfigError
    from nl2sql_pipeline.policy import available_policies, load_policy, policies_dir

    try:
        entries = load_database_registry()
        policies = {name: load_policy(name) for name in available_policies()}
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    users: dict[str, list[str]] = {}
    for database, entry in entries.items():
        users.setdefault(entry.effective_policy, []).append(database)
    rows = [
        {
            "name": name,
            "file": str(policy.source),
            "content_hash": policy.content_hash[:12],
            "databases": users.get(name, []),
            **policy.to_dict(),
        }
        for name, policy in policies.items()
    ]
    rows += [  # registered databases naming a policy file outside data/policies/
        {"name": name, "file": name, "databases": databases, **load_policy(name).to_dict()}
        for name, databases in sorted(users.items())
        if name not in policies
    ]
    if args.json:
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    if not rows:
        print(f"no policies in {policies_dir()}")
        return EXIT_OK
    for row in rows:
        print(f"{row['name']}  ({row['file']})")
        print(f"  {_refusals(row)}")
        print(f"  databases: {', '.join(row['databases']) or 'none registered'}")
    return EXIT_OK


def _refusals(row: dict[str, Any]) -> str:
    """One line: what a policy refuses beyond the built-in rules (writes, catalogs, files, denied functions)."""
    parts = []
    if row["allowed_tables"] != "*":
        parts.append(f"tables other than {', '.join(row['allowed_tables'])}")
    if row["denied_columns"]:
        parts.append(f"columns {', '.join(row['denied_columns'])}")
    if row["max_limit"] is not None:
        parts.append(f"LIMIT > {row['max_limit']}")
    if row["max_joins"] is not None:
        parts.append(f"more than {row['max_joins']} joins")
    if row["forbid_cartesian"]:
        parts.append("cartesian products")
    if row["denied_functions"]:
        parts.append(f"functions {', '.join(row['denied_functions'])}")
    if row.get("allowed_schemas"):
        parts.append(f"schemas other than {', '.join(row['allowed_schemas'])}")
    extra = "; ".join(parts) if parts else "nothing more (safety rules only)"
    return f"refuses writes, catalogs and files, and: {extra}"
