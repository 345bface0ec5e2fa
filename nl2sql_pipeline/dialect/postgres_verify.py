"""Postgres gold checked against PostgreSQL: the databases loaded into a server, the originals run there.

    with open_verifier("postgres") as pg:          # a throwaway cluster; or "postgresql://user@host/db"
        pg.load("flights", Path("databases/flights.duckdb"))          # notes: what was loaded as text
        check = verify_conversion(converted, duckdb_file, source=pg.runner("flights"))

Each database is loaded from its DuckDB copy into a schema of its own (``nl2sql_verify_<random>``, on the
search path of that database's connection, dropped on close): every table of the ``main`` schema with its
columns mapped to Postgres types (``POSTGRES_TYPES``; a type Postgres has no counterpart for, a LIST or a
STRUCT, is loaded as its text) and names folded to lower case as Postgres folds unquoted names. The
original gold query then runs in a read-only transaction with ``statement_timeout`` and the sandbox's
row cap; its result is compared with the conversion's by ``verify.verify_conversion``.

psycopg2 comes with ``dagster-postgres`` (a dependency of the project).
"""

from __future__ import annotations

import logging
import re
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import duckdb

from nl2sql_pipeline.dialect.postgres_server import PostgresServer
from nl2sql_pipeline.errors import Nl2SqlError
from nl2sql_pipeline.execution import QueryResult, SandboxLimits

logger = logging.getLogger(__name__)

THROWAWAY = "postgres"
"""``--verify-with postgres``: start a throwaway cluster (else the value is a ``postgresql://`` URL)."""
URL_SCHEMES: tuple[str, ...] = ("postgresql", "postgres")
BATCH_ROWS = 2000

POSTGRES_TYPES: dict[str, str] = {
    "BOOLEAN": "boolean",
    "TINYINT": "smallint",
    "UTINYINT": "smallint",
    "SMALLINT": "smallint",
    "USMALLINT": "integer",
    "INTEGER": "integer",
    "UINTEGER": "bigint",
    "BIGINT": "bigint",
    "UBIGINT": "numeric(20,0)",
    "HUGEINT": "numeric(39,0)",
    "UHUGEINT": "numeric(39,0)",
    "FLOAT": "real",
    "DOUBLE": "double precision",
    "VARCHAR": "text",
    "DATE": "date",
    "TIME": "time",
    "TIMESTAMP": "timestamp",
    "TIMESTAMP_S": "timestamp",
    "TIMESTAMP_MS": "timestamp",
    "TIMESTAMP_NS": "timestamp",
    "TIMESTAMP WITH TIME ZONE": "timestamptz",
    "TIME WITH TIME ZONE": "timetz",
    "INTERVAL": "interval",
    "BLOB": "bytea",
    "UUID": "uuid",
    "JSON": "json",
}
"""DuckDB column type -> Postgres column type (``DECIMAL(p,s)`` -> ``numeric(p,s)``; others: ``text``)."""
_READ_AS_TEXT = frozenset({"UUID", "JSON"})
"""Types read from DuckDB as their text (Postgres parses the text into the typed column)."""
_DECIMAL = re.compile(r"DECIMAL\((\d+),\s*(\d+)\)")


class PostgresVerifyError(Nl2SqlError):
    """The PostgreSQL server cannot be reached, or a database cannot be loaded into it (one line, with the fix)."""


def postgres_column_type(duckdb_type: str) -> str | None:
    """The Postgres type a DuckDB column is created with (None: no counterpart, loaded as ``text``).

    >>> [postgres_column_type(t) for t in ("BIGINT", "DECIMAL(10,2)", "VARCHAR", "INTEGER[]")]
    ['bigint', 'numeric(10,2)', 'text', None]
    """
    upper = duckdb_type.upper()
    decimal = _DECIMAL.fullmatch(upper)
    if decimal:
        return f"numeric({decimal.group(1)},{decimal.group(2)})"
    return POSTGRES_TYPES.get(upper)


def describe_url(url: str) -> str:
    """``postgresql://user:secret@host:5432/db`` -> ``postgresql://user@host:5432/db`` (no password)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{parts.username}@{host}" if parts.username else host
    if parts.port:
        netloc += f":{parts.port}"
    return f"{parts.scheme}://{netloc}{parts.path}"


def is_postgres_url(value: str) -> bool:
    """True for a ``postgresql://`` or ``postgres://`` URL."""
    return urlsplit(value).scheme in URL_SCHEMES


