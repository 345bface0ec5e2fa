"""The prompt's schema text for a database without a semantic model, introspected from the database.

For every table and view of the exposed schemas (main first): its qualified name, its columns with their
types, declared primary and foreign keys, column comments, and up to ``sample_values`` distinct values of
each text column (the smallest among the first rows in insertion order, which DuckDB preserves, so the
same file gives the same values; read in the evaluation sandbox; each cut to ``max_value_chars``). The
text is kept within ``token_budget`` (estimated as characters / 4): sampled values go first, then comments, then whole
tables (named in a closing comment). The same database file gives the same text.

>>> estimate_tokens("x" * 40)
10
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from nl2sql_pipeline.errors import Nl2SqlError
from nl2sql_pipeline.sql.identifiers import quote_identifier

logger = logging.getLogger(__name__)

SYSTEM_SCHEMAS = ("information_schema", "pg_catalog")
TEXT_TYPES = ("VARCHAR", "TEXT", "STRING", "CHAR", "BPCHAR")
DEFAULT_TOKEN_BUDGET = 3000
DEFAULT_SAMPLE_VALUES = 3
DEFAULT_MAX_VALUE_CHARS = 40
SAMPLE_SCAN_ROWS = 10_000
"""Rows scanned per text column when sampling values (bounded on large tables)."""
NO_SEMANTIC_MODEL_TEXT = (
    "(none: this database has no semantic model; the schema above was introspected from the database)"
)
NO_REFERENCE_DATE = "CURRENT_DATE"


class IntrospectionError(Nl2SqlError):
    """A database whose catalog cannot be read for the prompt."""


@dataclass
class ColumnInfo:
    """One column as the prompt shows it."""

    name: str
    type: str
    comment: str | None = None
    primary_key: bool = False
    references: str | None = None
    """``schema.table(column)`` of a declared foreign key."""
    samples: list[str] = field(default_factory=list)


@dataclass
class TableInfo:
    """One table or view of an exposed schema."""

    schema: str
    name: str
    columns: list[ColumnInfo]
    comment: str | None = None
    is_view: bool = False

    @property
    def qualified(self) -> str:
        """``schema.table`` (``main`` tables are shown qualified too: both spellings run)."""
        return f"{self.schema}.{self.name}"


def estimate_tokens(text: str) -> int:
    """Tokens of ``text`` as the prompt budget counts them: characters / 4, rounded up."""
    return math.ceil(len(text) / 4)


def _sql_literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def read_tables(
    db_path: Path,
    schemas: tuple[str, ...] | None = None,
    *,
    sample_values: int = DEFAULT_SAMPLE_VALUES,
    max_value_chars: int = DEFAULT_MAX_VALUE_CHARS,
) -> list[TableInfo]:
    """The tables of ``db_path``'s exposed schemas (None: every non-system schema), main first.

    Opens the file read-only; raises ``IntrospectionError`` when it cannot be read.
    """
    try:
        # plain read-only (it shares the process's instance of the file with the sandbox, whose
        # connect-time configuration must match); sampled values are read through the sandbox itself
        con = duckdb.connect(str(db_path), read_only=True)
    except duckdb.Error as exc:
        raise IntrospectionError(f"cannot open {db_path} read-only to describe it ({exc})") from exc
    try:
        return _read_tables(con, Path(db_path), schemas, sample_values, max_value_chars)
    except duckdb.Error as exc:
        raise IntrospectionError(f"cannot read the catalog of {db_path} ({exc})") from exc
    finally:
        con.close()


def _read_tables(
    con: duckdb.DuckDBPyConnection,
    db_path: Path,
    schemas: tuple[str, ...] | None,
    sample_values: int,
    max_value_chars: int,
) -> list[TableInfo]:
    relations = con.execute(
        """
        SELECT schema_name, table_name, comment, false FROM duckdb_tables()
        WHERE database_name = current_database() AND NOT internal
        UNION ALL
        SELECT schema_name, view_name, comment, true FROM duckdb_views()
        WHERE database_name = current_database() AND NOT internal
        """
    ).fetchall()
    wanted = {s.lower() for s in schemas} if schemas is not None else None
    relations = [
        r for r in relations if r[0].lower() not in SYSTEM_SCHEMAS and (wanted is None or r[0].lower() in wanted)
    ]
    relations.sort(key=lambda r: (r[0] != "main", r[0], r[1]))
    keys = _keys(con)
    tables: list[TableInfo] = []
    for schema, name, comment, is_view in relations:
        columns = [
            ColumnInfo(column, str(data_type), column_comment)
            for column, data_type, column_comment in con.execute(
                """
                SELECT column_name, data_type, comment FROM duckdb_columns()
                WHERE database_name = current_database() AND schema_name = ? AND table_name = ?
                ORDER BY column_index
                """,
                [schema, name],
            ).fetchall()
        ]
        primary, foreign = keys.get((schema, name), (set(), {}))
        for column in columns:
            column.primary_key = column.name in primary
            column.references = foreign.get(column.name)
            if sample_values > 0 and column.type.upper().startswith(TEXT_TYPES):
                column.samples = _samples(db_path, schema, name, column.name, sample_values, max_value_chars)
        tables.append(TableInfo(schema, name, columns, comment, bool(is_view)))
    return tables


def _keys(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, str], tuple[set[str], dict[str, str]]]:
    """Declared primary keys and foreign keys by (schema, table)."""
    found: dict[tuple[str, str], tuple[set[str], dict[str, str]]] = {}
    rows = con.execute(
        """
        SELECT schema_name, table_name, constraint_type, constraint_column_names,
               referenced_table, referenced_column_names
        FROM duckdb_constraints()
        WHERE database_name = current_database() AND constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY')
        """
    ).fetchall()
    for schema, table, kind, columns, ref_table, ref_columns in rows:
        primary, foreign = found.setdefault((schema, table), (set(), {}))
        if kind == "PRIMARY KEY":
            primary.update(columns or ())
        else:
            for column, ref_column in zip(columns or (), ref_columns or ()):
                foreign[column] = f"{schema}.{ref_table}({ref_column})"
    return found


def _samples(db_path: Path, schema: str, table: str, column: str, count: int, max_chars: int) -> list[str]:
    """Up to ``count`` distinct non-empty values of a text column: the smallest of a bounded scan, read in
    the evaluation sandbox (read-only, no external access, a timeout): a view over a file gives none."""
    from nl2sql_pipeline.execution import run_query

    qualified = f"{quote_identifier(schema)}.{quote_identifier(table)}"
    result = run_query(
        db_path,
        f"SELECT DISTINCT v FROM (SELECT CAST({quote_identifier(column)} AS VARCHAR) AS v FROM {qualified} "
        f"LIMIT {SAMPLE_SCAN_ROWS}) WHERE v IS NOT NULL AND trim(v) <> '' ORDER BY v LIMIT {int(count)}",
    )
    if not result.ok:
        logger.warning("no sampled values for %s.%s: %s", qualified, column, result.error_message)
        return []
    return [" ".join(str(v).split())[:max_chars] for (v,) in result.rows]


def render_tables(tables: list[TableInfo], *, samples: bool = True, comments: bool = True) -> list[str]:
    """One DDL-like block per table (what the prompt shows)."""
    blocks = []
    for table in tables:
        head = f"CREATE {'VIEW' if table.is_view else 'TABLE'} {table.qualified} ("
        if comments and table.comment:
            head += f"  -- {' '.join(table.comment.split())}"
        lines = [head]
        for index, column in enumerate(table.columns):
            text = f"  {column.name} {column.type}"
            if column.primary_key:
                text += " PRIMARY KEY"
            if column.references:
                text += f" REFERENCES {column.references}"
            if index < len(table.columns) - 1:
                text += ","
            notes = []
            if comments and column.comment:
                notes.append(" ".join(column.comment.split()))
            if samples and column.samples:
                notes.append("e.g. " + ", ".join(_sql_literal(v) for v in column.samples))
            if notes:
                text += "  -- " + "; ".join(notes)
            lines.append(text)
        lines.append(");")
        blocks.append("\n".join(lines))
    return blocks


def fit_to_budget(tables: list[TableInfo], token_budget: int) -> str:
    """The schema text of ``tables`` within ``token_budget`` tokens (values, then comments, then tables go)."""
    header = "-- Introspected from the database (no semantic model). Tables are qualified as schema.table."
    for samples, comments in ((True, True), (False, True), (False, False)):
        text = "\n\n".join([header, *render_tables(tables, samples=samples, comments=comments)])
        if estimate_tokens(text) <= token_budget:
            return text
    blocks = render_tables(tables, samples=False, comments=False)
    kept: list[str] = [header]
    for index, block in enumerate(blocks):
        omitted = [t.qualified for t in tables[index:]]
        note = f"-- {len(omitted)} more tables left out (token budget {token_budget}): {', '.join(omitted)}"
        if estimate_tokens("\n\n".join([*kept, block, note])) > token_budget:
            return "\n\n".join([*kept, note])[: token_budget * 4]
        kept.append(block)
    return "\n\n".join(kept)


def introspected_schema_text(
    db_path: Path, schemas: tuple[str, ...] | None = None, token_budget: int = DEFAULT_TOKEN_BUDGET
) -> str:
    """The prompt's schema text for ``db_path`` (see the module docstring)."""
    tables = read_tables(db_path, schemas)
    logger.info("introspected %d tables of %s for the prompt", len(tables), db_path)
    return fit_to_budget(tables, token_budget)
