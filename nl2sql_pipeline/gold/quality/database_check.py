"""Gold cases checked against a built database: every table their SQL reads must exist there."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.errors import DatabaseNotFoundError
from nl2sql_pipeline.gold.raw_cases import SQL_DIALECT


def _referenced_tables(sql: str) -> set[str]:
    """Lower-cased names of the tables ``sql`` reads (CTE names excluded); empty if it does not parse."""
    try:
        tree = sqlglot.parse_one(sql, dialect=SQL_DIALECT)
    except SqlglotError:
        return set()
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    names = set()
    for table in tree.find_all(exp.Table):
        if isinstance(table.this, exp.Identifier) and table.name.lower() not in ctes:
            names.add(f"{table.db}.{table.name}".lower() if table.db else table.name.lower())
    return names


def validate_cases_against_database(cases: Sequence[Case], db_path: Path) -> list[str]:
    """Problems of cases whose expected SQL (or follow-up SQL) reads a table the database lacks.

    Each problem reads ``case '<id>': ... (<fix>)``. Policy probes are skipped: their SQL is meant to
    be rejected. Raises ``DatabaseNotFoundError`` when ``db_path`` does not exist.
    """
    import duckdb

    db_path = Path(db_path)
    if not db_path.is_file():
        raise DatabaseNotFoundError(
            f"{db_path}: no such database file (build the sample database, register the file, or fix the case's database)"
        )
    con = duckdb.connect(str(db_path), read_only=True)
    try:
        rows = con.execute(
            "SELECT DISTINCT table_schema, table_name FROM information_schema.tables "
            "WHERE table_catalog = current_database()"
        ).fetchall()
    finally:
        con.close()
    available = {f"{schema}.{name}".lower() for schema, name in rows}
    available |= {str(name).lower() for schema, name in rows if schema == "main"}
    problems = []
    for case in cases:
        if case.is_probe:
            continue
        statements = list(case.expected_sql) + [turn.sql for turn in case.follow_up_context]
        missing_tables = sorted(set().union(*(_referenced_tables(sql) for sql in statements)) - available)
        for table in missing_tables:
            problems.append(
                f"case '{case.id}': SQL references table '{table}' that {db_path.name} does not have "
                f"(fix the SQL, or check the database; it has: {', '.join(sorted(available)) or 'no tables'})"
            )
    return problems