@dataclass
class _Loaded:
    connection: Any
    schema: str


class PostgresRunner:
    """Runs original gold queries of one database on the server (``verify.SourceEngine``)."""

    engine = "PostgreSQL"

    def __init__(self, loaded: _Loaded):
        self._loaded = loaded

    def run(self, sql: str, limits: SandboxLimits = SandboxLimits()) -> QueryResult:
        """``sql`` in a read-only transaction with ``statement_timeout`` and the row cap; never raises for bad SQL."""
        import psycopg2

        connection = self._loaded.connection
        text = sql.strip().rstrip(";").strip()
        started = time.monotonic()
        try:
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL statement_timeout = %s", (max(1, int(limits.timeout_s * 1000)),))
                cursor.execute(text)
                rows = cursor.fetchmany(limits.row_cap + 1)
                columns = [d[0] for d in cursor.description or ()]
        except psycopg2.extensions.QueryCanceledError:
            return QueryResult.failure(
                "timeout", f"PostgreSQL query exceeded {limits.timeout_s}s", (time.monotonic() - started) * 1000
            )
        except psycopg2.Error as exc:
            message = (exc.pgerror or str(exc)).strip().splitlines()[0]
            return QueryResult.failure("runtime", f"PostgreSQL: {message}", (time.monotonic() - started) * 1000)
        finally:
            connection.rollback()
        return QueryResult(
            ok=True,
            columns=columns,
            rows=[tuple(_python_value(v) for v in row) for row in rows[: limits.row_cap]],
            truncated=len(rows) > limits.row_cap,
            elapsed_ms=(time.monotonic() - started) * 1000,
        )


def _python_value(value: Any) -> Any:
    """psycopg2 values as DuckDB's Python values (``bytea`` arrives as a memoryview)."""
    return bytes(value) if isinstance(value, memoryview) else value


class PostgresVerifier:
    """A PostgreSQL server (a started throwaway cluster or a given URL) holding the loaded databases."""

    def __init__(self, dsn: str, description: str, server: PostgresServer | None = None):
        self.dsn, self.server = dsn, server
        self._databases: dict[str, _Loaded] = {}
        self.version = self._server_version()
        self.description = f"{self.version} ({description})"

    def _connect(self) -> Any:
        import psycopg2

        try:
            return psycopg2.connect(self.dsn, connect_timeout=10, application_name="nl2sql-eval gold import")
        except psycopg2.Error as exc:
            where = describe_url(self.dsn)
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise PostgresVerifyError(
                f"cannot connect to PostgreSQL at {where}: {first} (check the URL, the server and the credentials)"
            ) from exc

    def _server_version(self) -> str:
        connection = self._connect()
        try:
            with connection.cursor() as cursor:
                cursor.execute("SHOW server_version")
                (version,) = cursor.fetchone()
        finally:
            connection.close()
        return f"PostgreSQL {str(version).split()[0]}"

    def load(self, db_id: str, duckdb_path: Path) -> list[str]:
        """Load the ``main`` tables of ``duckdb_path`` into a schema of their own; the notes on what was
        loaded as text or left out. Raises ``PostgresVerifyError`` when a table cannot be loaded."""
        import psycopg2

        if db_id in self._databases:
            return []
        schema = f"nl2sql_verify_{secrets.token_hex(6)}"
        connection = self._connect()
        loaded = _Loaded(connection, schema)
        self._databases[db_id] = loaded  # dropped on close even when loading fails half-way
        try:
            notes = _copy_tables(connection, schema, duckdb_path)
            with connection.cursor() as cursor:
                cursor.execute("SET TIME ZONE 'UTC'")
            connection.commit()
            connection.set_session(readonly=True)
        except psycopg2.Error as exc:
            connection.rollback()
            message = (getattr(exc, "pgerror", None) or str(exc)).strip().splitlines()[0]
            raise PostgresVerifyError(
                f"cannot load database {db_id} ({duckdb_path}) into PostgreSQL: {message}"
            ) from exc
        logger.info("database %s loaded into PostgreSQL schema %s", db_id, schema)
        return notes

    def runner(self, db_id: str) -> PostgresRunner:
        """The runner of the originals on database ``db_id`` (``load`` it first)."""
        return PostgresRunner(self._databases[db_id])

    def close(self) -> None:
        """Drop the loaded schemas, close the connections and stop the throwaway cluster."""
        try:
            for loaded in self._databases.values():
                _drop_schema(loaded)
            self._databases.clear()
        finally:
            if self.server is not None:
                self.server.stop()


