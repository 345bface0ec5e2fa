"""The physical schema a policy is checked against: the tables and views of a database's exposed schemas.

``relations`` holds the main schema's relations by name; the other exposed schemas' relations are held
as ``schema.table`` in ``qualified`` (SQL must name them qualified: DuckDB's search path is ``main``).

Read once per (file, modification time) over a read-only connection and cached, so every case of a
gold set that uses the same database shares one read.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
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


CatalogQuery = Callable[[Path, str], Sequence[tuple] | None]
"""Runs one catalog query on a database file and returns its rows, or None when it cannot (the schema is
then read over a read-only connection of its own). The execution stage passes one that runs in the
database's sandbox, which it opens anyway: a second DuckDB instance costs ~20 ms per database."""


def read_database_schema(
    db_path: str | Path, schemas: tuple[str, ...] | None = None, query: CatalogQuery | None = None
) -> DatabaseSchema:
    """Read the tables and views of ``db_path``'s exposed schemas (cached per path and modification time).

    ``schemas`` are the schemas to expose (None: every non-system schema; catalog schemas never).
    ``query``: how to run the catalog queries (default: over a read-only connection opened for them);
    whichever runs them, the schema of one file version is the same and is cached once.

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
    key = (str(path), stat.st_mtime_ns, stat.st_size, wanted)
    schema = _SCHEMAS.get(key)
    if schema is None:
        schema = _read_schema_with(path, wanted, query, Path(db_path)) if query is not None else None
        if schema is None:
            schema = _read_schema(path, wanted)
        if len(_SCHEMAS) >= _SCHEMAS_MAX:
            _SCHEMAS.clear()
        _SCHEMAS[key] = schema
    return schema


SYSTEM_SCHEMAS = ("information_schema", "pg_catalog")

_SCHEMAS: dict[tuple[str, int, int, tuple[str, ...] | None], DatabaseSchema] = {}
"""Schemas read, by (resolved path, mtime, size, exposed schemas): one read per file version."""
_SCHEMAS_MAX = 64

_CATALOG_SQL = "SELECT current_database()"
_COLUMNS_SQL = """
            SELECT lower(c.schema_name), c.table_name, c.column_name
            FROM duckdb_columns() AS c
            WHERE c.database_name = current_database() AND NOT c.internal
            ORDER BY c.schema_name, c.table_name, c.column_index
            """
_TABLES_SQL = """
            SELECT lower(schema_name), table_name FROM duckdb_tables()
            WHERE database_name = current_database() AND NOT internal
            """
_VIEWS_SQL = """
            SELECT lower(schema_name), view_name FROM duckdb_views()
            WHERE database_name = current_database() AND NOT internal
            """


def _read_schema(path: Path, wanted: tuple[str, ...] | None) -> DatabaseSchema:
    """The schema of ``path`` over a read-only connection of its own."""
    logger.info("reading the schema of %s", path)
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        raise DatabaseSchemaError(
            f"cannot open database {path} read-only ({exc}); close any process writing to it, or rebuild it"
        ) from exc
    try:
        [(catalog,)] = con.execute(_CATALOG_SQL).fetchall()
        rows = con.execute(_COLUMNS_SQL).fetchall()
        tables = con.execute(_TABLES_SQL).fetchall()
        views = con.execute(_VIEWS_SQL).fetchall()
    except duckdb.Error as exc:
        raise DatabaseSchemaError(f"cannot read the schema of {path} ({exc})") from exc
    finally:
        con.close()
    return _schema_of(path, wanted, catalog, rows, tables, views)


def _read_schema_with(
    path: Path, wanted: tuple[str, ...] | None, query: CatalogQuery, given: Path
) -> DatabaseSchema | None:
    """The schema of ``path`` read by ``query`` on the file as the caller named it, ``given`` (None when one
    of its queries could not run)."""
    try:
        catalog, rows, tables, views = (
            query(given, sql) for sql in (_CATALOG_SQL, _COLUMNS_SQL, _TABLES_SQL, _VIEWS_SQL)
        )
    except Exception as exc:  # the caller's route failed (its sandbox would not open): the own read says why
        logger.info("the catalog of %s could not be read by the caller's query (%s): reading it read-only", path, exc)
        return None
    if catalog is None or rows is None or tables is None or views is None or len(catalog) != 1:
        logger.info("the catalog of %s could not be read by the caller's query: reading it read-only", path)
        return None
    logger.info("read the schema of %s", path)
    return _schema_of(path, wanted, catalog[0][0], list(rows), list(tables), list(views))


def _schema_of(
    path: Path,
    wanted: tuple[str, ...] | None,
    catalog: object,
    rows: list[tuple],
    tables: list[tuple],
    views: list[tuple],
) -> DatabaseSchema:
    """The ``DatabaseSchema`` of the catalog rows of ``path`` (columns, tables and views by schema)."""
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
        path=path,
        qualified={name: tuple(cols) for name, cols in columns.items() if "." in name},
        schemas=tuple(exposed) or ("main",),
    )
