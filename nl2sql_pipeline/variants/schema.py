"""The shape of a source database a variant must keep: tables, columns, keys, views."""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb

from nl2sql_pipeline.sql.identifiers import quote_identifier as quote

SOURCE_ALIAS = "src"
"""The name the source database is attached under while a variant is built."""


@dataclass(frozen=True)
class Column:
    """One column of a table: its name, DuckDB type and whether it may hold NULL."""

    name: str
    data_type: str
    nullable: bool


@dataclass(frozen=True)
class ForeignKey:
    """``columns`` of the child table reference ``parent_columns`` of ``parent`` (same schema)."""

    columns: tuple[str, ...]
    parent: str
    parent_columns: tuple[str, ...]


@dataclass
class Table:
    """A base table with its columns and key constraints."""

    schema: str
    name: str
    columns: list[Column] = field(default_factory=list)
    primary_key: tuple[str, ...] = ()
    unique: list[tuple[str, ...]] = field(default_factory=list)
    foreign_keys: list[ForeignKey] = field(default_factory=list)

    @property
    def qualified(self) -> str:
        """``"schema"."table"`` (quoted)."""
        return f"{quote(self.schema)}.{quote(self.name)}"

    def column(self, name: str) -> Column | None:
        """The column called ``name`` (case-insensitive), or None."""
        lowered = name.lower()
        return next((c for c in self.columns if c.name.lower() == lowered), None)

    @property
    def key_columns(self) -> set[str]:
        """Columns in the primary key, a unique constraint or a foreign key (left alone by value changes)."""
        keys = set(self.primary_key)
        for unique in self.unique:
            keys.update(unique)
        for fk in self.foreign_keys:
            keys.update(fk.columns)
        return {k.lower() for k in keys}


@dataclass
class SourceSchema:
    """Every base table and view of a source database (system schemas left out)."""

    tables: list[Table]
    views: list[tuple[str, str, str]]  # (schema, name, CREATE VIEW text)

    def table(self, name: str, schema: str | None = None) -> Table | None:
        """The table called ``name`` (in ``schema`` when given; else ``main`` first, then any schema)."""
        lowered = name.lower()
        matches = [
            t
            for t in self.tables
            if t.name.lower() == lowered and (schema is None or t.schema.lower() == schema.lower())
        ]
        matches.sort(key=lambda t: t.schema != "main")
        return matches[0] if matches else None


def read_schema(con: duckdb.DuckDBPyConnection, database: str = SOURCE_ALIAS) -> SourceSchema:
    """The tables, columns, keys and views of the attached ``database``."""
    tables: dict[tuple[str, str], Table] = {}
    for schema, name in con.execute(
        "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = ? AND NOT internal "
        "AND NOT temporary ORDER BY schema_name, table_name",
        [database],
    ).fetchall():
        tables[(schema, name)] = Table(schema, name)
    for schema, name, column, data_type, nullable in con.execute(
        "SELECT schema_name, table_name, column_name, data_type, is_nullable FROM duckdb_columns() "
        "WHERE database_name = ? AND NOT internal ORDER BY schema_name, table_name, column_index",
        [database],
    ).fetchall():
        table = tables.get((schema, name))
        if table is not None:
            table.columns.append(Column(column, data_type, bool(nullable)))
    for schema, name, kind, columns, parent, parent_columns in con.execute(
        "SELECT schema_name, table_name, constraint_type, constraint_column_names, referenced_table, "
        "referenced_column_names FROM duckdb_constraints() WHERE database_name = ? "
        "ORDER BY schema_name, table_name, constraint_index",
        [database],
    ).fetchall():
        table = tables.get((schema, name))
        if table is None:
            continue
        if kind == "PRIMARY KEY":
            table.primary_key = tuple(columns)
        elif kind == "UNIQUE":
            table.unique.append(tuple(columns))
        elif kind == "FOREIGN KEY" and parent:
            table.foreign_keys.append(ForeignKey(tuple(columns), parent, tuple(parent_columns)))
    views = [
        (schema, name, sql)
        for schema, name, sql in con.execute(
            "SELECT schema_name, view_name, sql FROM duckdb_views() WHERE database_name = ? AND NOT internal "
            "AND NOT temporary ORDER BY schema_name, view_name",
            [database],
        ).fetchall()
    ]
    return SourceSchema(list(tables.values()), views)
