"""The physical schema a policy is checked against: the tables and views of a database's exposed schemas.

``relations`` holds the main schema's relations by name; the other exposed schemas' relations are held
as ``schema.table`` in ``qualified`` (SQL must name them qualified: DuckDB's search path is ``main``).

Read once per (file, modification time) over a read-only connection and cached, so every case of a
gold set that uses the same database shares one read.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from nl2sql_pipeline.errors import DatabaseNotFoundError, Nl2SqlError

logger = logging.getLogger(__name__)


class DatabaseSchemaError(Nl2SqlError):
    """A database file exists but its schema cannot be read (locked by a writer, corrupt, not DuckDB)."""


@dataclass(frozen=True, eq=True)
class DatabaseSchema:
    """Relations of a database's main schema: lower-case name -> column names in table order.

    ``catalog`` is the database's catalog name (the file stem), which SQL may use as a qualifier.
    """

    catalog: str
    relations: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    views: frozenset[str] = frozenset()
    path: Path | None = field(default=None, compare=False)
    qualified: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Relations of the exposed schemas other than main, as ``schema.table`` -> column names."""
    schemas: tuple[str, ...] = ("main",)
    """The exposed schemas (lower case), main first when exposed."""

    def has_relation(self, name: str) -> bool:
        """True when ``name`` is a table or view of the main schema (case-insensitive)."""
        return name.lower() in self.relations

    def has_qualified(self, schema: str, name: str) -> bool:
        """True when ``schema.name`` is a relation of an exposed schema other than main."""
        return f"{schema}.{name}".lower() in self.qualified

    def columns(self, name: str) -> tuple[str, ...]:
        """Column names (lower case, in order) of a relation; empty for an unknown one. A name found only
        in one non-main schema gives that relation's columns (column rules see unqualified names)."""
        found = self.relations.get(name.lower())
        if found is not None:
            return found
        matches = [cols for key, cols in self.qualified.items() if key.split(".", 1)[1] == name.lower()]
        return matches[0] if len(matches) == 1 else ()

    @classmethod
    def from_columns(
        cls, relations: Mapping[str, list[str] | tuple[str, ...]], catalog: str = "memory"
    ) -> DatabaseSchema:
        """Build a schema from plain data (tests, other engines): ``{"users": ["user_id", "email"]}``."""
        return cls(
            catalog=catalog.lower(),
            relations={name.lower(): tuple(c.lower() for c in cols) for name, cols in relations.items()},
        )


def read_database_schema(db_path: str | Path, schemas: tuple[str, ...] | None = None) -> DatabaseSchema:
    """Read the tables and views of ``db_path``'s exposed schemas (cached per path and modification time).

    ``schemas`` are the schemas to expose (None: every non-system schema; catalog schemas never).

    Raises ``DatabaseNotFoundError`` for a missing file and ``DatabaseSchemaError`` for one that
    cannot be opened read-only.
    """
    path = Path(db_path).expanduser().resolve()
    if not path.is_file():
        raise DatabaseNotFoundError(
            f"database {path} does not exist (build it with `nl2sql-eval db build` or pass an existing .duckdb file)"
        )
    stat = path.stat()
    wanted = tuple(s.lower() for s in schemas) if schemas is not None else None
    return _read_schema_cached(str(path), stat.st_mtime_ns, stat.st_size, wanted)


SYSTEM_SCHEMAS = ("information_schema", "pg_catalog")


@functools.lru_cache(maxsize=64)
def _read_schema_cached(path: str, mtime_ns: int, size: int, wanted: tuple[str, ...] | None = None) -> DatabaseSchema:
    logger.info("reading the schema of %s", path)
    try:
        con = duckdb.connect(path, read_only=True)
    except duckdb.Error as exc:
        raise DatabaseSchemaError(
            f"cannot open database {path} read-only ({exc}); close any process writing to it, or rebuild it"
        ) from exc
    try:
        [(catalog,)] = con.execute("SELECT current_database()").fetchall()
        rows = con.execute(
            """
            SELECT lower(c.schema_name), c.table_name, c.column_name
            FROM duckdb_columns() AS c
            WHERE c.database_name = current_database() AND NOT c.internal
            ORDER BY c.schema_name, c.table_name, c.column_index
            """
        ).fetchall()
        tables = con.execute(
            """
            SELECT lower(schema_name), table_name FROM duckdb_tables()
            WHERE database_name = current_database() AND NOT internal
            """
        ).fetchall()
        views = con.execute(
            """
            SELECT lower(schema_name), view_name FROM duckdb_views()
            WHERE database_name = current_database() AND NOT internal
            """
        ).fetchall()
    except duckdb.Error as exc:
        raise DatabaseSchemaError(f"cannot read the schema of {path} ({exc})") from exc
    finally:
        con.close()
    present = sorted({schema for schema, _ in tables + views} - set(SYSTEM_SCHEMAS), key=lambda s: (s != "main", s))
    exposed = [s for s in present if wanted is None or s in wanted]

    def key(schema: str, table: str) -> str:
        return table.lower() if schema == "main" else f"{schema}.{table.lower()}"

    columns: dict[str, list[str]] = {key(s, name): [] for s, name in tables + views if s in exposed}
    for schema, table, column in rows:
        if key(schema, table) in columns:
            columns[key(schema, table)].append(column.lower())
    return DatabaseSchema(
        catalog=str(catalog).lower(),
        relations={name: tuple(cols) for name, cols in columns.items() if "." not in name},
        views=frozenset(key(s, name) for s, name in views if s == "main" and s in exposed),
        path=Path(path),
        qualified={name: tuple(cols) for name, cols in columns.items() if "." in name},
        schemas=tuple(exposed) or ("main",),
    )