def _drop_schema(loaded: _Loaded) -> None:
    import psycopg2
    from psycopg2 import sql as pgsql

    connection = loaded.connection
    try:
        connection.rollback()
        connection.set_session(readonly=False, autocommit=True)
        with connection.cursor() as cursor:
            cursor.execute(pgsql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(pgsql.Identifier(loaded.schema)))
    except psycopg2.Error as exc:
        logger.warning("could not drop the verification schema %s: %s", loaded.schema, exc)
    finally:
        connection.close()


def _copy_tables(connection: Any, schema: str, duckdb_path: Path) -> list[str]:
    """Create the schema and each table of ``main``, insert the rows; notes on what changed on the way."""
    from psycopg2 import sql as pgsql
    from psycopg2.extras import execute_values

    notes: list[str] = []
    source = duckdb.connect(str(duckdb_path), read_only=True)
    try:
        tables = [
            str(t)
            for (t,) in source.execute(
                "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' AND NOT internal ORDER BY 1"
            ).fetchall()
        ]
        others = source.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE schema_name <> 'main' AND NOT internal"
        ).fetchone()
        if others and others[0]:
            notes.append(f"PostgreSQL: {others[0]} table(s) outside the main schema not loaded")
        with connection.cursor() as cursor:
            cursor.execute(pgsql.SQL("CREATE SCHEMA {}").format(pgsql.Identifier(schema)))
            cursor.execute(pgsql.SQL("SET search_path TO {}").format(pgsql.Identifier(schema)))
            for table in tables:
                columns = source.execute(
                    "SELECT column_name, data_type FROM duckdb_columns() "
                    "WHERE schema_name = 'main' AND table_name = ? ORDER BY column_index",
                    [table],
                ).fetchall()
                definitions, reads = [], []
                for name, data_type in columns:
                    target = postgres_column_type(str(data_type))
                    quoted = '"' + str(name).replace('"', '""') + '"'
                    if target is None:
                        notes.append(f"PostgreSQL: {table}.{name} ({data_type}) loaded as text")
                        target = "text"
                    if target == "text" or str(data_type).upper() in _READ_AS_TEXT:
                        reads.append(f"replace(CAST({quoted} AS VARCHAR), chr(0), '')")  # Postgres text has no NUL
                    else:
                        reads.append(quoted)
                    definitions.append(
                        pgsql.SQL("{} {}").format(pgsql.Identifier(str(name).lower()), pgsql.SQL(target))
                    )
                cursor.execute(
                    pgsql.SQL("CREATE TABLE {} ({})").format(
                        pgsql.Identifier(table.lower()), pgsql.SQL(", ").join(definitions)
                    )
                )
                insert = pgsql.SQL("INSERT INTO {} VALUES %s").format(pgsql.Identifier(table.lower()))
                quoted_table = '"' + table.replace('"', '""') + '"'
                result = source.execute(f"SELECT {', '.join(reads) or '*'} FROM main.{quoted_table}")
                while batch := result.fetchmany(BATCH_ROWS):
                    execute_values(cursor, insert.as_string(cursor), batch, page_size=BATCH_ROWS)
            cursor.execute("ANALYZE")
    finally:
        source.close()
    return notes


@contextmanager
def open_verifier(spec: str) -> Iterator[PostgresVerifier]:
    """``postgres``: a throwaway cluster (``PostgresServer``); a ``postgresql://`` URL: that server.

    Raises ``PostgresUnavailable`` without server binaries, ``PostgresServerError`` when the cluster does not
    start, ``PostgresVerifyError`` when the server cannot be reached, and ``ValueError`` for another ``spec``.
    """
    if spec == THROWAWAY:
        server = PostgresServer().start()
        try:
            verifier = PostgresVerifier(server.dsn, "a throwaway cluster", server)
        except BaseException:
            server.stop()
            raise
    elif is_postgres_url(spec):
        verifier = PostgresVerifier(spec, describe_url(spec))
    else:
        raise ValueError(f"{spec!r} is neither 'postgres' nor a postgresql:// URL")
    try:
        yield verifier
    finally:
        verifier.close()
