"""The physical schema a policy is checked against: the tables and views of a database's main schema.

Read once per (file, modification time) over a read-only connection and cached, so every case of a
gold set that uses the same database shares one read.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

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

    def has_relation(self, name: str) -> bool:
        """True when ``name`` is a table or view of the main schema (case-insensitive)."""
        return name.lower() in self.relations

    def columns(self, name: str) -> tuple[str, ...]:
        """Column names (lower case, in order) of a relation; empty for an unknown one."""
        return self.relations.get(name.lower(), ())

    @classmethod
    def from_columns(
        cls, relations: Mapping[str, list[str] | tuple[str, ...]], catalog: str = "memory"
    ) -> "DatabaseSchema":
        """Build a schema from plain data (tests, other engines): ``{"users": ["user_id", "email"]}``."""
        return cls(
            catalog=catalog.lower(),
            relations={name.lower(): tuple(c.lower() for c in cols) for name, cols in relations.items()},
        )


def read_database_schema(db_path: str | Path) -> DatabaseSchema:
    """Read the tables and views of ``db_path``'s main schema (cached per path and modification time).

    Raises ``DatabaseNotFoundError`` for a missing file and ``DatabaseSchemaError`` for one that
    cannot be opened read-only.
    """
    path = Path(db_path).expanduser().resolve()
    if not path.is_file():
        raise DatabaseNotFoundError(
            f"database {path} does not exist (build it with `nl2sql-eval db build` or pass an existing .duckdb file)"
        )
    stat = path.stat()
    return _read_schema_cached(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=64)
def _read_schema_cached(path: str, mtime_ns: int, size: int) -> DatabaseSchema:
    logger.info("reading the schema of %s", path)
    try:
        con = duckdb.connect(path, read_only=True)
    except duckdb.Error as exc:
        raise DatabaseSchemaError(
            f"cannot open database {path} read-only ({exc}); close any process writing to it, or rebuild it"
        ) from exc
    try:
        catalog = con.execute("SELECT current_database()").fetchone()[0]
        rows = con.execute(
            """
            SELECT c.table_name, c.column_name
            FROM duckdb_columns() AS c
            WHERE c.database_name = current_database() AND c.schema_name = 'main' AND NOT c.internal
            ORDER BY c.table_name, c.column_index
            """
        ).fetchall()
        tables = con.execute(
            """
            SELECT table_name FROM duckdb_tables()
            WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal
            """
        ).fetchall()
        views = con.execute(
            """
            SELECT view_name FROM duckdb_views()
            WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal
            """
        ).fetchall()
    except duckdb.Error as exc:
        raise DatabaseSchemaError(f"cannot read the schema of {path} ({exc})") from exc
    finally:
        con.close()
    relations: dict[str, list[str]] = {name.lower(): [] for (name,) in tables + views}
    for table, column in rows:
        if table.lower() in relations:
            relations[table.lower()].append(column.lower())
    return DatabaseSchema(
        catalog=str(catalog).lower(),
        relations={name: tuple(cols) for name, cols in relations.items()},
        views=frozenset(name.lower() for (name,) in views),
        path=Path(path),
    )
