"""The column types the dialect fixes need, kept beside an imported database and read back for replays.

    copy_sqlite_to_duckdb(source, "databases/concert_singer.duckdb")   # writes concert_singer.columns.json too
    columns = read_column_info(Path("databases/concert_singer.duckdb"))   # later: the same ColumnInfo

``convert_sql`` needs each column's SQLite affinity and DuckDB type (``sqlite_copy.SourceColumn``). An
import has them from the SQLite file; a later conversion of the same dialect (a predictions file in
Spider's SQLite SQL) reads them back from the file written beside the DuckDB copy, so it converts exactly
as the import did. A database without that file (not copied from SQLite) is described by its DuckDB
catalog: text columns have TEXT affinity, integers INTEGER, other numbers REAL.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import duckdb

from nl2sql_pipeline.dialect.sqlite_copy import SourceColumn, column_info_path
from nl2sql_pipeline.errors import Nl2SqlError

_INTEGER_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT")
_REAL_TYPES = ("FLOAT", "DOUBLE", "REAL")


class ColumnInfoError(Nl2SqlError):
    """The column types of a database cannot be read (unreadable side file or database)."""


@dataclass(frozen=True)
class CatalogColumn:
    """A column as DuckDB's catalog has it: its name, its own type (``INTEGER`` stays ``INTEGER``), NOT NULL."""

    name: str
    duckdb_type: str
    not_null: bool


def catalog_columns(database: Path) -> dict[str, dict[str, CatalogColumn]]:
    """Lower-case table -> lower-case column -> ``CatalogColumn``, for the tables of ``main`` in ``database``.

    The one reader of a database's catalog for the dialect fixes: the SQLite fixes fold these types to
    SQLite's classes (``read_column_info``); the Postgres integer-division fix needs them as they are.
    """
    try:
        con = duckdb.connect(str(database), read_only=True)
    except duckdb.Error as exc:
        raise ColumnInfoError(f"{database}: cannot read the database's columns ({exc})") from exc
    try:
        rows = con.execute(
            "SELECT table_name, column_name, data_type, NOT is_nullable FROM duckdb_columns() "
            "WHERE schema_name = 'main' AND NOT internal ORDER BY table_name, column_index"
        ).fetchall()
    finally:
        con.close()
    out: dict[str, dict[str, CatalogColumn]] = {}
    for table, name, data_type, not_null in rows:
        out.setdefault(str(table).lower(), {})[str(name).lower()] = CatalogColumn(
            str(name), str(data_type).upper(), bool(not_null)
        )
    return out


def _sqlite_view(column: CatalogColumn) -> SourceColumn:
    """``column`` as the SQLite fixes see it: integers one BIGINT class, other numbers DOUBLE, text VARCHAR."""
    upper = column.duckdb_type
    if upper in _INTEGER_TYPES:
        affinity, target = "INTEGER", "BIGINT"
    elif upper in _REAL_TYPES or upper.startswith("DECIMAL"):
        affinity, target = "REAL", "DOUBLE"
    elif upper == "VARCHAR":
        affinity, target = "TEXT", "VARCHAR"
    else:
        affinity, target = "NUMERIC", upper
    return SourceColumn(column.name, upper, affinity, target, column.not_null)


def _from_catalog(database: Path) -> dict[str, dict[str, SourceColumn]]:
    return {
        table: {key: _sqlite_view(column) for key, column in columns.items()}
        for table, columns in catalog_columns(database).items()
    }


def read_column_info(database: Path) -> dict[str, dict[str, SourceColumn]]:
    """Lower-case table -> lower-case column -> ``SourceColumn`` of ``database`` (see the module doc)."""
    side = column_info_path(Path(database))
    if not side.is_file():
        return _from_catalog(Path(database))
    try:
        data = json.loads(side.read_text(encoding="utf-8"))
        return {
            table.lower(): {c["name"].lower(): SourceColumn(**c) for c in table_columns}
            for table, table_columns in data.items()
        }
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise ColumnInfoError(f"{side}: cannot read the column types ({exc}); re-import the database") from exc
